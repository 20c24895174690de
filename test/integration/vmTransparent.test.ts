import { writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocketServer } from 'ws';
import type { VmHost } from '../../electron/vm/vmHost.ts';
import type { VmSession } from '../../electron/vm/vmSession.ts';
import { LOOPBACK_SECRET, startLoopbackSecret, type LoopbackSecret } from '../helpers/escapeAttempts.ts';
import { copyPackageClosure } from '../helpers/guestPackages.ts';
import { json, startUpstream, type Upstream } from '../helpers/mockUpstreams.ts';
import { runCapsemAsync } from '../helpers/runCapsem.ts';
import { sessionRows } from '../helpers/sessionRows.ts';
import { tempHome } from '../helpers/tempHome.ts';
import { agentImageUnavailable, guestRun, startAgentVm, vmTestHome } from '../helpers/vmTestHome.ts';

// The transparent path, inside a real VM with the agent image: programs that ignore the proxy
// variables (curl --noproxy '*', Python's http.client, the ws package without an agent) reach
// their destinations through the host's proxy all the same, recorded with their process; their
// name lookups go through the agent's DNS answerer and are recorded as dns_events; and what the
// proxied path refuses (the host's loopback, in spellings that leave the guest or behind a name,
// and names the policy denies) the transparent path refuses too, and records. The same through
// `capsem run` from a user's folder, read back with `capsem sql` and `capsem check`.

const noAgentImage = agentImageUnavailable();
const TLS_HOST = 'api.transparent.example';
const PLAIN_HOST = 'plain.transparent.example';
const WS_HOST = 'ws.transparent.example';

