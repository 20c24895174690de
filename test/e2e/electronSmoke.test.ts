import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { _electron, type ElectronApplication, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it, type TestContext } from 'vitest';
import { electronRuntime } from '../helpers/electronRuntime.ts';

// The real app in the real Electron runtime, driven by Playwright: the window loads from
// capsem://app/, window.capsem is the preload's API and nothing of Node leaks into the page, a
// call reaches the core, and the page cannot leave or reach the network. It needs the Electron
// binary, which `npm i electron` downloads from GitHub; where that download is impossible the
// tests skip and say so.
const root = fileURLToPath(new URL('../../', import.meta.url));

const runtime = electronRuntime();
const needsRuntime = (ctx: TestContext): void => {
  if (!runtime.ok) ctx.skip(runtime.why);
};

let app: ElectronApplication | null = null;
let page: Page | null = null;
const home = mkdtempSync(join(tmpdir(), 'capsem-e2e-home-'));

beforeAll(async () => {
  if (!runtime.ok) {
    console.log(`electron smoke: skipped, ${runtime.why}`);
    return;
  }
  const built = spawnSync(process.execPath, [join(root, 'scripts', 'build-shell.mjs')], { cwd: root, encoding: 'utf8' });
  if (built.status !== 0) throw new Error(`build:shell failed: ${built.stderr}`);
  app = await _electron.launch({
    executablePath: runtime.binary,
    args: [root],
    cwd: root,
    env: { ...process.env, CAPSEM_HOME: home },
    timeout: 60_000,
  });
  page = await app.firstWindow();
  await page.waitForLoadState('domcontentloaded');
}, 120_000);

afterAll(async () => {
  await app?.close();
  rmSync(home, { recursive: true, force: true });
});

describe('the Electron app', () => {
  it('loads the renderer from capsem://app/', (ctx) => {
    needsRuntime(ctx);
    expect(page!.url()).toBe('capsem://app/index.html');
  });

  it('exposes window.capsem and no Node to the page', async (ctx) => {
    needsRuntime(ctx);
    const seen = await page!.evaluate(() => {
      const g = globalThis as unknown as Record<string, unknown>;
      const api = g.capsem as { mode: unknown } | undefined;
      return {
        keys: api ? Object.keys(api).sort() : null,
        mode: api?.mode,
        require: typeof g.require,
        process: typeof g.process,
        module: typeof g.module,
      };
    });
    expect(seen).toEqual({
      keys: ['call', 'mode', 'on'],
      mode: { kind: 'electron' },
      require: 'undefined',
      process: 'undefined',
      module: 'undefined',
    });
  });

  it('reaches the core over IPC', async (ctx) => {
    needsRuntime(ctx);
    const list = await page!.evaluate(() =>
      (globalThis as unknown as { capsem: { call(n: string, p: unknown): Promise<unknown> } }).capsem.call('sessions.list', {}),
    );
    expect(Array.isArray(list)).toBe(true);
  });

  it('cannot navigate away, open windows or reach the network', async (ctx) => {
    needsRuntime(ctx);
    const outcome = await page!.evaluate(async () => {
      const popup = window.open('https://example.com/');
      let fetched = 'blocked';
      try {
        await fetch('https://example.com/');
        fetched = 'reached';
      } catch {
        // CSP connect-src and the session's request filter both refuse it.
      }
      return { popup: popup === null, fetched };
    });
    expect(outcome).toEqual({ popup: true, fetched: 'blocked' });
    await page!.evaluate(() => {
      window.location.href = 'https://example.com/';
    });
    await page!.waitForTimeout(500);
    expect(page!.url()).toBe('capsem://app/index.html');
    expect(app!.windows()).toHaveLength(1);
  });
});
