import { createSocket, type Socket as UdpSocket } from 'node:dgram';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Duplex } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { canonicalHost } from '../../electron/policy/addresses.ts';
import { framed } from '../../electron/proxy/dnsMessage.ts';
import { startRecording, type Recording } from '../../electron/recording/sessionRecording.ts';
import type { VmHost } from '../../electron/vm/vmHost.ts';
import type { VmSession } from '../../electron/vm/vmSession.ts';
import { LOOPBACK_SECRET, startLoopbackSecret, type LoopbackSecret } from '../helpers/escapeAttempts.ts';
import { controlHostResolver, type HostResolver } from '../helpers/hostResolver.ts';
import { json, startUpstream, type Upstream } from '../helpers/mockUpstreams.ts';
import { sessionRows } from '../helpers/sessionRows.ts';
import { tempHome } from '../helpers/tempHome.ts';
import { agentImageUnavailable, guestRun, startAgentVm, vmTestHome } from '../helpers/vmTestHome.ts';

// Inside a real VM (agent image), what the transparent path and the DNS answerer must not carry:
// a connection to a stand-in address no name holds in this session (one never given, one another
// session's answerer gave out), raw IPv6 (the guest's ::1, the agent's transparent listener dialled
// directly, link-local, the IPv4-compatible form, an unassigned stand-in), UDP that is not DNS, and
// a name that answered public when it was looked up and private when the proxy dials it. Nothing
// reaches the host's loopback (a server there counts every request): what reaches the host is
// refused and recorded as denied, and what cannot (UDP to anywhere, a scoped link-local
// connection) goes out on the guest's dummy interface, to nothing. One VM serves every case.

const noAgentImage = agentImageUnavailable();
const TLS_HOST = 'api.escapes.example';
/** Names the other session looks up; its first and last go to the host's loopback, on purpose, for it alone. */
const OTHER_NAMES = Array.from({ length: 300 }, (_, i) => `n${i}.other-session.example`);
const REBIND = 'rebind.escapes.example';
const PUBLIC_ADDRESS = '93.184.215.14';

/** A DNS query for `name` (type 1 A, 28 AAAA), as a guest's resolver sends it. */
function dnsQuery(name: string, type: 1 | 28): Buffer {
  const labels = name.split('.').map((label) => Buffer.concat([Buffer.from([label.length]), Buffer.from(label)]));
  const question = Buffer.alloc(4);
  question.writeUInt16BE(type, 0);
  question.writeUInt16BE(1, 2);
  return Buffer.concat([Buffer.from([0, 1, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0]), ...labels, Buffer.from([0]), question]);
}

/** The address another session's DNS answerer gives for `name`, asked as its agent hands a guest's query over. */
function otherSessionAnswer(other: Recording, name: string, type: 1 | 28): Promise<string> {
  return new Promise((resolve, reject) => {
    let reply = Buffer.alloc(0);
    const stream = new Duplex({
      read() {},
      write(chunk: Buffer, _encoding, callback) {
        reply = Buffer.concat([reply, chunk]);
        callback();
      },
      final(callback) {
        // The answer's last record is the address: 4 bytes of A, 16 of AAAA.
        const rdata = reply.subarray(reply.length - (type === 1 ? 4 : 16));
        const spelled = type === 1 ? [...rdata].join('.') : (rdata.toString('hex').match(/.{4}/g) ?? []).join(':');
        resolve(canonicalHost(spelled)!.host);
        callback();
      },
    });
    stream.on('error', reject);
    other.proxy.answerLookups(stream, { processName: 'other-guest' }, 'udp');
    stream.push(framed(dnsQuery(name, type)));
    stream.push(null);
  });
}

/** A guest script's answers: one JSON line per probe, `[label, what came back]`. */
function answersOf(out: string): Record<string, string> {
  return Object.fromEntries(JSON.parse(out.trim().split('\n').at(-1) ?? '[]') as [string, string][]);
}

