import { existsSync, readdirSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { AppCore } from '../../electron/app/appCore.ts';
import { VmHost } from '../../electron/vm/vmHost.ts';
import { HostAgentBackend } from '../helpers/hostAgentBackend.ts';
import { runCapsemAsync, USER_FOLDER } from '../helpers/runCapsem.ts';
import { tempHome } from '../helpers/tempHome.ts';

// Starting a coding agent with what cannot work: the CLI and the app both say what is wrong and
// how to fix it in one line, and nothing is registered or left under CAPSEM_HOME. None of these
// reach a VM, so they run everywhere.

const NO_KEYS = { ANTHROPIC_API_KEY: '', OPENAI_API_KEY: '', GEMINI_API_KEY: '', GOOGLE_API_KEY: '' };

describe('capsem run --agent refuses what cannot start, before any session exists', () => {
  const home = tempHome();
  afterAll(() => home.remove());

  const expectNothingStarted = async () => {
    const list = await runCapsemAsync(home.root, ['list', '--json']);
    expect(JSON.parse(list.stdout)).toEqual([]);
    expect(existsSync(home.sessionsRunDir) ? readdirSync(home.sessionsRunDir) : []).toEqual([]);
  };

  it.each([
    ['an unknown agent', ['--agent', 'copilot'], {}, 2, 'capsem: --agent takes claude, codex, gemini, not "copilot"'],
    ['Claude Code without ANTHROPIC_API_KEY', ['--agent', 'claude'], {}, 1, 'capsem: Claude Code needs ANTHROPIC_API_KEY, and it is not set: export ANTHROPIC_API_KEY=sk-ant-... in the shell you start capsem (or the app) from, then start again'],
    ['Codex without OPENAI_API_KEY', ['--agent', 'codex'], { ANTHROPIC_API_KEY: 'sk-ant-present' }, 1, 'capsem: Codex needs OPENAI_API_KEY, and it is not set: export OPENAI_API_KEY=sk-... in the shell you start capsem (or the app) from, then start again'],
    ['Gemini CLI without GEMINI_API_KEY or GOOGLE_API_KEY', ['--agent', 'gemini'], {}, 1, 'capsem: Gemini CLI needs GEMINI_API_KEY or GOOGLE_API_KEY, and it is not set: export GEMINI_API_KEY=AIza... in the shell you start capsem (or the app) from, then start again'],
    ['a key with a line break in it', ['--agent', 'claude'], { ANTHROPIC_API_KEY: 'sk-ant-one\nsk-ant-two' }, 1, 'capsem: ANTHROPIC_API_KEY holds control characters, which no API key has: set it to the key alone, then start again'],
    ['an agent on the minimal image', ['--agent', 'codex', '--image', 'minimal'], { OPENAI_API_KEY: 'sk-present' }, 2, 'capsem: Codex is in the agent image only: leave out --image minimal'],
    ["the agent's arguments without --", ['--agent', 'claude', 'fix', 'it'], { ANTHROPIC_API_KEY: 'sk-ant-present' }, 2, "capsem: the agent's own arguments go after --: capsem run --agent claude -- fix it"],
  ] as const)('refuses %s with one line saying what to do', async (_what, args, env, code, message) => {
    const r = await runCapsemAsync(home.root, ['run', ...args], { ...NO_KEYS, ...env });
    expect(r.stderr).toBe(`${message}\n`);
    expect(r.code).toBe(code);
    expect(r.stdout).toBe('');
    await expectNothingStarted();
  });

  it('names --agent in its help', async () => {
    const r = await runCapsemAsync(home.root, ['run', '--help']);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('capsem run --agent claude|codex|gemini [--name N] [--workspace DIR] [-- AGENT_ARGS...]');
  });
});

describe("the app's sessions.start with an agent", () => {
  const home = tempHome();
  const vmHost = new VmHost({ home, backend: () => new HostAgentBackend(USER_FOLDER) });
  afterAll(async () => {
    await vmHost.stopAll();
    home.remove();
  });

  it('answers missing_key with the fix when the app has no key for it, and lists no session', async () => {
    const core = new AppCore({ home, vmHost, checkResults: true, env: NO_KEYS });
    try {
      await expect(core.handle('sessions.start', { name: 'needs-key', image: 'agent', agent: 'gemini' })).rejects.toMatchObject({
        code: 'missing_key',
        message: 'Gemini CLI needs GEMINI_API_KEY or GOOGLE_API_KEY, and it is not set: export GEMINI_API_KEY=AIza... in the shell you start capsem (or the app) from, then start again',
      });
      expect(await core.handle('sessions.list', {})).toEqual([]);
    } finally {
      core.close();
    }
  });

  it('refuses an agent on the minimal image as bad_params, and lists no session', async () => {
    const core = new AppCore({ home, vmHost, checkResults: true, env: { ...NO_KEYS, OPENAI_API_KEY: 'sk-present' } });
    try {
      await expect(core.handle('sessions.start', { name: null, image: 'minimal', agent: 'codex' })).rejects.toMatchObject({
        code: 'bad_params',
        message: 'Codex is in the agent image only, not the minimal image: start it on the agent image',
      });
      expect(await core.handle('sessions.list', {})).toEqual([]);
    } finally {
      core.close();
    }
  });
});
