import { existsSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { AppCore } from '../../electron/app/appCore.ts';
import type { SessionId } from '../../electron/contract/ids.ts';
import { openMainDb } from '../../electron/store/mainDb.ts';
import { ensurePrivateDir, sessionPaths, type CapsemHome } from '../../electron/store/paths.ts';
import { getSession, registerSession } from '../../electron/store/registry.ts';
import { openSessionDbForWriting } from '../../electron/store/sessionDb.ts';
import { SESSION_DISK_FILE } from '../../electron/vm/image/imagePlan.ts';
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
    [
      'Claude Code without ANTHROPIC_API_KEY',
      ['--agent', 'claude'],
      {},
      1,
      'capsem: Claude Code needs ANTHROPIC_API_KEY, and it is not set: export ANTHROPIC_API_KEY=sk-ant-... in the shell you start capsem (or the app) from, then start again',
    ],
    [
      'Codex without OPENAI_API_KEY',
      ['--agent', 'codex'],
      { ANTHROPIC_API_KEY: 'sk-ant-present' },
      1,
      'capsem: Codex needs OPENAI_API_KEY, and it is not set: export OPENAI_API_KEY=sk-... in the shell you start capsem (or the app) from, then start again',
    ],
    [
      'Gemini CLI without GEMINI_API_KEY or GOOGLE_API_KEY',
      ['--agent', 'gemini'],
      {},
      1,
      'capsem: Gemini CLI needs GEMINI_API_KEY or GOOGLE_API_KEY, and it is not set: export GEMINI_API_KEY=AIza... in the shell you start capsem (or the app) from, then start again',
    ],
    [
      'a key with a line break in it',
      ['--agent', 'claude'],
      { ANTHROPIC_API_KEY: 'sk-ant-one\nsk-ant-two' },
      1,
      'capsem: ANTHROPIC_API_KEY holds control characters, which no API key has: set it to the key alone, then start again',
    ],
    [
      'an agent on the minimal image',
      ['--agent', 'codex', '--image', 'minimal'],
      { OPENAI_API_KEY: 'sk-present' },
      2,
      'capsem: Codex is in the agent image only: leave out --image minimal',
    ],
    [
      "the agent's arguments without --",
      ['--agent', 'claude', 'fix', 'it'],
      { ANTHROPIC_API_KEY: 'sk-ant-present' },
      2,
      "capsem: the agent's own arguments go after --: capsem run --agent claude -- fix it",
    ],
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
        message:
          'Gemini CLI needs GEMINI_API_KEY or GOOGLE_API_KEY, and it is not set: export GEMINI_API_KEY=AIza... in the shell you start capsem (or the app) from, then start again',
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

/**
 * What a named Claude Code session leaves on disk once it has stopped: its registry row, its disk
 * and a session.db whose session_meta names the image and the agent (never its key).
 */
function stoppedAgentSession(home: CapsemHome, name: string, agent: string): SessionId {
  const db = openMainDb(home);
  let id: SessionId;
  try {
    id = registerSession(db, { name, mode: 'vm', command: agent }).id as SessionId;
    db.prepare("UPDATE sessions SET status = 'stopped' WHERE id = ?").run(id);
  } finally {
    db.close();
  }
  const paths = sessionPaths(home, id);
  ensurePrivateDir(paths.dir);
  writeFileSync(join(paths.dir, SESSION_DISK_FILE), '');
  const sessionDb = openSessionDbForWriting(paths.dbPath);
  try {
    const meta = sessionDb.prepare('INSERT INTO session_meta (key, value) VALUES (?, ?)');
    meta.run('vm_image', 'agent');
    meta.run('vm_terminal_agent', agent);
  } finally {
    sessionDb.close();
  }
  return id;
}

function statusOf(home: CapsemHome, id: SessionId): string | undefined {
  const db = openMainDb(home);
  try {
    return getSession(db, id)?.status;
  } finally {
    db.close();
  }
}

describe('resuming a coding agent session without its key', () => {
  const home = tempHome();
  afterAll(() => home.remove());
  // No QEMU: were the key not checked first, the resume would get as far as looking for a VM.
  const NO_VM = { CAPSEM_QEMU: join(home.root, 'no-qemu-here') };

  it('capsem resume says which key the agent needs in one line, and boots nothing', async () => {
    const id = stoppedAgentSession(home, 'claude-work', 'claude');
    const r = await runCapsemAsync(home.root, ['resume', 'claude-work'], { ...NO_KEYS, ...NO_VM });
    expect(r.stderr).toBe(
      'capsem: Claude Code needs ANTHROPIC_API_KEY, and it is not set: export ANTHROPIC_API_KEY=sk-ant-... in the shell you start capsem (or the app) from, then start again\n',
    );
    expect(r.code).toBe(1);
    expect(statusOf(home, id)).toBe('stopped');
  });

  it('capsem resume of a session whose session.db is not a database says so in one line, and boots nothing', async () => {
    const id = stoppedAgentSession(home, 'garbled', 'claude');
    const { dbPath } = sessionPaths(home, id);
    writeFileSync(dbPath, 'not a database, whatever its name says '.repeat(200));
    const r = await runCapsemAsync(home.root, ['resume', 'garbled'], { ...NO_KEYS, ...NO_VM });
    expect(r.stderr).toBe(`capsem: ${dbPath} cannot be read to boot its session again: file is not a database\n`);
    expect(r.code).toBe(1);
    expect(statusOf(home, id)).toBe('stopped');
  });

  it("the app's sessions.resume answers missing_key for the agent the session ran", async () => {
    const id = stoppedAgentSession(home, 'codex-work', 'codex');
    const vmHost = new VmHost({
      home,
      backend: () => {
        throw new Error('this test boots nothing');
      },
    });
    const core = new AppCore({ home, vmHost, checkResults: true, env: { ...NO_KEYS, ANTHROPIC_API_KEY: 'sk-ant-present' } });
    try {
      await expect(core.handle('sessions.resume', { id })).rejects.toMatchObject({
        code: 'missing_key',
        message:
          'Codex needs OPENAI_API_KEY, and it is not set: export OPENAI_API_KEY=sk-... in the shell you start capsem (or the app) from, then start again',
      });
      expect(statusOf(home, id)).toBe('stopped');
    } finally {
      core.close();
      await vmHost.stopAll();
    }
  });
});
