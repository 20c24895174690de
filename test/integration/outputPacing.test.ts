import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { AppCore } from '../../electron/app/appCore.ts';
import { startBrowserServer } from '../../electron/app/browserServer.ts';
import { startControlServer } from '../../electron/owner/controlSocket.ts';
import { ensurePrivateDir } from '../../electron/store/paths.ts';
import { STREAM_WINDOW } from '../../electron/vm/mux.ts';
import { VmHost } from '../../electron/vm/vmHost.ts';
import { buildAgent, HostAgentBackend } from '../helpers/hostAgentBackend.ts';
import { tempHome } from '../helpers/tempHome.ts';

// Guest output goes at the pace of its consumer: a consumer that stops reading stops the guest
// (through the mux's credit), so host memory holds a few windows, never the flood; reading again
// lets it go on. The real agent runs as a host process (no VM), so `cat /dev/zero` floods at
// host speed. Each hop has its consumer: a control-socket client (`capsem run`) and the browser
// page's WebSocket (the app's terminal).

const missing = buildAgent();
const home = tempHome();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until(what: string, probe: () => boolean, timeoutMs = 30_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!probe()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

/**
 * A byte count sampled once the consumer had time to stop the flow, and again two seconds
 * later. It gives up as soon as the count passes `limit`, so an unpaced flood fails the test in
 * a moment instead of filling the machine's memory.
 */
async function afterStall(bytes: () => number, limit: number): Promise<{ settled: number; later: number }> {
  const sample = async (ms: number): Promise<number> => {
    const end = Date.now() + ms;
    while (Date.now() < end && bytes() <= limit) await sleep(50);
    return bytes();
  };
  const settled = await sample(3000);
  return { settled, later: settled > limit ? settled : await sample(2000) };
}

function liveHost(): { host: VmHost; backend: HostAgentBackend } {
  const workspace = mkdtempSync(join(home.root, 'ws-'));
  const backend = new HostAgentBackend(workspace);
  const host = new VmHost({
    home,
    backend: () => backend,
    plan: () => async () => ({ kernel: '', initrd: '', cmdline: '', disks: [], guestWorkspace: workspace, guestProxyPort: 0, guestEnv: { PATH: process.env.PATH ?? '/usr/bin:/bin' } }),
  });
  return { host, backend };
}

describe.skipIf(missing !== null)(`guest output at its consumer's pace, with the real agent${missing ? ` (skipped: ${missing})` : ''}`, () => {
  afterAll(() => home.remove());

  // Held when stalled: the mux's window and unread quarter, the control socket's backlog bound
  // and one message, and the unix sockets' kernel buffers (a few hundred KiB each): well under
  // this. Unpaced, `cat /dev/zero` on the host passes it in well under a second.
  const CONTROL_LIMIT = 16 * 2 ** 20;

  it.each([
    ['stdout', ['cat', '/dev/zero']],
    ['stderr', ['sh', '-c', 'cat /dev/zero >&2']],
  ])('a vm.run client that stops reading stops the guest (%s), and the output goes on once it reads again', async (channel, argv) => {
    const { host, backend } = liveHost();
    ensurePrivateDir(home.runDir);
    const path = join(home.runDir, `control-${channel}.sock`);
    const server = await startControlServer({ path, info: { pid: process.pid, kind: 'app', command: 'test', startedAt: new Date(0).toISOString(), version: '0.0.0' }, methods: host.methods() });
    const client = connect(path);
    try {
      await new Promise((r) => client.once('connect', r));
      // The client never reads until told to: its socket's buffers fill, then the owner's backlog.
      client.write(`${JSON.stringify({ id: 1, method: 'vm.run', params: { image: 'minimal', argv } })}\n`);
      await until('the command to run', () => host.live.length === 1 && backend.bytesFromAgent > 0);
      const { settled, later } = await afterStall(() => backend.bytesFromAgent, CONTROL_LIMIT);
      expect(later).toBeLessThan(CONTROL_LIMIT);
      // Stopped, not slowed: nothing but heartbeats came from the guest in the last two seconds.
      expect(later - settled).toBeLessThan(STREAM_WINDOW);

      let read = 0;
      client.on('data', (c: Buffer) => (read += c.length));
      await until('the output to flow again', () => backend.bytesFromAgent > later + 4 * CONTROL_LIMIT);
      expect(read).toBeGreaterThan(CONTROL_LIMIT);
    } finally {
      client.destroy();
      await host.idle();
      await server.close();
    }
  }, 60_000);

  it('a paused exec stream stops the grants although its preview tap reads it, and reading again resumes them', async () => {
    const { host, backend } = liveHost();
    const session = await host.start({ name: null, image: 'minimal', command: ['test'] }, { status: () => {}, progress: () => {} });
    try {
      const { stream } = session.exec(['cat', '/dev/zero']);
      stream.pause();
      const { settled, later } = await afterStall(() => backend.bytesFromAgent, CONTROL_LIMIT);
      expect(later).toBeLessThan(CONTROL_LIMIT);
      expect(later - settled).toBeLessThan(STREAM_WINDOW);
      stream.resume();
      await until('the output to flow again', () => backend.bytesFromAgent > later + 4 * CONTROL_LIMIT);
    } finally {
      await session.stop();
    }
  }, 60_000);

  // Held when stalled: the loopback TCP buffers between the server and the page (the kernel may
  // grow a receive buffer to several MiB), the page's backlog bound and the mux's window. Unpaced,
  // the terminal's `yes` passes it within seconds: the server used to close the page at 32 MiB
  // unsent and the flood went on into the transcript.
  const PAGE_LIMIT = 64 * 2 ** 20;

  it("a browser page that stops reading pauses the terminal, keeps its connection, and the shell's output goes on once it reads again", async () => {
    const { host, backend } = liveHost();
    const core = new AppCore({ home, vmHost: host });
    const rendererDir = mkdtempSync(join(tmpdir(), 'capsem-renderer-'));
    writeFileSync(join(rendererDir, 'index.html'), '<!doctype html><title>Capsem</title>');
    const server = await startBrowserServer({ core, rendererDir, port: 0 });
    const ws = new WebSocket(`ws://127.0.0.1:${server.port}/ws?token=${server.token}`, { headers: { origin: `http://127.0.0.1:${server.port}` } });
    let closedWith: number | null = null;
    ws.on('close', (code) => (closedWith = code));
    let outputBytes = 0;
    const answers = new Map<number, unknown>();
    ws.on('message', (data: Buffer) => {
      const message = JSON.parse(data.toString()) as { id?: number; result?: unknown; error?: unknown; event?: string; payload?: { data: string } };
      if (message.event === 'terminal.output') outputBytes += message.payload!.data.length;
      else if (message.id !== undefined) answers.set(message.id, message.result ?? message.error);
    });
    let nextId = 0;
    const call = async (name: string, params: unknown): Promise<unknown> => {
      const id = ++nextId;
      ws.send(JSON.stringify({ id, call: name, params }));
      await until(`the answer to ${name}`, () => answers.has(id));
      return answers.get(id);
    };
    try {
      await new Promise((r) => ws.once('open', r));
      const { id } = (await call('sessions.start', { name: null, image: 'minimal' })) as { id: string };
      await call('terminal.attach', { id, size: { cols: 80, rows: 24 } });
      await call('terminal.input', { id, data: 'yes\n' });
      await until('the terminal to flood', () => outputBytes > 0);
      ws.pause();
      const { settled, later } = await afterStall(() => backend.bytesFromAgent, PAGE_LIMIT);
      expect(later).toBeLessThan(PAGE_LIMIT);
      expect(later - settled).toBeLessThan(STREAM_WINDOW);
      expect(closedWith).toBeNull();

      ws.resume();
      const shown = outputBytes;
      await until('the output to flow again', () => outputBytes > shown + PAGE_LIMIT);
      expect(closedWith).toBeNull();
    } finally {
      ws.terminate();
      await server.close();
      await host.stopAll();
      core.close();
      rmSync(rendererDir, { recursive: true, force: true });
    }
  }, 60_000);
});
