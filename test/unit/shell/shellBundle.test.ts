import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

// The built shell bundle, run under plain Node with a stand-in electron (fixtures/runShellBundle.mjs):
// esbuild's output loads, finds the real core, and the core owns and releases CAPSEM_HOME.
const root = fileURLToPath(new URL('../../../', import.meta.url));
const home = mkdtempSync(join(tmpdir(), 'capsem-shell-home-'));
afterAll(() => {
  rmSync(home, { recursive: true, force: true });
});

describe('the shell bundle', () => {
  it('builds, starts the real core, answers a call and stops the core on quit', async () => {
    const { build } = await import('esbuild');
    // The bundle finds the core at <bundle>/../../electron/app/appMain.ts, so it is built two
    // levels below the checkout, as dist/shell/ is (a folder of its own, to leave dist/shell alone).
    const bundle = join(root, 'dist', 'shell-test', 'main.cjs');
    rmSync(join(root, 'dist', 'shell-test'), { recursive: true, force: true });
    await build({
      absWorkingDir: root,
      entryPoints: ['electron/shell/main.ts'],
      outfile: bundle,
      bundle: true,
      format: 'cjs',
      platform: 'node',
      target: 'node20',
      external: ['electron', 'tsx', 'tsx/*'],
      logLevel: 'silent',
    });
    try {
      const run = spawnSync(process.execPath, [fileURLToPath(new URL('./fixtures/runShellBundle.mjs', import.meta.url)), bundle], {
        cwd: tmpdir(),
        env: { ...process.env, CAPSEM_HOME: home },
        encoding: 'utf8',
        timeout: 60_000,
      });
      const lines = run.stdout
        .trim()
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as Record<string, unknown>);
      expect(run.status, run.stderr).toBe(0);
      expect(lines).toEqual([
        { list: { ok: true, result: [] } },
        { badParams: { ok: false, error: { code: 'bad_params', message: expect.stringMatching(/session id/) } } },
        { missing: 404, csp: expect.stringMatching(/script-src 'self'/) },
        { quitHeld: true },
        { quit: true },
      ]);
      expect(existsSync(join(home, 'run'))).toBe(true);
    } finally {
      rmSync(join(root, 'dist', 'shell-test'), { recursive: true, force: true });
    }
  }, 90_000);
});
