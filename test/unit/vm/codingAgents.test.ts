import { describe, expect, it } from 'vitest';
import { agentTerminal } from '../../../electron/vm/codingAgents.ts';

// Each agent's settings make the brokered API key its way in: an agent's own sign-in (OAuth)
// would keep a token in the guest, where the broker never sees it.

const file = (program: ReturnType<typeof agentTerminal>, path: string): string => {
  const found = program.homeFiles.find((f) => f.path === path);
  if (!found) throw new Error(`no ~/${path} among ${program.homeFiles.map((f) => f.path).join(', ')}`);
  return found.content;
};

describe('coding agents sign in with the stand-in key', () => {
  it('Claude Code approves the stand-in from its environment, so it never asks to log in', () => {
    const program = agentTerminal('claude', [], { ANTHROPIC_API_KEY: 'sk-ant-api03-stand-in-0123456789abcdefghijklmn' });
    expect(program.env.ANTHROPIC_API_KEY).toBe('sk-ant-api03-stand-in-0123456789abcdefghijklmn');
    const settings = JSON.parse(file(program, '.claude.json')) as {
      customApiKeyResponses: { approved: string[] };
      hasCompletedOnboarding: boolean;
    };
    expect(settings.customApiKeyResponses.approved).toEqual(['0123456789abcdefghijklmn'.slice(-20)]);
    expect(settings.hasCompletedOnboarding).toBe(true);
  });

  it('Codex reads OPENAI_API_KEY for its provider and refuses a ChatGPT sign-in', () => {
    const program = agentTerminal('codex', [], { OPENAI_API_KEY: 'sk-proj-stand-in' });
    const config = file(program, '.codex/config.toml');
    const provider = /^model_provider = "([^"]+)"$/m.exec(config)?.[1];
    expect(provider).toBeDefined();
    const section = config.slice(config.indexOf(`[model_providers.${provider}]`));
    expect(section).toMatch(/^env_key = "OPENAI_API_KEY"$/m);
    expect(config).toMatch(/^forced_login_method = "api"$/m);
    expect(program.env.OPENAI_API_KEY).toBe('sk-proj-stand-in');
  });

  it('Gemini CLI selects and enforces its API key over a Google sign-in', () => {
    const program = agentTerminal('gemini', [], { GEMINI_API_KEY: 'AIzaStandIn' });
    const settings = JSON.parse(file(program, '.gemini/settings.json')) as {
      security: { auth: { selectedType: string; enforcedType: string } };
    };
    expect(settings.security.auth).toEqual({ selectedType: 'gemini-api-key', enforcedType: 'gemini-api-key' });
    expect(program.env.GEMINI_API_KEY).toBe('AIzaStandIn');
  });
});
