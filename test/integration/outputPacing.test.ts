import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer as createHttpsServer, type Server } from 'node:https';
import { connect, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { AppCore } from '../../electron/app/appCore.ts';
import { UNDRAWN_WINDOW } from '../../electron/app/terminals.ts';
import { startBrowserServer } from '../../electron/app/browserServer.ts';
import { startControlServer } from '../../electron/owner/controlSocket.ts';
import { vmHostMethods } from '../../electron/owner/vmHostMethods.ts';
import { CertificateAuthority } from '../../electron/proxy/certificateAuthority.ts';
import { ensurePrivateDir } from '../../electron/store/paths.ts';
import { GUEST_RECEIVE_WINDOW, STREAM_WINDOW } from '../../electron/vm/mux.ts';
import { VmHost } from '../../electron/vm/vmHost.ts';
import { buildAgent, HostAgentBackend, hostAgentPlan } from '../helpers/hostAgentBackend.ts';
import { freePort } from '../helpers/freePort.ts';
import { tempHome } from '../helpers/tempHome.ts';

// Guest output goes at the pace of its consumer: a consumer that stops reading stops the guest
// (through the mux's credit), so host memory holds a few windows, never the flood; reading again
// lets it go on. The real agent runs as a host process (no VM), so `cat /dev/zero` floods at
// host speed. Each hop has its consumer: a control-socket client (`capsem run`), the browser
// page's WebSocket (the app's terminal), and the proxy's two ends (net streams).

const missing = buildAgent();
const home = tempHome();
const HOST = 'files.pacing.test';
let upstream: Server;
let upstreamCaFile: string;
let upPort = 0;
/** The upstream's handler for this test: the endless download or the upload nobody reads. */
let serve: (req: IncomingMessage, res: ServerResponse) => void = (_req, res) => res.end();
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
  // Settled once a whole second passes without a byte, or after 20 s: on a loaded machine the
  // buffers on the way fill slowly, and a flow that never stops runs past `limit` meanwhile.
  const deadline = Date.now() + 20_000;
  let settled = await sample(1000);
  for (let next = await sample(1000); next !== settled && next <= limit && Date.now() < deadline; next = await sample(1000)) settled = next;
  settled = bytes();
  return { settled, later: settled > limit ? settled : await sample(2000) };
}

/** A VM host whose guest is the agent run here; its connections reach the upstream through the recording proxy. */
function liveHost(): { host: VmHost; backend: HostAgentBackend; workspace: string } {
  const workspace = mkdtempSync(join(home.root, 'ws-'));
  const backend = new HostAgentBackend(workspace);
  const host = new VmHost({
    home,
    backend: () => backend,
    hostEnv: { ...process.env, CAPSEM_RESOLVE: `${HOST}:443=127.0.0.1:${upPort}`, CAPSEM_UPSTREAM_CA_FILE: upstreamCaFile },
    plan: () => async (_paths, caPem) => hostAgentPlan(workspace, await freePort(), caPem),
  });
  return { host, backend, workspace };
}

