import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser, type Page } from 'playwright-core';
import { startBrowserServer, type BrowserServer } from '../../electron/app/browserServer.ts';
import { EVENTS, type EventName, type EventPayload, type HostCore } from '../../electron/contract/appContract.ts';
import type { CapsemHome } from '../../electron/store/paths.ts';

// What the renderer's browser tests share: the built renderer (rebuilt when its sources are newer),
// Debian's Chromium driven by playwright-core, a HostCore door that can also push shell events
// (app.open) down the same event path the core's own events take, and frame-time statistics.

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
export const RENDERER_OUT = join(ROOT, 'dist', 'renderer');
export const CHROMIUM = '/usr/bin/chromium';

/** Why the browser tests cannot run here, or null. */
export function chromiumMissing(): string | null {
  return existsSync(CHROMIUM) ? null : `no Chromium at ${CHROMIUM} (apt-get install chromium)`;
}

function newestMtime(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestMtime(path) : statSync(path).mtimeMs);
  }
  return newest;
}

/**
 * Builds dist/renderer with `npx vite build` when it is missing or older than its sources (the
 * renderer and the contract it imports, the Vite config, and this recipe). Returns what it did.
 */
export function ensureRendererBuilt(): string {
  const index = join(RENDERER_OUT, 'index.html');
  const sources = Math.max(
    newestMtime(join(ROOT, 'renderer')),
    newestMtime(join(ROOT, 'electron', 'contract')),
    statSync(join(ROOT, 'vite.config.ts')).mtimeMs,
    statSync(fileURLToPath(import.meta.url)).mtimeMs,
  );
  if (existsSync(index) && statSync(index).mtimeMs >= sources) return 'dist/renderer is up to date';
  const started = performance.now();
  // The bundle users get: Vite takes NODE_ENV from its environment, and vitest sets it to `test`,
  // which gave React's development build (half again as large, and slower to render).
  const built = spawnSync('npx', ['vite', 'build'], {
    cwd: ROOT,
    encoding: 'utf8',
    timeout: 120_000,
    env: { ...process.env, NODE_ENV: 'production' },
  });
  if (built.status !== 0)
    throw new Error(
      `npx vite build failed (${built.status ?? built.signal}): ${(built.stderr || built.stdout).trim().split('\n').slice(-10).join('\n')}`,
    );
  return `built dist/renderer in ${Math.round(performance.now() - started)} ms`;
}

/** The flags every browser test and benchmark starts Chromium with. */
export const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
  '--disable-dev-shm-usage',
] as const;

export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, headless: true, args: [...CHROMIUM_ARGS] });
}

/** A page the size of the app's window, in its dark scheme, whose waits fail well inside vitest's 30 s, naming their locator. */
export async function appPage(browser: Browser): Promise<Page> {
  const page = await browser.newPage({ viewport: { width: 1400, height: 800 }, colorScheme: 'dark' });
  page.setDefaultTimeout(10_000);
  return page;
}

/** The app served in browser mode and open in a Chromium page, as the browser tests drive it. */
export interface AppInChromium {
  readonly server: BrowserServer;
  readonly page: Page;
  /** Uncaught errors in the page, for the test that says there were none. */
  readonly pageErrors: string[];
  close(): Promise<void>;
}

export async function openAppInChromium(core: HostCore, home: CapsemHome, modeReason: string): Promise<AppInChromium> {
  const server = await startBrowserServer({ core, rendererDir: RENDERER_OUT, port: 0, modeReason, home });
  const browser = await launchChromium();
  const page = await appPage(browser);
  const pageErrors: string[] = [];
  page.on('pageerror', (e) => pageErrors.push(e.message));
  return {
    server,
    page,
    pageErrors,
    close: async () => {
      await browser.close();
      await server.close();
    },
  };
}

type Listener = <N extends EventName>(name: N, payload: EventPayload<N>) => void;

/**
 * The core as the browser server sees it, plus `emit`: an event pushed here reaches every
 * connected page exactly as the core's own events do (validated against the contract first).
 * The Electron shell sends `app.open` straight over IPC; browser mode has no such sender, so
 * tests use this door to deliver it.
 */
export class EventDoor implements HostCore {
  private readonly listeners = new Set<Listener>();

  constructor(private readonly core: HostCore) {}

  handle(name: string, params: unknown): Promise<unknown> {
    return this.core.handle(name, params);
  }

  subscribe(listener: Listener): () => void {
    const off = this.core.subscribe(listener);
    this.listeners.add(listener);
    return () => {
      this.listeners.delete(listener);
      off();
    };
  }

  get connections(): number {
    return this.listeners.size;
  }

  emit<N extends EventName>(name: N, payload: EventPayload<N>): void {
    const checked = EVENTS[name].parse(payload) as EventPayload<N>;
    for (const listener of this.listeners) listener(name, checked);
  }
}

export interface FrameStats {
  readonly count: number;
  readonly p50: number;
  readonly p95: number;
  readonly max: number;
  readonly over50: number;
}

export function frameStats(deltas: readonly number[]): FrameStats {
  const sorted = [...deltas].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * q))] ?? 0;
  return { count: sorted.length, p50: at(0.5), p95: at(0.95), max: sorted.at(-1) ?? 0, over50: sorted.filter((d) => d > 50).length };
}
