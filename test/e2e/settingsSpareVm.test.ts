import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AppCore } from '../../electron/app/appCore.ts';
import { startBrowserServer, type BrowserServer } from '../../electron/app/browserServer.ts';
import { chromiumMissing, ensureRendererBuilt, launchChromium, RENDERER_OUT } from '../helpers/browserHarness.ts';
import { tempHome } from '../helpers/tempHome.ts';

// Settings → Start in the real renderer (browser mode, Chromium driven by Playwright) over the real
// core: the "VM booted ahead" checkbox starts on, turning it off and on again is kept in
// CAPSEM_HOME/settings.json, and a run started with the spare forced off says so.

const missing = chromiumMissing();
const home = tempHome();
const forcedHome = tempHome();
const FORCED = 'off for this run: the app was started with --no-spare-vm';
let browser: Browser;
let page: Page;
const servers: { core: AppCore; server: BrowserServer }[] = [];

async function serve(core: AppCore, h: typeof home): Promise<string> {
  const server = await startBrowserServer({ core, rendererDir: RENDERER_OUT, port: 0, modeReason: 'settings e2e test', home: h });
  servers.push({ core, server });
  return server.url;
}

beforeAll(async () => {
  if (missing) return;
  ensureRendererBuilt();
  browser = await launchChromium();
  page = await browser.newPage({ viewport: { width: 1200, height: 700 } });
  page.setDefaultTimeout(10_000);
}, 180_000);

afterAll(async () => {
  await browser?.close();
  for (const { core, server } of servers) {
    await server.close();
    core.close();
  }
  home.remove();
  forcedHome.remove();
});

const settingsFile = (h: typeof home): unknown => JSON.parse(readFileSync(join(h.root, 'settings.json'), 'utf8'));

describe.skipIf(missing !== null)(`Settings → Start in browser mode${missing ? ` (skipped: ${missing})` : ''}`, () => {
  it('turns the VM booted ahead off and on, kept in settings.json', async () => {
    await page.goto(await serve(new AppCore({ home, checkResults: true }), home));
    await page.getByTestId('tab-settings').click();
    const box = page.getByTestId('spare-vm');
    await expect.poll(() => box.isChecked()).toBe(true);
    expect(await box.isEnabled()).toBe(true);
    expect(await page.getByTestId('spare-vm-off').count()).toBe(0);

    await box.uncheck();
    await expect.poll(() => box.isChecked()).toBe(false);
    expect(settingsFile(home)).toMatchObject({ spareVm: false });
    await page.reload();
    await page.getByTestId('tab-settings').click();
    await expect.poll(() => page.getByTestId('spare-vm').isChecked()).toBe(false);

    await page.getByTestId('spare-vm').check();
    await expect.poll(() => page.getByTestId('spare-vm').isChecked()).toBe(true);
    expect(settingsFile(home)).toMatchObject({ spareVm: true });
  }, 60_000);

  it('says when a flag has turned it off for this run', async () => {
    await page.goto(await serve(new AppCore({ home: forcedHome, checkResults: true, spareVmOff: FORCED }), forcedHome));
    await page.getByTestId('tab-settings').click();
    await expect.poll(() => page.getByTestId('spare-vm-off').textContent()).toBe(FORCED);
  }, 60_000);
});
