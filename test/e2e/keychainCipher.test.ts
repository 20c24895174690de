import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { electronRuntime } from '../helpers/electronRuntime.ts';

// The shell's keychain cipher over the real safeStorage of the Electron runtime: a key it
// encrypts comes back, and its ciphertext does not hold the key; or, where this system's keyring
// is unusable (basic_text, none), it gives no cipher and says why. Skips, saying what is missing,
// where there is no Electron binary or no display.
const root = fileURLToPath(new URL('../../', import.meta.url));
const runtime = electronRuntime();
const noDisplay = process.platform === 'linux' && !process.env.DISPLAY && !process.env.WAYLAND_DISPLAY;
const missing = !runtime.ok ? runtime.why : noDisplay ? 'no display for Electron (DISPLAY and WAYLAND_DISPLAY are unset)' : null;
const dir = mkdtempSync(join(tmpdir(), 'capsem-keychain-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const KEY = 'sk-ant-api03-runtime-check-0123456789abcdef';
const MAIN = `const { app, safeStorage } = require('electron');
const { keychainCipher } = require('./keychainCipher.cjs');
app.whenReady().then(() => {
  const choice = keychainCipher(safeStorage, process.platform);
  const out = { note: choice.note, cipher: choice.cipher && choice.cipher.name };
  if (choice.cipher) {
    const sealed = choice.cipher.encrypt(${JSON.stringify(KEY)});
    out.roundTrip = choice.cipher.decrypt(sealed) === ${JSON.stringify(KEY)};
    out.keyInCiphertext = sealed.includes(Buffer.from(${JSON.stringify(KEY)}));
  }
  process.stdout.write(JSON.stringify(out) + '\\n');
  app.quit();
});
`;

describe("the keychain cipher in Electron's runtime", () => {
  it('encrypts with safeStorage, or says why keys.json is used', async (ctx) => {
    if (missing) {
      console.log(`keychain cipher: skipped, ${missing}`);
      ctx.skip(missing);
    }
    const { build } = await import('esbuild');
    await build({
      absWorkingDir: root,
      entryPoints: ['electron/shell/keychainCipher.ts'],
      outfile: join(dir, 'keychainCipher.cjs'),
      bundle: true,
      format: 'cjs',
      platform: 'node',
      logLevel: 'silent',
    });
    writeFileSync(join(dir, 'main.cjs'), MAIN);
    const run = spawnSync((runtime as { binary: string }).binary, [join(dir, 'main.cjs')], { cwd: dir, encoding: 'utf8', timeout: 60_000 });
    expect(run.status, run.stderr).toBe(0);
    const out = JSON.parse(run.stdout.trim().split('\n').at(-1)!) as {
      note: string;
      cipher: string | null;
      roundTrip?: boolean;
      keyInCiphertext?: boolean;
    };
    if (out.cipher === null) expect(out.note).toContain('keys.json');
    else expect(out).toMatchObject({ cipher: expect.stringContaining('Electron safeStorage'), roundTrip: true, keyInCiphertext: false });
  }, 90_000);
});
