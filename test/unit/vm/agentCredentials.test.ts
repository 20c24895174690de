import { describe, expect, it } from 'vitest';
import { HomeKeyStore } from '../../../electron/credentials/homeKeyStore.ts';
import { agentCredentials, agentStandIn, MissingAgentKeyError } from '../../../electron/vm/agentCredentials.ts';
import { agentTerminal } from '../../../electron/vm/codingAgents.ts';
import { testKeyCipher } from '../../helpers/testKeyCipher.ts';
import { tempHome } from '../../helpers/tempHome.ts';

// What a coding agent's terminal is given: the session's stand-in under the name the agent reads,
// never the host's key, and nothing at all when the session's proxy holds no key for it.

describe('agentStandIn', () => {
  it("gives Gemini CLI the stand-in under GEMINI_API_KEY when the host's key was GOOGLE_API_KEY", () => {
    expect(agentStandIn('gemini', { GEMINI_API_KEY: 'AIzaStandIn', GOOGLE_API_KEY: 'AIzaStandIn' })).toEqual({
      GEMINI_API_KEY: 'AIzaStandIn',
    });
  });

  it('refuses to start an agent whose key the proxy does not hold, saying how to give it one', () => {
    expect(() => agentStandIn('codex', { ANTHROPIC_API_KEY: 'sk-ant-api03-standin' })).toThrow(MissingAgentKeyError);
    expect(() => agentStandIn('codex', {})).toThrow(
      "Codex cannot start: the session's proxy holds no key for it, so it has no stand-in to give the agent: export OPENAI_API_KEY=sk-... (or add it with capsem keys), then start again",
    );
  });

  it("puts the stand-in, not the host's key, in Claude Code's environment and approved-key setting", () => {
    const real = agentCredentials('claude', { ANTHROPIC_API_KEY: 'sk-ant-api03-the-real-key-0123456789abcdefghij' });
    const program = agentTerminal(
      'claude',
      ['-p', 'hi'],
      agentStandIn('claude', { ANTHROPIC_API_KEY: 'sk-ant-api03-a-stand-in-ZYXWVUTSRQPONMLKJIHGFE' }),
    );
    expect(program.env.ANTHROPIC_API_KEY).toBe('sk-ant-api03-a-stand-in-ZYXWVUTSRQPONMLKJIHGFE');
    const files = program.homeFiles.map((f) => f.content).join('\n');
    expect(files).toContain('ZYXWVUTSRQPONMLKJIHGFE'.slice(-20));
    expect(files).not.toContain(real.ANTHROPIC_API_KEY!.slice(-20));
  });
});

describe('agentCredentials with a key only the app can read', () => {
  it('leaves it to the owner in a client, refuses with the fix where the broker cannot read it, and takes it where it can', () => {
    const home = tempHome();
    try {
      const cipher = testKeyCipher();
      new HomeKeyStore(home, cipher).set('anthropic', 'sk-ant-api03-stored-by-the-app-0123456789');
      const cliStore = new HomeKeyStore(home);
      expect(agentCredentials('claude', {}, cliStore, 'leave-to-owner')).toEqual({});
      expect(() => agentCredentials('claude', {}, cliStore)).toThrow(
        'Claude Code needs ANTHROPIC_API_KEY: it is not set here, and the anthropic key is stored by the app, encrypted; readable only while the app runs: start the Capsem app and run this again, or export ANTHROPIC_API_KEY=sk-ant-..., or store it with capsem keys set anthropic',
      );
      expect(agentCredentials('claude', {}, new HomeKeyStore(home, cipher))).toEqual({});
      // A key nobody stored is still missing for a client: locked is not a way round it.
      expect(() => agentCredentials('codex', {}, cliStore, 'leave-to-owner')).toThrow('Codex needs OPENAI_API_KEY, and it is not set');
    } finally {
      home.remove();
    }
  });
});
