import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AppCore } from '../../electron/app/appCore.ts';
import { HomeKeyStore } from '../../electron/credentials/homeKeyStore.ts';
import { startBrowserServer, type BrowserServer } from '../../electron/app/browserServer.ts';
import { chromiumMissing, ensureRendererBuilt, launchChromium, RENDERER_OUT } from '../helpers/browserHarness.ts';
import { tempHome } from '../helpers/tempHome.ts';
import { testKeyCipher } from '../helpers/testKeyCipher.ts';

// Settings → Keys in the real renderer (browser mode, Chromium driven by Playwright) over the real
// core: a key is added, replaced and removed per provider, the view says where keys are kept
// (CAPSEM_HOME/keys.json, 0600, in browser mode) and where each provider's key comes from, and the
// key typed is never shown again.

const missing = chromiumMissing();
const home = tempHome();
const FIRST = 'sk-ant-api03-typed-in-settings-0123456789';
const SECOND = 'sk-ant-api03-replaced-in-settings-9876543210';
let core: AppCore;
let server: BrowserServer;
let browser: Browser;
let page: Page;

beforeAll(async () => {
  if (missing) return;
  ensureRendererBuilt();
  core = new AppCore({
    home,
    checkResults: true,
    env: { ANTHROPIC_API_KEY: '', OPENAI_API_KEY: 'sk-from-the-environment-0123', GEMINI_API_KEY: '', GOOGLE_API_KEY: '' },
  });
  server = await startBrowserServer({ core, rendererDir: RENDERER_OUT, port: 0, modeReason: 'settings e2e test', home });
  browser = await launchChromium();
  page = await browser.newPage({ viewport: { width: 1200, height: 700 } });
  page.setDefaultTimeout(10_000);
}, 180_000);

afterAll(async () => {
  await browser?.close();
  await server?.close();
  core?.close();
  home.remove();
});

describe.skipIf(missing !== null)(`Settings → Keys in browser mode${missing ? ` (skipped: ${missing})` : ''}`, () => {
  it('adds, replaces and removes a provider key, says where it is kept, and never shows it', async () => {
    await page.goto(server.url);
    await page.getByTestId('tab-settings').click();
    await expect
      .poll(() => page.getByTestId('keys-store').textContent())
      .toBe(`${join(home.root, 'keys.json')} (mode 0600, readable by you alone; not encrypted)`);
    const row = (provider: string) => page.locator(`[data-testid=key-row][data-provider=${provider}]`);
    expect(await row('openai').getByTestId('key-source').textContent()).toBe('from OPENAI_API_KEY (wins over a stored key)');
    expect(await row('anthropic').getByTestId('key-source').textContent()).toBe('no key');

    await row('anthropic').getByTestId('key-input').fill(FIRST);
    await row('anthropic').getByTestId('key-save').click();
    await expect.poll(() => row('anthropic').getByTestId('key-source').textContent()).toBe('stored');
    await expect.poll(() => row('anthropic').getByTestId('key-input').inputValue()).toBe('');
    expect(statSync(join(home.root, 'keys.json')).mode & 0o777).toBe(0o600);
    expect(readFileSync(join(home.root, 'keys.json'), 'utf8')).toContain(FIRST);

    await row('anthropic').getByTestId('key-input').fill(SECOND);
    expect(await row('anthropic').getByTestId('key-save').textContent()).toBe('Replace');
    await row('anthropic').getByTestId('key-save').click();
    await expect.poll(() => row('anthropic').getByTestId('key-input').inputValue()).toBe('');
    expect(readFileSync(join(home.root, 'keys.json'), 'utf8')).toContain(SECOND);
    expect(await page.content()).not.toContain('in-settings');

    await row('anthropic').getByTestId('key-input').fill('not a key');
    await row('anthropic').getByTestId('key-save').click();
    await expect
      .poll(() => page.getByTestId('keys-problem').textContent())
      .toBe('a key is 8 to 4096 printable characters with no spaces; this is not one');

    await row('anthropic').getByTestId('key-remove').click();
    await expect.poll(() => row('anthropic').getByTestId('key-source').textContent()).toBe('no key');
    expect(readFileSync(join(home.root, 'keys.json'), 'utf8')).not.toContain('in-settings');
  }, 60_000);

  it('shows a key the desktop app stored encrypted as readable only while the app runs, and removes it', async () => {
    new HomeKeyStore(home, testKeyCipher()).set('gemini', 'AIzaSy-stored-by-the-desktop-app-0123');
    await page.reload();
    await page.getByTestId('tab-settings').click();
    const row = page.locator('[data-testid=key-row][data-provider=gemini]');
    await expect
      .poll(() => row.getByTestId('key-source').textContent())
      .toBe('stored by the desktop app, encrypted; readable only while the app runs');
    expect(await page.getByTestId('keys-store').textContent()).toContain(
      `keys stored by the app are encrypted in ${join(home.root, 'keys.encrypted.json')}, readable only while the app runs`,
    );
    expect(await row.getByTestId('key-save').textContent()).toBe('Replace');
    await row.getByTestId('key-remove').click();
    await expect.poll(() => row.getByTestId('key-source').textContent()).toBe('no key');
  }, 60_000);
});