describe.skipIf(noAgentImage !== null)(
  `real VM, agent image: the transparent path${noAgentImage ? ` (skipped: ${noAgentImage})` : ''}`,
  () => {
    const home = vmTestHome();
    let upstream: Upstream;
    let plain: Server;
    let plainHits: string[];
    let wsServer: Server;
    let secret: LoopbackSecret;
    let host: VmHost;
    let session: VmSession;

    const run = (script: string) => guestRun(session, ['sh', '-c', script], { cwd: '/workspace' });
    const rows = <T>(sql: string, ...params: unknown[]): T[] => sessionRows<T>(session.paths.dbPath, sql, ...params);

    beforeAll(async () => {
      const upHome = tempHome();
      upstream = await startUpstream(upHome, [TLS_HOST], (req, _body, res) => json(res, 200, { path: req.url }));
      upHome.remove();
      plainHits = [];
      plain = createServer((req, res) => {
        plainHits.push(req.url ?? '');
        res.end(`plain:${req.url}`);
      });
      await new Promise<void>((r) => plain.listen(0, '127.0.0.1', r));
      wsServer = createServer();
      new WebSocketServer({ server: wsServer }).on('connection', (ws) => ws.on('message', (data) => ws.send(`echo:${data.toString()}`)));
      await new Promise<void>((r) => wsServer.listen(0, '127.0.0.1', r));
      secret = await startLoopbackSecret();
      ({ host, session } = await startAgentVm(
        home,
        upstream,
        [TLS_HOST],
        [
          `${PLAIN_HOST}:80=127.0.0.1:${(plain.address() as AddressInfo).port}`,
          `${WS_HOST}:80=127.0.0.1:${(wsServer.address() as AddressInfo).port}`,
        ],
      ));
    }, 900_000);

    afterAll(async () => {
      await host?.stopAll();
      await upstream?.close();
      plain?.close();
      wsServer?.close();
      secret?.close();
      home.remove();
    });

    it('records curl --noproxy over HTTPS and plain HTTP, and the lookups behind them', async () => {
      const r = await run(
        [
          `curl -sS --noproxy '*' -w ' %{http_code}\\n' https://${TLS_HOST}/v1/curl-tls`,
          `curl -sS --noproxy '*' -w ' %{http_code}\\n' http://${PLAIN_HOST}/curl-plain`,
        ].join(' && '),
      );
      expect(r.code, r.err).toBe(0);
      expect(r.out).toBe(`${JSON.stringify({ path: '/v1/curl-tls' })} 200\nplain:/curl-plain 200\n`);
      expect(upstream.requests.map((q) => q.path)).toContain('/v1/curl-tls');
      expect(plainHits).toEqual(['/curl-plain']);
      await session.recording.flush();
      expect(
        rows("SELECT domain, port, path, status_code, decision, process_name FROM net_events WHERE process_name = 'curl' ORDER BY seq"),
      ).toEqual([
        { domain: TLS_HOST, port: 443, path: '/v1/curl-tls', status_code: 200, decision: 'allowed', process_name: 'curl' },
        { domain: PLAIN_HOST, port: 80, path: '/curl-plain', status_code: 200, decision: 'allowed', process_name: 'curl' },
      ]);
      const lookups = rows<{
        name: string;
        type: string;
        rcode: string;
        answers: string;
        resolved: string;
        decision: string;
        process_name: string;
      }>(
        "SELECT name, type, rcode, answers, resolved, decision, process_name FROM dns_events WHERE name IN (?, ?) AND type = 'A' ORDER BY seq",
        TLS_HOST,
        PLAIN_HOST,
      );
      expect(lookups.map((l) => [l.name, l.rcode, l.decision, l.process_name, JSON.parse(l.resolved)])).toEqual([
        [TLS_HOST, 'NOERROR', 'allowed', 'curl', ['127.0.0.1']],
        [PLAIN_HOST, 'NOERROR', 'allowed', 'curl', ['127.0.0.1']],
      ]);
      // The guest is given stand-ins, never the host's loopback the names really go to.
      for (const l of lookups) expect(JSON.parse(l.answers)).toEqual([expect.stringMatching(/^198\.1[89]\./)]);
    }, 120_000);

    it('brings a connection back to its name whether it dialled the IPv4 or the IPv6 stand-in', async () => {
      const r = await run(
        [
          `curl -4 -sS --noproxy '*' -o /dev/null -w '%{remote_ip} %{http_code}\\n' https://${TLS_HOST}/v1/curl-ipv4`,
          `curl -6 -sS --noproxy '*' -o /dev/null -w '%{remote_ip} %{http_code}\\n' https://${TLS_HOST}/v1/curl-ipv6`,
        ].join(' && '),
      );
      expect(r.code, r.err).toBe(0);
      expect(r.out).toMatch(/^198\.1[89]\.\d+\.\d+ 200\nfd00:c5e3::[0-9a-f:]+ 200\n$/);
      await session.recording.flush();
      expect(
        rows("SELECT domain, path, status_code FROM net_events WHERE path IN ('/v1/curl-ipv4', '/v1/curl-ipv6') ORDER BY seq"),
      ).toEqual([
        { domain: TLS_HOST, path: '/v1/curl-ipv4', status_code: 200 },
        { domain: TLS_HOST, path: '/v1/curl-ipv6', status_code: 200 },
      ]);
      expect(rows("SELECT DISTINCT type FROM dns_events WHERE name = ? AND process_name = 'curl' ORDER BY type", TLS_HOST)).toEqual([
        { type: 'A' },
        { type: 'AAAA' },
      ]);
    }, 120_000);

    it("records Python's http.client, which never reads the proxy variables, over HTTPS", async () => {
      writeFileSync(
        join(session.paths.workspaceDir, 'client.py'),
        [
          'import http.client, ssl',
          `c = http.client.HTTPSConnection("${TLS_HOST}", context=ssl.create_default_context(), timeout=30)`,
          'c.request("POST", "/v1/python", body=b\'{"hello": "from python"}\', headers={"content-type": "application/json"})',
          'r = c.getresponse()',
          'print(r.status, r.read().decode())',
        ].join('\n'),
      );
      const r = await run('python3 client.py');
      expect(r.code, r.err).toBe(0);
      expect(r.out).toBe(`200 ${JSON.stringify({ path: '/v1/python' })}\n`);
      await session.recording.flush();
      expect(
        rows(
          "SELECT domain, method, path, status_code, process_name, length(b.body) AS sent FROM net_events n JOIN event_body_blobs b ON b.event_id = n.event_id AND b.direction = 'request' WHERE n.path = '/v1/python'",
        ),
      ).toEqual([{ domain: TLS_HOST, method: 'POST', path: '/v1/python', status_code: 200, process_name: 'python3', sent: 24 }]);
      expect(rows("SELECT DISTINCT name, process_name FROM dns_events WHERE process_name = 'python3'")).toEqual([
        { name: TLS_HOST, process_name: 'python3' },
      ]);
    }, 120_000);

    it("records Node's https.request in a program that ignores the proxy variables (its own agent, no preload)", async () => {
      writeFileSync(
        join(session.paths.workspaceDir, 'own-agent.mjs'),
        `
import https from 'node:https';
const req = https.request({ host: '${TLS_HOST}', path: '/v1/node-own-agent', method: 'POST', agent: new https.Agent(), headers: { 'content-type': 'application/json' } }, (res) => {
  let body = '';
  res.on('data', (c) => (body += c));
  res.on('end', () => console.log(res.statusCode, body));
});
req.on('error', (e) => { console.error(String(e)); process.exit(1); });
req.end('{"from":"node"}');
`,
      );
      // No NODE_OPTIONS: the preload that routes Node's global agents through the proxy is not loaded.
      const r = await run('env -u NODE_OPTIONS -u HTTPS_PROXY -u HTTP_PROXY -u https_proxy -u http_proxy node own-agent.mjs');
      expect(r.code, r.err).toBe(0);
      expect(r.out).toBe(`200 ${JSON.stringify({ path: '/v1/node-own-agent' })}\n`);
      await session.recording.flush();
      expect(
        rows("SELECT domain, port, method, status_code, decision, process_name FROM net_events WHERE path = '/v1/node-own-agent'"),
      ).toEqual([{ domain: TLS_HOST, port: 443, method: 'POST', status_code: 200, decision: 'allowed', process_name: 'node' }]);
      expect(rows("SELECT DISTINCT name, decision FROM dns_events WHERE process_name = 'node' AND name = ?", TLS_HOST)).toEqual([
        { name: TLS_HOST, decision: 'allowed' },
      ]);
    }, 120_000);

    it('records a WebSocket client with no proxy support, its upgrade and its frames', async () => {
      copyPackageClosure('ws', session.paths.workspaceDir);
      writeFileSync(
        join(session.paths.workspaceDir, 'chat.cjs'),
        `
const WebSocket = require('ws');
const ws = new WebSocket('ws://${WS_HOST}/chat');
ws.on('open', () => ws.send('hello, transparently'));
ws.on('message', (m) => { console.log(m.toString()); ws.close(1000, 'bye'); });
ws.on('error', (e) => { console.error(String(e)); process.exit(1); });
`,
      );
      const r = await run('node chat.cjs');
      expect(r.err).toBe('');
      expect(r.out).toBe('echo:hello, transparently\n');
      await session.recording.flush();
      const [exchange] = rows<{ event_id: string; status_code: number; conn_type: string; process_name: string }>(
        'SELECT event_id, status_code, conn_type, process_name FROM net_events WHERE domain = ?',
        WS_HOST,
      );
      expect(exchange).toMatchObject({ status_code: 101, conn_type: 'websocket', process_name: 'node' });
      const frames = rows<{ direction: string; opcode: string; content: string }>(
        'SELECT direction, opcode, content FROM ws_frames WHERE net_event_id = ? ORDER BY id',
        exchange!.event_id,
      );
      expect(frames.filter((f) => f.direction === 'sent')).toEqual([
        { direction: 'sent', opcode: 'text', content: 'hello, transparently' },
        { direction: 'sent', opcode: 'close', content: '1000 bye' },
      ]);
      expect(frames.find((f) => f.direction === 'received')).toEqual({
        direction: 'received',
        opcode: 'text',
        content: 'echo:hello, transparently',
      });
    }, 120_000);

    it("refuses and records every transparent way to the host's loopback or private space, and a name the policy denies", async () => {
      const port = secret.port;
      const attempts = [
        // A name the host resolves to its own loopback: the guest's /etc/hosts knows only `localhost`.
        { label: 'localhost.', url: `http://localhost.:${port}/v1/sessions`, domain: 'localhost', kind: 'destination_private' },
        { label: 'NAT64', url: `http://[64:ff9b::7f00:1]:${port}/v1/sessions`, domain: '64:ff9b::7f00:1', kind: 'destination_private' },
        { label: '6to4', url: `http://[2002:7f00:1::]:${port}/v1/sessions`, domain: '2002:7f00:1::', kind: 'destination_private' },
        { label: 'private IPv4', url: `http://10.0.0.1:${port}/`, domain: '10.0.0.1', kind: 'destination_private' },
        { label: 'a stand-in given to no name', url: `http://198.18.250.1:${port}/`, domain: '198.18.250.1', kind: 'destination_private' },
        {
          label: 'a name the policy denies',
          url: 'http://metadata.google.internal/computeMetadata/v1/',
          domain: 'metadata.google.internal',
          kind: 'destination_denied',
        },
      ];
      writeFileSync(
        join(session.paths.workspaceDir, 'escape.py'),
        [
          'import json, sys, urllib.parse, http.client',
          'out = []',
          'for url in json.load(open("attempts.json")):',
          '    u = urllib.parse.urlsplit(url)',
          '    try:',
          '        c = http.client.HTTPConnection(u.hostname, u.port or 80, timeout=30)',
          '        c.request("GET", u.path)',
          '        r = c.getresponse()',
          '        out.append([r.status, r.read().decode()[:300]])',
          '    except Exception as e:',
          '        out.append([0, repr(e)])',
          'print(json.dumps(out))',
        ].join('\n'),
      );
      writeFileSync(join(session.paths.workspaceDir, 'attempts.json'), JSON.stringify(attempts.map((a) => a.url)));
      const r = await run('python3 escape.py');
      expect(r.code, r.err).toBe(0);
      const answers = JSON.parse(r.out) as [number, string][];
      expect(answers.map(([status], i) => [attempts[i]!.label, status])).toEqual(attempts.map((a) => [a.label, 403]));
      expect(answers.some(([, body]) => body.includes(LOOPBACK_SECRET))).toBe(false);
      expect(secret.hits).toBe(0);
      await session.recording.flush();
      const refused = rows<{ domain: string; decision: string; error_kind: string; process_name: string }>(
        `SELECT domain, decision, error_kind, process_name FROM net_events WHERE domain IN (${attempts.map(() => '?').join(', ')}) ORDER BY seq`,
        ...attempts.map((a) => a.domain),
      );
      expect(refused).toEqual(attempts.map((a) => ({ domain: a.domain, decision: 'denied', error_kind: a.kind, process_name: 'python3' })));
      // The denied name was never sent to a resolver; localhost was, and the connection, not the lookup, was refused.
      expect(
        rows(
          "SELECT name, decision, matched_rule, resolved FROM dns_events WHERE name IN ('metadata.google.internal', 'localhost') AND type = 'A' ORDER BY seq",
        ),
      ).toEqual([
        { name: 'localhost', decision: 'allowed', matched_rule: 'default.allow-public', resolved: expect.stringContaining('127.0.0.1') },
        { name: 'metadata.google.internal', decision: 'denied', matched_rule: 'default.deny-cloud-metadata', resolved: '[]' },
      ]);
    }, 120_000);

    it("refuses a Host that fronts the host's loopback behind a name reached transparently, plain and inside TLS", async () => {
      const fronting = `-H 'Host: 127.0.0.1:${secret.port}'`;
      const r = await run(
        [
          `curl -sS --noproxy '*' ${fronting} -o /dev/null -w '%{http_code}\\n' http://${PLAIN_HOST}/fronted-plain`,
          `curl -sS --noproxy '*' ${fronting} -o /dev/null -w '%{http_code}\\n' https://${TLS_HOST}/fronted-tls`,
        ].join(' && '),
      );
      expect(r.code, r.err).toBe(0);
      expect(r.out).toBe('421\n421\n');
      expect(secret.hits).toBe(0);
      expect(plainHits).not.toContain('/fronted-plain');
      await session.recording.flush();
      expect(
        rows(
          "SELECT domain, status_code, decision, error_kind, process_name FROM net_events WHERE path IN ('/fronted-plain', '/fronted-tls') ORDER BY seq",
        ),
      ).toEqual([
        { domain: PLAIN_HOST, status_code: 421, decision: 'denied', error_kind: 'misdirected_request', process_name: 'curl' },
        { domain: TLS_HOST, status_code: 421, decision: 'denied', error_kind: 'misdirected_request', process_name: 'curl' },
      ]);
    }, 120_000);

    it('refuses and records what is neither TLS nor HTTP, and answers DNS over TCP too', async () => {
      writeFileSync(
        join(session.paths.workspaceDir, 'other.py'),
        [
          'import socket, struct, time',
          // A protocol whose client speaks first, in bytes that are no HTTP request.
          `s = socket.create_connection(("${PLAIN_HOST}", 5432), timeout=30)`,
          's.sendall(bytes([0, 0, 0, 8, 4, 210, 22, 47]))',
          'print("binary", s.recv(12))',
          // One whose server speaks first: the client waits for a banner that never comes.
          `s = socket.create_connection(("${PLAIN_HOST}", 22), timeout=30)`,
          't = time.time()',
          'print("silent", s.recv(10), round(time.time() - t) >= 9)',
          // A DNS query over TCP to the answerer.
          `q = struct.pack(">HHHHHH", 77, 0x0100, 1, 0, 0, 0) + b"".join(bytes([len(p)]) + p.encode() for p in "${TLS_HOST}".split(".")) + b"\\0" + struct.pack(">HH", 1, 1)`,
          's = socket.create_connection(("127.0.0.53", 53), timeout=30)',
          's.sendall(struct.pack(">H", len(q)) + q)',
          'n = struct.unpack(">H", s.recv(2))[0]',
          'a = s.recv(n)',
          'print("tcp-dns", struct.unpack(">H", a[:2])[0], a[-4:] == bytes([198, 18, 0, 1]) or ".".join(map(str, a[-4:])))',
        ].join('\n'),
      );
      const r = await run('python3 other.py');
      expect(r.code, r.err).toBe(0);
      const [binary, silent, tcpDns] = r.out.trim().split('\n');
      expect(binary).toBe("binary b'HTTP/1.1 400'");
      expect(silent).toBe("silent b'' True");
      expect(tcpDns).toMatch(/^tcp-dns 77 (True|198\.18\.\d+\.\d+)$/);
      await session.recording.flush();
      expect(
        rows(
          'SELECT port, kind, decision, matched_rule, process_name FROM (SELECT port, conn_type AS kind, decision, matched_rule, process_name, seq FROM net_events WHERE domain = ? AND port IN (5432, 22)) ORDER BY seq',
          PLAIN_HOST,
        ),
      ).toEqual([
        { port: 5432, kind: expect.any(String), decision: 'denied', matched_rule: 'proxy.malformed-request', process_name: 'python3' },
        { port: 22, kind: expect.any(String), decision: 'denied', matched_rule: 'proxy.not-http', process_name: 'python3' },
      ]);
      expect(plainHits).toEqual(['/curl-plain']);
    }, 120_000);
  },
);

