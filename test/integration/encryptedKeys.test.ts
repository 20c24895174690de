import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { AppCore } from '../../electron/app/appCore.ts';
import { startAppCore, type StartedCore } from '../../electron/app/appMain.ts';
import { providerKeyFindings } from '../../electron/cli/doctorCommand.ts';
import type { CallResult } from '../../electron/contract/appContract.ts';
import { runCapsemAsync } from '../helpers/runCapsem.ts';
import { testKeyCipher } from '../helpers/testKeyCipher.ts';
import { tempHome } from '../helpers/tempHome.ts';

// A key saved in the app's Settings is encrypted with the app's keychain (a real AES-256-GCM
// cipher here, standing in for safeStorage, through the same startAppCore path the shell takes).
// Processes without it never pretend there is no key: the CLI lists it as locked, a capsem run
// served by the app uses it, and one that owns CAPSEM_HOME itself refuses in one line with the fix.

type KeyList = CallResult<'keys.list'>;

const NO_KEYS = { ANTHROPIC_API_KEY: '', OPENAI_API_KEY: '', GEMINI_API_KEY: '', GOOGLE_API_KEY: '' };
const KEY = 'sk-ant-api03-saved-in-settings-0123456789abcdef';
const LOCKED = 'stored by the app, encrypted; readable only while the app runs';

describe('keys the app stores encrypted', () => {
  const home = tempHome();
  let app: StartedCore | null = null;
  afterAll(async () => {
    await app?.stop();
    home.remove();
  });

  it('are encrypted in keys.encrypted.json, and keys.list says so', async () => {
    app = await startAppCore({
      home: home.root,
      resourcesDir: null,
      cipher: testKeyCipher('a test keychain'),
      vm: {
        backend: () => {
          throw new Error('this test boots no VM');
        },
      },
    });
    await app.core.handle('keys.set', { provider: 'anthropic', key: KEY });
    const list = (await app.core.handle('keys.list', {})) as KeyList;
    expect(list.store).toBe(
      `encrypted with a test keychain in ${join(home.root, 'keys.encrypted.json')}; keys added with capsem keys in ${join(home.root, 'keys.json')} (mode 0600, readable by you alone; not encrypted)`,
    );
    expect(list.providers).toContainEqual({ id: 'anthropic', source: 'stored', variable: null });
    expect(readFileSync(join(home.root, 'keys.encrypted.json'), 'utf8')).not.toContain('saved-in-settings');
    expect(existsSync(join(home.root, 'keys.json'))).toBe(false);
  });

  it('are listed as locked by capsem keys list and capsem doctor, never as missing', async () => {
    const list = await runCapsemAsync(home.root, ['keys', 'list'], NO_KEYS);
    expect(list.code, list.stderr).toBe(0);
    expect(list.stdout).toMatch(new RegExp(`^anthropic +${LOCKED}$`, 'm'));
    expect(list.stdout).toMatch(/^openai +no key$/m);
    expect(list.stdout).toContain(
      `keys stored by the app are encrypted in ${join(home.root, 'keys.encrypted.json')}, readable only while the app runs`,
    );
    expect(list.stdout + list.stderr).not.toContain('saved-in-settings');
    expect(providerKeyFindings(home, NO_KEYS).find((f) => f.check === 'anthropic key')).toMatchObject({
      level: 'warn',
      detail: expect.stringContaining(LOCKED),
      fix: expect.stringContaining('start the Capsem app'),
    });
  });

  it('serve capsem run --agent claude while the app owns CAPSEM_HOME: the app reads the key', async () => {
    const run = await runCapsemAsync(home.root, ['run', '--agent', 'claude'], NO_KEYS, { timeoutMs: 30_000 });
    // Past the key check: the app went on to start a VM, which this test's backend refuses.
    expect(run.stderr).toContain('this test boots no VM');
    expect(run.stderr).not.toContain('ANTHROPIC_API_KEY');
  });

  it('are shown as locked in browser mode, which has no keychain', async () => {
    const core = new AppCore({ home, checkResults: true, env: NO_KEYS });
    try {
      expect(((await core.handle('keys.list', {})) as KeyList).providers).toContainEqual({
        id: 'anthropic',
        source: 'locked',
        variable: null,
      });
    } finally {
      core.close();
    }
  });

  it('make capsem run --agent claude refuse in one line with the fix once the app has quit', async () => {
    await app!.stop();
    app = null;
    const run = await runCapsemAsync(
      home.root,
      ['run', '--agent', 'claude'],
      { ...NO_KEYS, CAPSEM_QEMU: join(home.root, 'no-qemu-here') },
      { timeoutMs: 30_000 },
    );
    expect(run.stderr).toBe(
      `capsem: Claude Code needs ANTHROPIC_API_KEY: it is not set here, and the anthropic key is ${LOCKED}: start the Capsem app and run this again, or export ANTHROPIC_API_KEY=sk-ant-..., or store it with capsem keys set anthropic\n`,
    );
    expect(run.code).not.toBe(0);
  });

  it('are named by capsem record, whose session goes without them, so a refused request is no mystery', async () => {
    const run = await runCapsemAsync(home.root, ['record', '--', 'true'], NO_KEYS, { timeoutMs: 30_000 });
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).toContain(
      `capsem record: the anthropic key is ${LOCKED}, so this session has none for anthropic: export it, or store it with capsem keys set anthropic\n`,
    );
    expect(run.stderr).not.toContain('the openai key');
  });
});
