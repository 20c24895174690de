import { copyFileSync, writeFileSync } from 'node:fs';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocketServer } from 'ws';
import type { VmHost } from '../../electron/vm/vmHost.ts';
import type { VmSession } from '../../electron/vm/vmSession.ts';
import {
  DEEP_BODY,
  escapeAttempts,
  LOOPBACK_DOMAINS,
  LOOPBACK_SECRET,
  PARSER_HOSTS,
  parserBreakingAttempts,
  startLoopbackSecret,
  type LoopbackSecret,
} from '../helpers/escapeAttempts.ts';
import { copyPackageClosure } from '../helpers/guestPackages.ts';
import { json, startUpstream, type Upstream } from '../helpers/mockUpstreams.ts';
import { sessionRows } from '../helpers/sessionRows.ts';
import { tempHome } from '../helpers/tempHome.ts';
import { agentImageUnavailable, guestRun, startAgentVm, vmTestHome } from '../helpers/vmTestHome.ts';

// The containment review's repros from where they were found: inside a real VM, a program with
// raw sockets to the agent's proxy listener tries to reach the host's loopback (where `capsem
// api` and other sessions' data live), to front another destination with its Host header, and
// to make a parser drop its record; a real WebSocket client's frames are recorded.

const noAgentImage = agentImageUnavailable();
const PROBE = fileURLToPath(new URL('../fixtures/egressProbe.mjs', import.meta.url));
const FRONTED = 'files.guest-test.example';
const WS_HOST = 'ws.guest-test.example';