describe.skipIf(noAgentImage !== null)(
  `capsem run, agent image: a program that ignores the proxy, recorded with its lookup${noAgentImage ? ` (skipped: ${noAgentImage})` : ''}`,
  () => {
    const home = vmTestHome();
    let upstream: Upstream;

    beforeAll(async () => {
      const upHome = tempHome();
      upstream = await startUpstream(upHome, [TLS_HOST], (req, _body, res) => json(res, 200, { path: req.url }));
      upHome.remove();
    });

    afterAll(async () => {
      await upstream?.close();
      home.remove();
    });

    it("records curl --noproxy '*' run by capsem run from the user's folder, its lookup in dns_events, and capsem check reads the session", async () => {
      const caFile = join(home.root, 'upstream-ca.pem');
      writeFileSync(caFile, upstream.caPem);
      const env = { CAPSEM_RESOLVE: `${TLS_HOST}:443=127.0.0.1:${upstream.port}`, CAPSEM_UPSTREAM_CA_FILE: caFile };
      const r = await runCapsemAsync(
        home.root,
        ['run', '--image', 'agent', '--name', 'direct1', '--', 'curl', '-sS', '--noproxy', '*', `https://${TLS_HOST}/v1/cli`],
        env,
        { timeoutMs: 600_000 },
      );
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toBe(JSON.stringify({ path: '/v1/cli' }));
      const sql = async <T>(query: string): Promise<T[]> => {
        const q = await runCapsemAsync(home.root, ['sql', 'direct1', query, '--json']);
        expect(q.code, q.stderr).toBe(0);
        return JSON.parse(q.stdout) as T[];
      };
      expect(await sql("SELECT domain, path, status_code, process_name FROM net_events WHERE path = '/v1/cli'")).toEqual([
        { domain: TLS_HOST, path: '/v1/cli', status_code: 200, process_name: 'curl' },
      ]);
      expect(await sql(`SELECT DISTINCT name, rcode, decision, process_name FROM dns_events WHERE name = '${TLS_HOST}'`)).toEqual([
        { name: TLS_HOST, rcode: 'NOERROR', decision: 'allowed', process_name: 'curl' },
      ]);
      const check = await runCapsemAsync(home.root, ['check', 'direct1']);
      expect(check.code, check.stdout + check.stderr).toBe(0);
    }, 660_000);
  },
);
