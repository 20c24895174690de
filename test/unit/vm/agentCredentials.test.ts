import { describe, expect, it } from 'vitest';
import { agentCredentials, agentStandIn, MissingAgentKeyError } from '../../../electron/vm/agentCredentials.ts';
import { agentTerminal } from '../../../electron/vm/codingAgents.ts';

// What a coding agent's terminal is given: the session's stand-in under the name the agent reads,
// never the host's key, and nothing at all when the session's proxy holds no key for it.

describe('agentStandIn', () => {
  it("gives Gemini CLI the stand-in under GEMINI_API_KEY when the host's key was GOOGLE_API_KEY", () => {
    expect(agentStandIn('gemini', { GEMINI_API_KEY: 'AIzaStandIn', GOOGLE_API_KEY: 'AIzaStandIn' })).toEqual({ GEMINI_API_KEY: 'AIzaStandIn' });
  });

  it('refuses to start an agent whose key the proxy does not hold, saying how to give it one', () => {
    expect(() => agentStandIn('codex', { ANTHROPIC_API_KEY: 'sk-ant-api03-standin' })).toThrow(MissingAgentKeyError);
    expect(() => agentStandIn('codex', {})).toThrow("Codex cannot start: the session's proxy holds no key for it, so it has no stand-in to give the agent: export OPENAI_API_KEY=sk-... (or add it with capsem keys), then start again");
  });

  it("puts the stand-in, not the host's key, in Claude Code's environment and approved-key setting", () => {
    const real = agentCredentials('claude', { ANTHROPIC_API_KEY: 'sk-ant-api03-the-real-key-0123456789abcdefghij' });
    const program = agentTerminal('claude', ['-p', 'hi'], agentStandIn('claude', { ANTHROPIC_API_KEY: 'sk-ant-api03-a-stand-in-ZYXWVUTSRQPONMLKJIHGFE' }));
    expect(program.env.ANTHROPIC_API_KEY).toBe('sk-ant-api03-a-stand-in-ZYXWVUTSRQPONMLKJIHGFE');
    const files = program.homeFiles.map((f) => f.content).join('\n');
    expect(files).toContain('ZYXWVUTSRQPONMLKJIHGFE'.slice(-20));
    expect(files).not.toContain(real.ANTHROPIC_API_KEY!.slice(-20));
  });
});