describe.skipIf(noAgentImage !== null)(
  `real VM, agent image: nothing leaves by the transparent path or the DNS answerer${noAgentImage ? ` (skipped: ${noAgentImage})` : ''}`,
  () => {
    const home = vmTestHome();
    let upstream: Upstream;
    let secret: LoopbackSecret;
    let resolver: HostResolver;
    let rebindTo = PUBLIC_ADDRESS;
    let other: Recording;
    let host: VmHost;
    let session: VmSession;

    const run = (script: string, file: string) => {
      writeFileSync(join(session.paths.workspaceDir, file), script);
      return guestRun(session, ['python3', file], { cwd: '/workspace' });
    };
    const rows = <T>(sql: string, ...params: unknown[]): T[] => sessionRows<T>(session.paths.dbPath, sql, ...params);

    beforeAll(async () => {
      secret = await startLoopbackSecret();
      // The host's resolver, as a DNS server the test runs: the other session's names are public
      // addresses, TLS_HOST on another port than its upstream's is the host's loopback, and REBIND
      // is whatever the test says at the moment it is looked up.
      resolver = controlHostResolver((name) => {
        if (name === REBIND) return rebindTo;
        if (name === TLS_HOST) return '127.0.0.1';
        return name.endsWith('.other-session.example') ? PUBLIC_ADDRESS : undefined;
      });
      const upHome = tempHome();
      upstream = await startUpstream(upHome, [TLS_HOST], (req, _body, res) => json(res, 200, { path: req.url }));
      upHome.remove();
      // Another session of the same home, its proxy and DNS answerer running, some of its names sent to the host's loopback for it alone.
      other = await startRecording(home, {
        name: 'other',
        command: ['other'],
        env: {
          ...process.env,
          CAPSEM_RESOLVE: `${OTHER_NAMES[0]}:80=127.0.0.1:${secret.port},${OTHER_NAMES.at(-1)}:80=127.0.0.1:${secret.port}`,
        },
      });
      ({ host, session } = await startAgentVm(home, upstream, [TLS_HOST]));
    }, 900_000);

    afterAll(async () => {
      await host?.stopAll();
      await other?.stop({ status: 'stopped' });
      resolver?.restore();
      await upstream?.close();
      secret?.close();
      home.remove();
    });

    /** One HTTP request with a raw socket: to `address` (any spelling Python takes) and `port`, naming `host`, given up after `timeout` s (30). */
    interface Probe {
      readonly label: string;
      readonly address: string;
      readonly port: number;
      readonly host: string;
      readonly timeout?: number;
    }

    /** Runs the probes in the guest (python3, raw sockets); each probe's status line, or the error that stopped it. */
    async function probe(probes: readonly Probe[], file: string): Promise<Record<string, string>> {
      const script = [
        'import json, socket',
        'def probe(address, port, host, timeout):',
        '    try:',
        '        family = socket.AF_INET6 if ":" in address else socket.AF_INET',
        '        s = socket.socket(family, socket.SOCK_STREAM)',
        '        s.settimeout(timeout)',
        '        s.connect(socket.getaddrinfo(address, port, family, socket.SOCK_STREAM)[0][4])',
        '        s.sendall(("GET /escape HTTP/1.1\\r\\nHost: %s\\r\\nConnection: close\\r\\n\\r\\n" % host).encode())',
        '        got = b""',
        '        while True:',
        '            piece = s.recv(65536)',
        '            if not piece: break',
        '            got += piece',
        '        return got.decode("latin1")',
        '    except Exception as e:',
        '        return type(e).__name__',
        `probes = json.loads(${JSON.stringify(JSON.stringify(probes))})`,
        'print(json.dumps([[p["label"], probe(p["address"], p["port"], p["host"], p.get("timeout", 30))] for p in probes]))',
      ].join('\n');
      const r = await run(script, file);
      expect(r.code, r.err).toBe(0);
      const answers = answersOf(r.out);
      expect(Object.values(answers).some((a) => a.includes(LOOPBACK_SECRET))).toBe(false);
      return Object.fromEntries(
        Object.entries(answers).map(([label, answer]) => [label, answer.split('\r\n')[0] || 'closed with nothing']),
      );
    }

    it("refuses a stand-in no name holds here, those another session's answerer gave out included, over IPv4 and IPv6", async () => {
      // In turn: a session gives stand-ins in the order it answers.
      const given: string[] = [];
      for (const name of OTHER_NAMES) given.push(await otherSessionAnswer(other, name, 1));
      const otherLastV6 = await otherSessionAnswer(other, OTHER_NAMES.at(-1)!, 28);
      expect([given[0], given.at(-1), otherLastV6]).toEqual(['198.18.0.1', '198.18.1.44', 'fd00:c5e3::c612:12c']);
      // This session's first name takes the first stand-in here, the one the other session gave the first of its names.
      const own = await guestRun(session, ['getent', 'ahostsv4', TLS_HOST]);
      expect(own.out.split(/\s+/)[0]).toBe(given[0]);
      const port = secret.port;
      const at = (label: string, address: string, domain = address): Probe & { domain: string } => ({
        label,
        address,
        port,
        host: `${address.includes(':') ? `[${address}]` : address}:${port}`,
        domain,
      });
      const probes = [
        at('the last stand-in, never given', '198.19.255.254'),
        at('the range itself', '198.18.0.0'),
        at("the other session's stand-in for a name it sends to the host's loopback", given.at(-1)!),
        at('the same, its IPv6 twin', otherLastV6),
        at('an IPv6 stand-in never given', 'fd00:c5e3::c613:ffff'),
        at('the IPv6 stand-in prefix, outside the range', 'fd00:c5e3::1:2'),
        // The same address as the other session's first name, which goes to the host's loopback there: here it is this session's own name.
        { ...at("the other session's first stand-in, this session's own", given[0]!, TLS_HOST), host: `${TLS_HOST}:${port}` },
      ];
      const answers = await probe(probes, 'stand-ins.py');
      expect(probes.map((p) => [p.label, answers[p.label]])).toEqual(probes.map((p) => [p.label, 'HTTP/1.1 403 Forbidden']));
      expect(secret.hits).toBe(0);
      await session.recording.flush();
      expect(
        rows<{ domain: string; decision: string; error_kind: string; process_name: string }>(
          "SELECT domain, decision, error_kind, process_name FROM net_events WHERE path = '/escape' ORDER BY seq",
        ),
      ).toEqual(probes.map((p) => ({ domain: p.domain, decision: 'denied', error_kind: 'destination_private', process_name: 'python3' })));
    }, 180_000);

    it("keeps raw IPv6 in: ::1 is the guest's own, the transparent listener takes no connection made to it, link-local goes nowhere, the IPv4-compatible form and link-local IPv4 are refused and recorded", async () => {
      const port = secret.port;
      const probes: Probe[] = [
        { label: "the guest's own ::1", address: '::1', port, host: `[::1]:${port}` },
        { label: "the guest's own loopback, IPv4-mapped", address: '::ffff:127.0.0.1', port, host: `127.0.0.1:${port}` },
        { label: 'the transparent listener itself, on ::1', address: '::1', port: 3129, host: '[::1]:3129' },
        { label: 'the transparent listener itself, on 127.0.0.1', address: '127.0.0.1', port: 3129, host: '127.0.0.1:3129' },
        { label: 'link-local IPv6', address: 'fe80::1%capsem0', port, host: `[fe80::1]:${port}`, timeout: 5 },
        { label: 'link-local IPv4, where cloud metadata lives', address: '169.254.169.254', port: 80, host: '169.254.169.254' },
        { label: "the host's loopback in the IPv4-compatible form", address: '::7f00:1', port, host: `[::7f00:1]:${port}` },
      ];
      const first = rows<{ seq: number }>('SELECT coalesce(max(seq), 0) AS seq FROM net_events')[0]!.seq;
      const answers = await probe(probes, 'raw-ipv6.py');
      // Nothing listens at that port on the guest's own loopback: the connection never left the guest.
      expect(answers["the guest's own ::1"]).toBe('ConnectionRefusedError');
      expect(answers["the guest's own loopback, IPv4-mapped"]).toBe('ConnectionRefusedError');
      // The agent closes a connection made to its transparent listener without handing it over.
      expect(answers['the transparent listener itself, on ::1']).toMatch(/^(closed with nothing|ConnectionResetError)$/);
      expect(answers['the transparent listener itself, on 127.0.0.1']).toMatch(/^(closed with nothing|ConnectionResetError)$/);
      // A scoped link-local connection is not redirected (its socket is bound to the dummy interface): it goes out there, to nothing.
      expect(answers['link-local IPv6']).toBe('TimeoutError');
      for (const label of ['link-local IPv4, where cloud metadata lives', "the host's loopback in the IPv4-compatible form"])
        expect([label, answers[label]]).toEqual([label, 'HTTP/1.1 403 Forbidden']);
      expect(secret.hits).toBe(0);
      await session.recording.flush();
      // What reached the host is these two, refused; the guest's own loopback, its listener and link-local reached nothing.
      expect(rows('SELECT domain, decision, error_kind FROM net_events WHERE seq > ? ORDER BY seq', first)).toEqual([
        { domain: '169.254.169.254', decision: 'denied', error_kind: 'destination_denied' },
        { domain: '::7f00:1', decision: 'denied', error_kind: 'destination_private' },
      ]);
      expect(readFileSync(session.paths.serialLogPath, 'utf8')).toContain('refused a connection made to the transparent listener itself');
    }, 180_000);

    it('lets no UDP but DNS out: datagrams to any address go nowhere, and one to port 53 that is no DNS query is refused and recorded', async () => {
      const received: string[] = [];
      const listen = (type: 'udp4' | 'udp6', address: string): Promise<UdpSocket> =>
        new Promise((resolve) => {
          const socket = createSocket(type).on('message', (m) => received.push(m.toString()));
          socket.bind(0, address, () => resolve(socket));
        });
      const v4 = await listen('udp4', '0.0.0.0');
      const v6 = await listen('udp6', '::');
      const port = v4.address().port;
      const port6 = v6.address().port;
      const targets: [string, number][] = [
        ['10.0.2.2', port],
        ['192.0.2.1', port],
        ['198.18.0.1', port],
        ['198.18.0.1', 443],
        ['8.8.8.8', 443],
        ['127.0.0.53', port],
        ['fd00:c5e3::c612:1', port6],
        ['2001:4860:4860::8888', port6],
        ['::ffff:127.0.0.1', port],
      ];
      const script = [
        'import json, socket',
        `targets = ${JSON.stringify(targets)}`,
        'sent = []',
        'for address, port in targets:',
        '    try:',
        '        s = socket.socket(socket.AF_INET6 if ":" in address else socket.AF_INET, socket.SOCK_DGRAM)',
        '        s.sendto(b"capsem-udp-probe", (address, port))',
        '        sent.append([address, "sent"])',
        '    except Exception as e:',
        '        sent.append([address, type(e).__name__])',
        // Port 53 anywhere is the agent's DNS answerer: bytes that are no DNS query get no answer to use.
        's = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)',
        's.settimeout(5)',
        's.sendto(b"not a dns query, only bytes", ("1.1.1.1", 53))',
        'try:',
        '    reply = s.recv(512)',
        '    sent.append(["port 53", "rcode %d" % (reply[3] & 15) if len(reply) >= 4 else "short"])',
        'except Exception as e:',
        '    sent.append(["port 53", type(e).__name__])',
        'print(json.dumps(sent))',
      ].join('\n');
      const r = await run(script, 'udp.py');
      expect(r.code, r.err).toBe(0);
      const answers = answersOf(r.out);
      // Nothing refused the datagrams in the guest: they went out on its dummy interface, to nowhere.
      for (const [address] of targets) expect([address, answers[address]]).toEqual([address, 'sent']);
      expect(answers['port 53']).toMatch(/^(rcode \d+|timeout|TimeoutError)$/);
      await new Promise((resolve) => setTimeout(resolve, 2000));
      v4.close();
      v6.close();
      expect(received).toEqual([]);
      await session.recording.flush();
      expect(
        rows(
          "SELECT name, decision, matched_rule, process_name FROM dns_events WHERE matched_rule = 'proxy.bad-query' AND process_name = 'python3'",
        ),
      ).toEqual([{ name: '(unparsed)', decision: 'denied', matched_rule: 'proxy.bad-query', process_name: 'python3' }]);
    }, 180_000);

    it('judges a name that answered public when looked up and private when dialled on the address it dials, and refuses it (DNS rebinding)', async () => {
      rebindTo = PUBLIC_ADDRESS;
      const workspace = session.paths.workspaceDir;
      const script = [
        'import os, socket, time, http.client',
        `addresses = sorted({a[4][0] for a in socket.getaddrinfo("${REBIND}", 80, 0, socket.SOCK_STREAM)})`,
        // Written whole, then renamed: the host reads it the moment it appears.
        'with open("rebind-resolved.part", "w") as f: f.write(" ".join(addresses))',
        'os.rename("rebind-resolved.part", "rebind-resolved")',
        // The name changes its answer now: the host's resolver says private from here on.
        'while not os.path.exists("rebind-flipped"): time.sleep(0.05)',
        `c = http.client.HTTPConnection("${REBIND}", ${secret.port}, timeout=30)`,
        'c.request("GET", "/rebound")',
        'r = c.getresponse()',
        'print(addresses, r.status, r.read().decode()[:600])',
      ].join('\n');
      const running = run(script, 'rebind.py');
      const deadline = Date.now() + 120_000;
      while (!existsSync(join(workspace, 'rebind-resolved')) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      const given = readFileSync(join(workspace, 'rebind-resolved'), 'utf8').split(' ');
      rebindTo = '127.0.0.1';
      writeFileSync(join(workspace, 'rebind-flipped'), '');
      const r = await running;
      expect(r.code, r.err).toBe(0);
      // The guest was given stand-ins, never the public address or the private one.
      for (const address of given) expect(address).toMatch(/^(198\.1[89]\.|fd00:c5e3::)/);
      expect(r.out).toMatch(/ 403 /);
      expect(r.out).toContain(`${REBIND} (127.0.0.1) is in private address space`);
      expect(secret.hits).toBe(0);
      await session.recording.flush();
      expect(
        rows<{ type: string; resolved: string; decision: string }>(
          'SELECT type, resolved, decision FROM dns_events WHERE name = ? ORDER BY seq',
          REBIND,
        ).map((l) => [l.type, JSON.parse(l.resolved) as string[], l.decision]),
      ).toEqual(expect.arrayContaining([['A', [PUBLIC_ADDRESS], 'allowed']]));
      expect(
        rows('SELECT domain, path, status_code, decision, error_kind, process_name FROM net_events WHERE path = ?', '/rebound'),
      ).toEqual([
        {
          domain: REBIND,
          path: '/rebound',
          status_code: 403,
          decision: 'denied',
          error_kind: 'destination_private',
          process_name: 'python3',
        },
      ]);
    }, 180_000);
  },
);
