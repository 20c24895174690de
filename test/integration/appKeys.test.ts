import { statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { AppCore } from '../../electron/app/appCore.ts';
import { runCapsemAsync } from '../helpers/runCapsem.ts';
import { tempHome } from '../helpers/tempHome.ts';

// The window's calls behind Settings → Keys: add, replace and remove a provider's key, and say
// where each provider's key comes from and where stored keys are kept, never showing a key. The
// keys it stores are the ones `capsem keys` and new sessions' brokers read.

const NO_KEYS = { ANTHROPIC_API_KEY: '', OPENAI_API_KEY: '', GEMINI_API_KEY: '', GOOGLE_API_KEY: '' };

describe('Settings keys calls (keys.list, keys.set, keys.remove)', () => {
  const home = tempHome();
  afterAll(() => home.remove());

  it('adds, replaces and removes a stored key, says where keys come from and are kept, and never answers with a key', async () => {
    const core = new AppCore({ home, checkResults: true, env: { ...NO_KEYS, OPENAI_API_KEY: 'sk-from-the-environment-0123' } });
    try {
      const before = await core.handle('keys.list', {});
      expect(before).toMatchObject({
        store: `${join(home.root, 'keys.json')} (mode 0600, readable by you alone; not encrypted)`,
        providers: expect.arrayContaining([
          { id: 'anthropic', source: 'none', variable: null },
          { id: 'openai', source: 'env', variable: 'OPENAI_API_KEY' },
        ]),
      });
      const first = 'sk-ant-api03-first-stored-key-0123456789';
      const second = 'sk-ant-api03-second-stored-key-9876543210';
      expect(await core.handle('keys.set', { provider: 'anthropic', key: first })).toEqual({});
      expect(await core.handle('keys.set', { provider: 'anthropic', key: `  ${second}\n` })).toEqual({});
      expect(statSync(join(home.root, 'keys.json')).mode & 0o777).toBe(0o600);
      const after = await core.handle('keys.list', {});
      expect(after).toMatchObject({ providers: expect.arrayContaining([{ id: 'anthropic', source: 'stored', variable: null }]) });
      expect(JSON.stringify(after)).not.toContain('stored-key');
      // The CLI reads the same store.
      const cli = await runCapsemAsync(home.root, ['keys', 'list'], NO_KEYS);
      expect(cli.stdout).toMatch(/^anthropic\s+stored$/m);

      await expect(core.handle('keys.set', { provider: 'anthropic', key: 'has a space in it' })).rejects.toMatchObject({
        code: 'bad_params',
        message: 'a key is 8 to 4096 printable characters with no spaces; this is not one',
      });
      await expect(core.handle('keys.set', { provider: 'nosuch', key: second })).rejects.toMatchObject({
        code: 'not_found',
        message: expect.stringContaining('no provider "nosuch": one of anthropic, openai, gemini'),
      });
      expect(await core.handle('keys.remove', { provider: 'anthropic' })).toEqual({ removed: true });
      expect(await core.handle('keys.remove', { provider: 'anthropic' })).toEqual({ removed: false });
      expect(await core.handle('keys.list', {})).toMatchObject({
        providers: expect.arrayContaining([{ id: 'anthropic', source: 'none', variable: null }]),
      });
    } finally {
      core.close();
    }
  });
});
