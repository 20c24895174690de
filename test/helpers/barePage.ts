import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import WebSocket from 'ws';
import { CHROMIUM, CHROMIUM_ARGS } from './browserHarness.ts';

// A Chromium page driven over a bare DevTools socket that only evaluates scripts (the Runtime
// domain, which needs no enabling). Playwright enables the Network domain on every page, and
// with it Chromium copies each WebSocket frame into the protocol on the page's main thread: a
// 5 MB frame held that thread some 300 ms after it arrived (measured beside a page with no
// DevTools attached: 1-4 ms). Figures about what the window does with a large answer are taken
// here, where nothing but the page pays for it.

interface Pending {
  resolve: (value: unknown) => void;
  reject: (error: Error) => void;
}

export class BarePage {
  private next = 0;
  private readonly pending = new Map<number, Pending>();

  private constructor(
    private readonly chromium: ChildProcess,
    private readonly socket: WebSocket,
    private readonly profile: string,
  ) {
    socket.on('message', (data) => {
      const message = JSON.parse(String(data)) as {
        id?: number;
        result?: { result?: { value?: unknown }; exceptionDetails?: { text: string; exception?: { description?: string } } };
        error?: { message: string };
      };
      const waiting = message.id !== undefined ? this.pending.get(message.id) : undefined;
      if (!waiting) return;
      this.pending.delete(message.id!);
      const thrown = message.result?.exceptionDetails;
      if (message.error) waiting.reject(new Error(message.error.message));
      else if (thrown) waiting.reject(new Error(thrown.exception?.description ?? thrown.text));
      else waiting.resolve(message.result && 'result' in message.result ? message.result.result?.value : message.result);
    });
  }

  /** Chromium with the harness's flags, one page of `width`×`height` at `url`. */
  static async open(url: string, width = 1400, height = 800): Promise<BarePage> {
    const profile = mkdtempSync(join(tmpdir(), 'capsem-chromium-'));
    const chromium = spawn(
      CHROMIUM,
      [...CHROMIUM_ARGS, '--headless', `--user-data-dir=${profile}`, '--remote-debugging-port=0', `--window-size=${width},${height}`, url],
      // Its own process group, so close() ends its helpers (zygote, renderers, GPU) with it.
      { stdio: ['ignore', 'ignore', 'pipe'], detached: true },
    );
    const browserUrl = await new Promise<string>((resolve, reject) => {
      let seen = '';
      const timer = setTimeout(() => reject(new Error(`Chromium gave no DevTools address in 20 s: ${seen.slice(-400)}`)), 20_000);
      chromium.stderr!.on('data', (chunk: Buffer) => {
        seen += chunk.toString();
        const found = /DevTools listening on (ws:\/\/\S+)/.exec(seen);
        if (found) {
          clearTimeout(timer);
          resolve(found[1]!);
        }
      });
      chromium.once('exit', (code) => reject(new Error(`Chromium exited (${code}) before listening: ${seen.slice(-400)}`)));
    });
    const { host } = new URL(browserUrl);
    const targets = (await (await fetch(`http://${host}/json/list`)).json()) as { type: string; webSocketDebuggerUrl: string }[];
    const target = targets.find((t) => t.type === 'page');
    if (!target) throw new Error('Chromium opened no page');
    const socket = new WebSocket(target.webSocketDebuggerUrl, { perMessageDeflate: false });
    await new Promise<void>((resolve, reject) => {
      socket.once('open', () => resolve());
      socket.once('error', reject);
    });
    return new BarePage(chromium, socket, profile);
  }

  /** Loads `url` in the page; resolves once the new document has replaced the old one. */
  async goto(url: string): Promise<void> {
    const { errorText } = (await this.send('Page.navigate', { url })) as { errorText?: string };
    if (errorText) throw new Error(`cannot load ${url}: ${errorText}`);
  }

  /** The value of a script (an expression; a promise is awaited), as JSON. */
  evaluate<T>(expression: string): Promise<T> {
    return this.send('Runtime.evaluate', { expression, awaitPromise: true, returnByValue: true }) as Promise<T>;
  }

  /** A DevTools call; its result (for Runtime.evaluate, the script's value). */
  send(method: string, params: object = {}): Promise<unknown> {
    const id = ++this.next;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.socket.send(JSON.stringify({ id, method, params }));
    });
  }

  /** Resolves once `selector` matches, polling each frame for up to `timeoutMs`. */
  waitFor(selector: string, timeoutMs = 30_000): Promise<void> {
    return this.evaluate(`new Promise((resolve, reject) => {
      const until = performance.now() + ${timeoutMs};
      const look = () => {
        if (document.querySelector(${JSON.stringify(selector)})) resolve(true);
        else if (performance.now() > until) reject(new Error('no ' + ${JSON.stringify(selector)} + ' in ${timeoutMs} ms'));
        else requestAnimationFrame(look);
      };
      look();
    })`);
  }

  /** Clicks the first element `selector` matches, as the DOM's click() does. */
  async click(selector: string): Promise<void> {
    await this.waitFor(selector);
    await this.evaluate(`document.querySelector(${JSON.stringify(selector)}).click()`);
  }

  async close(): Promise<void> {
    this.socket.close();
    if (this.chromium.exitCode === null && this.chromium.signalCode === null) {
      const exited = new Promise((resolve) => this.chromium.once('exit', resolve));
      process.kill(-this.chromium.pid!, 'SIGTERM');
      await exited;
    }
    // Its helpers may still be writing to the profile for a moment after it exits.
    rmSync(this.profile, { recursive: true, force: true, maxRetries: 20, retryDelay: 100 });
  }
}