describe.skipIf(missing !== null)(
  `guest output at its consumer's pace, with the real agent${missing ? ` (skipped: ${missing})` : ''}`,
  () => {
    beforeAll(async () => {
      const upHome = tempHome();
      const ca = await CertificateAuthority.load(upHome);
      const leaf = await ca.issueLeaf(HOST);
      upHome.remove();
      upstreamCaFile = join(home.root, 'upstream-ca.pem');
      writeFileSync(upstreamCaFile, ca.certPem);
      upstream = createHttpsServer({ cert: leaf.certPem + ca.certPem, key: leaf.keyPem }, (req, res) => serve(req, res));
      await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
      upPort = (upstream.address() as AddressInfo).port;
      writeFileSync(
        join(home.root, 'policy.json'),
        JSON.stringify({ version: 1, rules: [{ id: 'test.allow', action: 'allow', domains: ['*'] }], privateAddresses: 'deny' }),
      );
    });
    afterAll(() => {
      upstream?.closeAllConnections();
      upstream?.close();
      home.remove();
    });

    // Held when stalled: the mux's window and unread quarter, the control socket's backlog bound
    // and one message, and the unix sockets' kernel buffers (a few hundred KiB each): well under
    // this. Unpaced, `cat /dev/zero` on the host passes it in well under a second.
    const CONTROL_LIMIT = 16 * 2 ** 20;

    it.each([
      ['stdout', ['cat', '/dev/zero']],
      ['stderr', ['sh', '-c', 'cat /dev/zero >&2']],
    ])(
      'a vm.run client that stops reading stops the guest (%s), and the output goes on once it reads again',
      async (channel, argv) => {
        const { host, backend } = liveHost();
        ensurePrivateDir(home.runDir);
        const path = join(home.runDir, `control-${channel}.sock`);
        const server = await startControlServer({
          path,
          info: { pid: process.pid, kind: 'app', command: 'test', startedAt: new Date(0).toISOString(), version: '0.0.0' },
          methods: vmHostMethods(host),
        });
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
      },
      60_000,
    );

    it('input a busy guest shell does not take waits in the vm.shell client, not in the owner', async () => {
      const { host } = liveHost();
      ensurePrivateDir(home.runDir);
      const path = join(home.runDir, 'control-input.sock');
      const server = await startControlServer({
        path,
        info: { pid: process.pid, kind: 'app', command: 'test', startedAt: new Date(0).toISOString(), version: '0.0.0' },
        methods: vmHostMethods(host),
      });
      const client = connect(path);
      let answered = false;
      let shown = '';
      let partial = '';
      client.on('data', (c: Buffer) => {
        const lines = (partial + c.toString()).split('\n');
        partial = lines.pop()!;
        for (const line of lines) {
          const message = JSON.parse(line) as { id?: number; data?: string };
          if (message.id === 1) answered = true;
          if (message.data) shown += Buffer.from(message.data, 'base64').toString();
        }
      });
      const input = (bytes: Buffer): void => void client.write(`${JSON.stringify({ stream: 's1', data: bytes.toString('base64') })}\n`);
      try {
        await new Promise((r) => client.once('connect', r));
        client.write(`${JSON.stringify({ id: 1, method: 'vm.shell', params: { image: 'minimal' } })}\n`);
        await until('the shell', () => answered && host.live.length === 1);
        input(Buffer.from('echo busy-$((6*7)); sleep 30\n'));
        await until('the shell to be busy', () => shown.includes('busy-42'));
        const total = 32 * 2 ** 20;
        const chunk = Buffer.alloc(64 * 1024, 0x61);
        for (let sent = 0; sent < total; sent += chunk.length) input(chunk);
        await sleep(2000);
        // The pty's line buffer, the guest's window and the owner's stream buffer take a few MiB;
        // the rest is still queued on the client's side of the socket.
        expect(client.writableLength).toBeGreaterThan(total - 8 * 2 ** 20);
      } finally {
        client.destroy();
        await host.stopAll();
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
      const ws = new WebSocket(`ws://127.0.0.1:${server.port}/ws?token=${server.token}`, {
        headers: { origin: `http://127.0.0.1:${server.port}` },
      });
      let closedWith: number | null = null;
      ws.on('close', (code) => (closedWith = code));
      let outputBytes = 0;
      const answers = new Map<number, unknown>();
      let nextId = 0;
      let sessionId = '';
      ws.on('message', (data: Buffer) => {
        const message = JSON.parse(data.toString()) as {
          id?: number;
          result?: unknown;
          error?: unknown;
          event?: string;
          payload?: { data: string };
        };
        if (message.event === 'terminal.output') {
          outputBytes += message.payload!.data.length;
          // Drawn at once, as the window acknowledges what xterm took in.
          ws.send(JSON.stringify({ id: ++nextId, call: 'terminal.ack', params: { id: sessionId, chars: message.payload!.data.length } }));
        } else if (message.id !== undefined) answers.set(message.id, message.result ?? message.error);
      });
      const call = async (name: string, params: unknown): Promise<unknown> => {
        const id = ++nextId;
        ws.send(JSON.stringify({ id, call: name, params }));
        await until(`the answer to ${name}`, () => answers.has(id));
        return answers.get(id);
      };
      try {
        await new Promise((r) => ws.once('open', r));
        const { id } = (await call('sessions.start', { name: null, image: 'minimal' })) as { id: string };
        sessionId = id;
        await call('terminal.attach', { id, size: { cols: 80, rows: 24 } });
        await call('terminal.input', { id, data: 'yes\n' });
        await until('the terminal to flood', () => outputBytes > 0);
        ws.pause();
        const { settled, later } = await afterStall(() => backend.bytesFromAgent, PAGE_LIMIT);
        expect(later).toBeLessThan(PAGE_LIMIT);
        expect(later - settled).toBeLessThan(STREAM_WINDOW);
        expect(closedWith).toBeNull();

        ws.resume();
        // Past what the agent had sent when the page stopped reading: the shell's output goes on,
        // not just what was held for the page (another page's worth took over 30 s on a loaded CI).
        await until('the output to flow again', () => outputBytes > later + 4 * 2 ** 20, 45_000);
        expect(closedWith).toBeNull();
      } finally {
        ws.terminate();
        await server.close();
        await host.stopAll();
        core.close();
        rmSync(rendererDir, { recursive: true, force: true });
      }
    }, 90_000);

    it('a window that stops drawing pauses the shell, whatever carries its events, and the output goes on as it acknowledges what it drew', async () => {
      const { host, backend } = liveHost();
      const core = new AppCore({ home, vmHost: host });
      // A window whose transport never pushes back (Electron's IPC): only its acknowledgements pace the shell.
      let sent = 0;
      core.subscribe((event, payload) => {
        if (event === 'terminal.output') sent += (payload as { data: string }).data.length;
      });
      try {
        const { id } = (await core.handle('sessions.start', { name: null, image: 'minimal' })) as { id: string };
        await core.handle('terminal.attach', { id, size: { cols: 80, rows: 24 } });
        await core.handle('terminal.input', { id, data: 'yes\n' });
        const { settled, later } = await afterStall(() => backend.bytesFromAgent, PAGE_LIMIT);
        expect(later).toBeLessThan(PAGE_LIMIT);
        expect(later - settled).toBeLessThan(STREAM_WINDOW);
        expect(sent).toBeLessThanOrEqual(UNDRAWN_WINDOW + STREAM_WINDOW);

        let acknowledged = 0;
        while (backend.bytesFromAgent < later + PAGE_LIMIT) {
          if (sent > acknowledged) await core.handle('terminal.ack', { id, chars: sent - acknowledged });
          acknowledged = sent;
          await sleep(20);
        }
        expect(sent).toBeGreaterThan(PAGE_LIMIT);
      } finally {
        await host.stopAll();
        core.close();
      }
    }, 60_000);

    // Held when stalled: the loopback TCP buffers on each side of the proxy and the guest's own
    // socket, the proxy's stream buffers and the mux's window.
    const NET_LIMIT = 96 * 2 ** 20;

    it('a download the guest does not read stops the upstream, an upload the upstream does not read stops the guest, and each goes on once read', async () => {
      const { host, backend, workspace } = liveHost();
      const session = await host.start({ name: null, image: 'minimal', command: ['test'] }, { status: () => {}, progress: () => {} });
      let served = 0;
      let upload: IncomingMessage | null = null;
      serve = (req, res) => {
        if (req.url === '/upload') {
          // Not read until the test says so: the body waits in the upstream's socket, then the proxy's.
          upload = req;
          req.pause();
          return;
        }
        res.writeHead(200, { 'content-type': 'application/octet-stream' });
        const chunk = Buffer.alloc(64 * 1024);
        const more = (): void => {
          for (let room = true; room && res.writable; served += chunk.length) room = res.write(chunk);
        };
        res.on('drain', more);
        more();
      };
      try {
        // The guest's reader waits for a file the test creates: curl blocks on its pipe meanwhile,
        // and stops reading its connection.
        session
          .exec(['sh', '-c', `curl -sS https://${HOST}/download | { while [ ! -e read-now ]; do sleep 0.1; done; cat > /dev/null; }`])
          .result.catch(() => undefined);
        await until('the download to start', () => served > 0);
        const down = await afterStall(() => served, NET_LIMIT);
        expect(down.later).toBeLessThan(NET_LIMIT);
        expect(down.later - down.settled).toBeLessThan(GUEST_RECEIVE_WINDOW);
        writeFileSync(join(workspace, 'read-now'), '');
        // 96 MiB more through the proxy: seconds here, but more than 30 beside a VM test on 2 cores.
        await until('the download to go on', () => served > down.later + NET_LIMIT, 75_000);

        const before = backend.bytesFromAgent;
        const fromGuest = (): number => backend.bytesFromAgent - before;
        session.exec(['sh', '-c', `head -c 4G /dev/zero | curl -sS -T - https://${HOST}/upload`]).result.catch(() => undefined);
        await until('the upload to reach the upstream', () => upload !== null);
        const up = await afterStall(fromGuest, NET_LIMIT);
        expect(up.later).toBeLessThan(NET_LIMIT);
        expect(up.later - up.settled).toBeLessThan(STREAM_WINDOW);
        upload!.resume();
        await until('the upload to go on', () => fromGuest() > up.later + NET_LIMIT, 75_000);
      } finally {
        await session.stop();
      }
    }, 240_000);
  },
);
