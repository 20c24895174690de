import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import type { CallName, CallParams, CallResult, EventName, EventPayload } from '../../electron/contract/appContract.ts';
import { tempHome } from '../helpers/tempHome.ts';
import { vmUnavailable } from '../helpers/vmTestHome.ts';

// New session → Start, as the window does it, against the browser-mode process (`npm start --
// --browser`) over its WebSocket: the call answers with the session's id at once, and what takes
// time (building the guest image, booting the VM) reaches the window as it happens, stage by
// stage, until the terminal is live; a start that fails says why, with the fix, and leaves the
// session crashed with its name free.

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const noVm = vmUnavailable();

type Message =
  | { readonly id: number; readonly result?: unknown; readonly error?: { code: string; message: string } }
  | { readonly event: EventName; readonly payload: unknown };

/** The browser-mode app as a person starts it, and a window's connection to it. */
class Window {
  /** Every message in the order it came: answers and events. */
  readonly messages: Message[] = [];
  private nextId = 0;

  private constructor(
    private readonly socket: WebSocket,
    readonly app: ChildProcess,
  ) {
    socket.on('message', (data: Buffer) => this.messages.push(JSON.parse(data.toString()) as Message));
  }

  static async open(home: string, env: NodeJS.ProcessEnv = {}): Promise<Window> {
    const app = spawn(process.execPath, ['--import', 'tsx', 'electron/app/browserMain.ts', '--reason', 'test'], {
      cwd: ROOT,
      env: { ...process.env, CAPSEM_HOME: home, CAPSEM_UI_PORT: '0', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    app.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
    const url = await new Promise<URL>((resolve, reject) => {
      let out = '';
      app.stdout!.on('data', (c: Buffer) => {
        out += c.toString();
        const line = /^Capsem UI: (\S+)$/m.exec(out);
        if (line) resolve(new URL(line[1]!));
      });
      app.once('exit', (code) => reject(new Error(`browser mode exited ${code}: ${stderr}`)));
    });
    const socket = new WebSocket(`ws://${url.host}/ws${url.search}`, { origin: url.origin });
    await new Promise((resolve, reject) => {
      socket.once('open', resolve);
      socket.once('error', reject);
    });
    return new Window(socket, app);
  }

  call<N extends CallName>(name: N, params: CallParams<N>): Promise<CallResult<N>> {
    const id = ++this.nextId;
    this.socket.send(JSON.stringify({ id, call: name, params }));
    return this.until(
      `the answer to ${name}`,
      () => {
        const answer = this.messages.find((m) => 'id' in m && m.id === id) as Extract<Message, { id: number }> | undefined;
        if (!answer) return undefined;
        if (answer.error) throw Object.assign(new Error(answer.error.message), { code: answer.error.code });
        return answer.result as CallResult<N>;
      },
      120_000,
    );
  }

  events<N extends EventName>(name: N): EventPayload<N>[] {
    return this.messages
      .filter((m): m is Extract<Message, { event: EventName }> => 'event' in m && m.event === name)
      .map((m) => m.payload as EventPayload<N>);
  }

  async until<T>(what: string, found: () => T | undefined | false, timeoutMs = 180_000): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const value = found();
      if (value !== undefined && value !== false) return value;
      if (Date.now() > deadline) throw new Error(`waited ${timeoutMs} ms for ${what}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  async close(): Promise<void> {
    this.socket.terminate();
    if (this.app.exitCode !== null || this.app.signalCode !== null) return;
    const exited = new Promise((resolve) => this.app.once('exit', resolve));
    this.app.kill('SIGTERM');
    await exited;
  }
}

const homes: ReturnType<typeof tempHome>[] = [];
const windows: Window[] = [];
afterEach(async () => {
  for (const w of windows.splice(0)) await w.close();
  for (const h of homes.splice(0)) h.remove();
});

async function openWindow(env: NodeJS.ProcessEnv = {}): Promise<Window> {
  const home = tempHome();
  homes.push(home);
  const window = await Window.open(home.root, env);
  windows.push(window);
  return window;
}

describe.skipIf(noVm !== null)(
  `a start from the window, on a machine that has never built an image${noVm ? ` (skipped: ${noVm})` : ''}`,
  () => {
    it("answers with the session's id at once, then shows the image build's stages and share done, the boot, and a live terminal", async () => {
      // An empty image cache (the user's, not the home's): the minimal image is built for real (about 5 s here).
      const cache = tempHome();
      homes.push(cache);
      const window = await openWindow({ CAPSEM_IMAGE_CACHE: join(cache.root, 'images') });
      const { id } = await window.call('sessions.start', { name: 'first-start', image: 'minimal' });
      const answeredAt = window.messages.length;
      const listed = (await window.call('sessions.list', {})).find((s) => s.id === id);
      expect(listed).toMatchObject({ name: 'first-start', status: 'running', live: false, starting: expect.any(Object) });

      const ends = () => window.events('session.starting').filter((e) => e.id === id && e.state !== 'progress');
      await window.until('the start to end', () => ends().length > 0 && ends());
      const starts = window.events('session.starting').filter((e) => e.id === id);
      expect(starts.at(-1)).toEqual({ id, state: 'ready', progress: null, message: null });
      const progress = starts.flatMap((e) => (e.progress ? [e.progress] : []));
      const image = progress.filter((p) => p.phase === 'image');
      // The build's own stages in order, each with the share of the whole build done so far.
      expect([...new Set(image.map((p) => p.step))]).toEqual(['inputs', 'kernel', 'initramfs', 'manifest', 'done']);
      const fractions = image.map((p) => p.fraction!);
      expect(fractions).toEqual([...fractions].sort((a, b) => a - b));
      expect(fractions.at(-1)).toBe(1);
      expect(image.at(-1)!.message).toMatch(/^built minimal-[0-9a-f]{16}$/);
      // Each report lists every stage of the build; by the end all are done.
      expect(image.at(-1)!.build.map((stage) => [stage.stage, stage.state])).toEqual([
        ['inputs', 'done'],
        ['kernel', 'done'],
        ['initramfs', 'done'],
        ['manifest', 'done'],
      ]);
      // Then the boot, then ready.
      expect(progress.findIndex((p) => p.phase === 'boot' && /^booting the VM/.test(p.message))).toBeGreaterThan(
        progress.indexOf(image.at(-1)!),
      );
      // The call had answered before the build began.
      const firstBuildStep = window.messages.findIndex(
        (m) =>
          'event' in m && m.event === 'session.starting' && (m.payload as EventPayload<'session.starting'>).progress?.step === 'kernel',
      );
      expect(firstBuildStep).toBeGreaterThan(answeredAt - 1);

      expect(await window.call('sessions.info', { id: id })).toMatchObject({ live: true, starting: null });
      expect(await window.call('terminal.attach', { id, size: { cols: 80, rows: 24 } })).toEqual({ live: true, transcript: null });
      await window.call('terminal.input', { id, data: 'echo "up-$((6*7))"\n' });
      await window.until(
        'the shell to answer',
        () =>
          window
            .events('terminal.output')
            .map((e) => e.data)
            .join('')
            .includes('up-42'),
        60_000,
      );
      expect(await window.call('sessions.stop', { id })).toEqual({ status: 'stopped' });
    }, 300_000);
  },
);

describe('a start that fails', () => {
  it("says why, with the fix, in the start's end and the terminal the tab asks for, and ends crashed with its name free", async () => {
    const window = await openWindow({ CAPSEM_AGENT_BINARY: join(ROOT, 'no-such-agent') });
    const { id } = await window.call('sessions.start', { name: 'will-fail', image: 'minimal' });
    const WHY =
      /^the guest image is not ready: CAPSEM_AGENT_BINARY names \S+no-such-agent, which does not exist: point it at a built capsem-agent, or unset it to build the one in native\/agent$/;
    const failed = await window.until(
      'the start to fail',
      () => window.events('session.starting').find((e) => e.id === id && e.state === 'failed'),
      60_000,
    );
    expect(failed).toEqual({ id, state: 'failed', progress: null, message: expect.stringMatching(WHY) });
    await expect(window.call('terminal.attach', { id, size: { cols: 80, rows: 24 } })).rejects.toMatchObject({
      code: 'start_failed',
      message: expect.stringMatching(WHY),
    });

    const row = await window.until('the row to say crashed', () =>
      window
        .events('session.changed')
        .map((e) => e.session)
        .find((s) => s.id === id && s.status === 'crashed'),
    );
    expect(row).toMatchObject({
      name: 'will-fail',
      live: false,
      starting: null,
      statusReason: expect.stringMatching(/^image not ready: CAPSEM_AGENT_BINARY names /),
    });
    // No half-made session: nothing running, and the name can be used again at once.
    expect((await window.call('sessions.list', {})).filter((s) => s.status === 'running')).toEqual([]);
    const again = await window.call('sessions.start', { name: 'will-fail', image: 'minimal' });
    expect(again.id).not.toBe(id);
  }, 120_000);
});
