import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll } from 'vitest';
import type { AppCore } from '../../electron/app/appCore.ts';
import { startBrowserServer, type BrowserServer } from '../../electron/app/browserServer.ts';
import type { CapsemHome } from '../../electron/store/paths.ts';
import { ensureRendererBuilt, launchChromium, RENDERER_OUT } from './browserHarness.ts';

// One Chromium page for a Settings e2e file, and browser-mode servers over the cores it makes,
// closed with the homes it was given when the file ends.

export interface SettingsBrowser {
  /** The page; set once the file's beforeAll has run. */
  readonly page: Page;
  /** Serves `core` in browser mode over `home`; returns the URL to open. */
  serve(core: AppCore, home: CapsemHome): Promise<string>;
}

export function settingsBrowser(missing: string | null, homes: readonly { remove(): void }[]): SettingsBrowser {
  let browser: Browser | undefined;
  let page: Page | undefined;
  const servers: { core: AppCore; server: BrowserServer }[] = [];
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
    for (const home of homes) home.remove();
  });
  return {
    get page() {
      return page!;
    },
    async serve(core, home) {
      const server = await startBrowserServer({ core, rendererDir: RENDERER_OUT, port: 0, modeReason: 'settings e2e test', home });
      servers.push({ core, server });
      return server.url;
    },
  };
}