describe.skipIf(noAgentImage !== null)(`real VM, agent image: containment${noAgentImage ? ` (skipped: ${noAgentImage})` : ''}`, () => {
  const home = vmTestHome();
  let upstream: Upstream;
  let secret: LoopbackSecret;
  let wsServer: Server;
  let host: VmHost;
  let session: VmSession;

  const run = (argv: string[], env: Record<string, string> = {}) => guestRun(session, argv, { env, cwd: '/workspace' });

  const rows = <T>(sql: string, ...params: unknown[]): T[] => sessionRows<T>(session.paths.dbPath, sql, ...params);

  beforeAll(async () => {
    secret = await startLoopbackSecret();
    wsServer = createServer();
    new WebSocketServer({ server: wsServer }).on('connection', (ws) => ws.on('message', (data) => ws.send(`echo:${data.toString()}`)));
    await new Promise<void>((r) => wsServer.listen(0, '127.0.0.1', r));
    const upHome = tempHome();
    const hosts = [FRONTED, ...PARSER_HOSTS];
    upstream = await startUpstream(upHome, hosts, (req, _body, res) => json(res, 200, { path: req.url }));
    upHome.remove();
    ({ host, session } = await startAgentVm(home, upstream, hosts, [
      `${WS_HOST}:80=127.0.0.1:${(wsServer.address() as AddressInfo).port}`,
    ]));
  }, 900_000);

  afterAll(async () => {
    await host?.stopAll();
    await upstream?.close();
    secret?.close();
    wsServer?.close();
    home.remove();
  });

  it('refuses every way from the guest to the host loopback, and every Host that fronts another destination', async () => {
    const attempts = [...escapeAttempts(secret.port, FRONTED), ...parserBreakingAttempts()];
    copyFileSync(PROBE, join(session.paths.workspaceDir, 'probe.mjs'));
    copyFileSync(
      fileURLToPath(new URL('../fixtures/proxyTunnel.mjs', import.meta.url)),
      join(session.paths.workspaceDir, 'proxyTunnel.mjs'),
    );
    writeFileSync(join(session.paths.workspaceDir, 'attempts.json'), JSON.stringify(attempts));
    const r = await run(['node', 'probe.mjs'], { PROBE_FILE: 'attempts.json', SECRET: LOOPBACK_SECRET });
    expect(r.code, r.err).toBe(0);
    const answers = JSON.parse(r.out.trim()) as { label: string; status: string; leaked: boolean }[];
    expect(answers.map((a) => [a.label, a.status.slice(0, 12)])).toEqual(attempts.map((a) => [a.label, `HTTP/1.1 ${a.expect}`]));
    expect(answers.filter((a) => a.leaked)).toEqual([]);
    expect(secret.hits).toBe(0);
    expect(upstream.requests.map((q) => q.path)).toEqual(['/v1/messages', '/v1beta/models/%E0%A4%A:generateContent']);
    await session.recording.flush();
    const denied = rows<{ domain: string; process_name: string; error_kind: string }>(
      "SELECT domain, process_name, error_kind FROM net_events WHERE decision = 'denied' AND status_code = 403",
    );
    expect(denied.filter((d) => (LOOPBACK_DOMAINS as readonly string[]).includes(d.domain))).toHaveLength(
      attempts.filter((a) => a.expect === 403).length - 1,
    );
    expect(new Set(denied.map((d) => d.process_name))).toEqual(new Set(['node']));
    expect(rows('SELECT domain FROM net_events WHERE status_code = 421')).toEqual([
      { domain: FRONTED },
      { domain: FRONTED },
      { domain: FRONTED },
    ]);
    // What the parsers could not read is recorded all the same, bodies and all.
    const parsed = rows<{ path: string; parse_error: string | null; sent: number }>(
      "SELECT n.path, n.parse_error, length(b.body) AS sent FROM net_events n JOIN event_body_blobs b ON b.event_id = n.event_id AND b.direction = 'request' WHERE n.decision = 'allowed' ORDER BY n.seq",
    );
    expect(parsed).toEqual([
      { path: '/v1/messages', parse_error: expect.stringMatching(/Maximum call stack size exceeded/), sent: Buffer.byteLength(DEEP_BODY) },
      { path: '/v1beta/models/%E0%A4%A:generateContent', parse_error: null, sent: 15 },
    ]);
  }, 180_000);

  it("records a guest WebSocket's frames both ways, under its exchange", async () => {
    copyPackageClosure('ws', session.paths.workspaceDir);
    writeFileSync(
      join(session.paths.workspaceDir, 'chat.cjs'),
      `
const net = require('net');
const WebSocket = require('ws');
const proxy = new URL(process.env.HTTPS_PROXY);
const tunnel = net.connect(Number(proxy.port), proxy.hostname, () => tunnel.write('CONNECT ${WS_HOST}:80 HTTP/1.1\\r\\nHost: ${WS_HOST}:80\\r\\n\\r\\n'));
tunnel.once('data', () => {
  const ws = new WebSocket('ws://${WS_HOST}/chat', { createConnection: () => tunnel });
  ws.on('open', () => ws.send('hello from the guest'));
  ws.on('message', (m) => { console.log(m.toString()); ws.close(1000, 'bye'); });
  ws.on('error', (e) => { console.error(String(e)); process.exit(1); });
});
`,
    );
    const r = await run(['node', 'chat.cjs']);
    expect(r.err).toBe('');
    expect(r.out).toBe('echo:hello from the guest\n');
    await session.recording.flush();
    const [exchange] = rows<{ event_id: string; status_code: number; conn_type: string; process_name: string }>(
      `SELECT event_id, status_code, conn_type, process_name FROM net_events WHERE domain = '${WS_HOST}'`,
    );
    expect(exchange).toMatchObject({ status_code: 101, conn_type: 'websocket', process_name: 'node' });
    const frames = rows<{ direction: string; opcode: string; content: string }>(
      'SELECT direction, opcode, content FROM ws_frames WHERE net_event_id = ? ORDER BY id',
      exchange!.event_id,
    );
    expect(frames.filter((f) => f.direction === 'sent')).toEqual([
      { direction: 'sent', opcode: 'text', content: 'hello from the guest' },
      { direction: 'sent', opcode: 'close', content: '1000 bye' },
    ]);
    expect(frames.filter((f) => f.direction === 'received')[0]).toEqual({
      direction: 'received',
      opcode: 'text',
      content: 'echo:hello from the guest',
    });
  }, 120_000);

  it("gives the session's loopback proxy port to no other process on the host", async () => {
    const status = await new Promise<number>((resolve, reject) => {
      const req = request(
        { host: '127.0.0.1', port: session.recording.proxy.port, method: 'GET', path: `http://${FRONTED}/`, headers: { host: FRONTED } },
        (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        },
      );
      req.on('error', reject);
      req.end();
    });
    expect(status).toBe(407);
    expect(upstream.requests.filter((q) => q.path === '/')).toEqual([]);
  });
});
