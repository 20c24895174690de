import { createSocket, type Socket } from 'node:dgram';
import { Resolver } from 'node:dns/promises';
import type { AddressInfo } from 'node:net';
import { Duplex } from 'node:stream';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { framed, parseDnsQuery } from '../../../electron/proxy/dnsMessage.ts';
import { createGuestDns, type GuestLookup } from '../../../electron/proxy/guestDns.ts';
import { decideName, parsePolicy } from '../../../electron/policy/policy.ts';
import { parseResolveMap } from '../../../electron/proxy/resolveMap.ts';
import { StandInAddresses } from '../../../electron/proxy/standInAddresses.ts';

// The guest's DNS answerer asked by a real resolver: Node's c-ares, pointed at a UDP socket that
// plays the agent's part (each datagram becomes a length-prefixed stream, as PROTOCOL.md says).

const POLICY = parsePolicy(
  JSON.stringify({
    version: 1,
    rules: [
      { id: 'deny-exfil', action: 'deny', domains: ['*.exfil.example'] },
      { id: 'deny-metadata', action: 'deny', domains: ['metadata.google.internal'] },
      { id: 'only-post', action: 'allow', domains: ['post.example'], ports: [8443], methods: ['POST'] },
      { id: 'deny-post', action: 'deny', domains: ['post.example'] },
      { id: 'allow-public', action: 'allow', domains: ['*'] },
    ],
  }),
  'test',
);

interface Answerer {
  readonly port: number;
  readonly lookups: GuestLookup[];
  readonly asked: string[];
  readonly names: StandInAddresses;
  unrecordable: string | null;
  close(): void;
}

/** One stream per datagram, as the agent makes them: the query framed, then the end. */
function datagramStream(query: Buffer, answer: (reply: Buffer) => void): Duplex {
  let held = Buffer.alloc(0);
  const stream = new Duplex({
    read() {},
    write(chunk: Buffer, _encoding, callback) {
      held = Buffer.concat([held, chunk]);
      while (held.length >= 2 && held.length >= 2 + held.readUInt16BE(0)) {
        answer(held.subarray(2, 2 + held.readUInt16BE(0)));
        held = held.subarray(2 + held.readUInt16BE(0));
      }
      callback();
    },
  });
  stream.push(framed(query));
  stream.push(null);
  return stream;
}

const open: Answerer[] = [];

async function startAnswerer(resolve = ''): Promise<Answerer> {
  const asked: string[] = [];
  const lookups: GuestLookup[] = [];
  const names = new StandInAddresses();
  const known: Record<string, string[]> = {
    'api.example.com': ['93.184.215.14', '2606:2800:21f:cb07:6820:80da:af6b:8b2c'],
    'post.example': ['93.184.215.15'],
    'slow.example': [],
  };
  const state: Answerer = {
    port: 0,
    lookups,
    asked,
    names,
    unrecordable: null,
    close: () => socket.close(),
  };
  const dns = createGuestDns({
    policy: { decideName: (host) => decideName(POLICY, host) },
    resolve: parseResolveMap(resolve),
    names,
    onLookup: (l) => lookups.push(l),
    refusal: () => state.unrecordable,
    lookupTimeoutMs: 300,
    lookup: async (name) => {
      asked.push(name);
      if (name === 'slow.example') return new Promise<string[]>(() => {});
      if (name === 'broken.example') throw Object.assign(new Error('resolver broke'), { code: 'EAI_FAIL' });
      const addresses = known[name];
      if (!addresses) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${name}`), { code: 'ENOTFOUND' });
      return addresses;
    },
  });
  const socket: Socket = createSocket('udp4');
  socket.on('message', (query, from) => {
    dns.serve(
      datagramStream(query, (reply) => socket.send(reply, from.port, from.address)),
      { processName: 'python3', pid: 77 },
      'udp',
    );
  });
  await new Promise<void>((r) => socket.bind(0, '127.0.0.1', r));
  (state as { port: number }).port = (socket.address() as AddressInfo).port;
  open.push(state);
  return state;
}

function resolverFor(answerer: Answerer): Resolver {
  const resolver = new Resolver({ timeout: 2000, tries: 1 });
  resolver.setServers([`127.0.0.1:${answerer.port}`]);
  return resolver;
}

afterEach(() => {
  for (const a of open.splice(0)) a.close();
});

describe('the guest DNS answerer, asked by c-ares', () => {
  it('answers A and AAAA with stand-ins the name keeps, and records where the name really goes', async () => {
    const a = await startAnswerer();
    const r = resolverFor(a);
    const v4 = await r.resolve4('API.Example.com');
    const v6 = await r.resolve6('api.example.com');
    expect(v4).toEqual(['198.18.0.1']);
    expect(v6).toEqual(['fd00:c5e3::c612:1']);
    expect(await r.resolve4('api.example.com', { ttl: true })).toEqual([{ address: '198.18.0.1', ttl: 60 }]);
    expect(a.names.nameAt('198.18.0.1')).toBe('api.example.com');
    expect(
      a.lookups.slice(0, 2).map(({ name, type, rcode, answers, resolved, decision, matchedRule, processName, pid }) => ({
        name,
        type,
        rcode,
        answers,
        resolved,
        decision,
        matchedRule,
        processName,
        pid,
      })),
    ).toEqual([
      {
        name: 'api.example.com',
        type: 'A',
        rcode: 'NOERROR',
        answers: ['198.18.0.1'],
        resolved: ['93.184.215.14', '2606:2800:21f:cb07:6820:80da:af6b:8b2c'],
        decision: 'allowed',
        matchedRule: 'allow-public',
        processName: 'python3',
        pid: 77,
      },
      {
        name: 'api.example.com',
        type: 'AAAA',
        rcode: 'NOERROR',
        answers: ['fd00:c5e3::c612:1'],
        resolved: ['93.184.215.14', '2606:2800:21f:cb07:6820:80da:af6b:8b2c'],
        decision: 'allowed',
        matchedRule: 'allow-public',
        processName: 'python3',
        pid: 77,
      },
    ]);
  });

  it('takes a name CAPSEM_RESOLVE maps from the map, on whatever port it names, without asking the resolver', async () => {
    const a = await startAnswerer('local.example:8443=127.0.0.1:9000');
    expect(await resolverFor(a).resolve4('local.example')).toEqual(['198.18.0.1']);
    expect(a.asked).toEqual([]);
    expect(a.lookups[0]).toMatchObject({ name: 'local.example', resolved: ['127.0.0.1'], decision: 'allowed' });
  });

  it('never sends a name the policy denies to the resolver, and still gives it a stand-in whose connection will be refused', async () => {
    const a = await startAnswerer();
    const r = resolverFor(a);
    expect(await r.resolve4('secret-data.exfil.example')).toEqual(['198.18.0.1']);
    expect(await r.resolve4('metadata.google.internal')).toEqual(['198.18.0.2']);
    expect(a.asked).toEqual([]);
    expect(a.lookups.map((l) => [l.name, l.decision, l.matchedRule, l.resolved])).toEqual([
      ['secret-data.exfil.example', 'denied', 'deny-exfil', []],
      ['metadata.google.internal', 'denied', 'deny-metadata', []],
    ]);
  });

  it('lets a name be looked up when some port and method would reach it', async () => {
    const a = await startAnswerer();
    expect(await resolverFor(a).resolve4('post.example')).toEqual(['198.18.0.1']);
    expect(a.lookups[0]).toMatchObject({ decision: 'allowed', matchedRule: 'only-post' });
  });

  it('says NXDOMAIN for a name that does not resolve, SERVFAIL when the resolver fails or is slow, and records each', async () => {
    const a = await startAnswerer();
    const r = resolverFor(a);
    await expect(r.resolve4('nowhere.example')).rejects.toMatchObject({ code: 'ENOTFOUND' });
    await expect(r.resolve4('broken.example')).rejects.toMatchObject({ code: 'ESERVFAIL' });
    await expect(r.resolve4('slow.example')).rejects.toMatchObject({ code: 'ESERVFAIL' });
    expect(a.lookups.map((l) => [l.name, l.rcode, l.answers])).toEqual([
      ['nowhere.example', 'NXDOMAIN', []],
      ['broken.example', 'SERVFAIL', []],
      ['slow.example', 'SERVFAIL', []],
    ]);
    expect(a.lookups[2]!.error).toMatch(/did not answer within 300 ms/);
  });

  it('answers other record types with no records, without asking the resolver', async () => {
    const a = await startAnswerer();
    const r = resolverFor(a);
    await expect(r.resolveTxt('data.api.example.com')).rejects.toMatchObject({ code: 'ENODATA' });
    await expect(r.resolveMx('api.example.com')).rejects.toMatchObject({ code: 'ENODATA' });
    expect(a.asked).toEqual([]);
    expect(a.lookups.map((l) => [l.name, l.type, l.rcode])).toEqual([
      ['data.api.example.com', 'TXT', 'NOERROR'],
      ['api.example.com', 'MX', 'NOERROR'],
    ]);
  });

  it('refuses every query, unresolved, once the session cannot be recorded', async () => {
    const a = await startAnswerer();
    a.unrecordable = 'the disk is full';
    await expect(resolverFor(a).resolve4('api.example.com')).rejects.toMatchObject({ code: 'EREFUSED' });
    expect(a.asked).toEqual([]);
    expect(a.lookups[0]).toMatchObject({
      rcode: 'REFUSED',
      decision: 'denied',
      error: 'this session cannot be recorded: the disk is full',
    });
  });
});

describe('the guest DNS answerer, sent hostile bytes', () => {
  it('answers FORMERR to what it cannot read, records it, and never throws (property)', async () => {
    const lookups: GuestLookup[] = [];
    const dns = createGuestDns({
      policy: { decideName: (host) => decideName(POLICY, host) },
      names: new StandInAddresses(),
      onLookup: (l) => lookups.push(l),
      lookup: async () => ['93.184.215.14'],
    });
    await fc.assert(
      fc.asyncProperty(fc.uint8Array({ maxLength: 600 }), async (bytes) => {
        const replies: Buffer[] = [];
        const stream = datagramStream(Buffer.from(bytes), (reply) => replies.push(reply));
        const finished = new Promise<void>((r) => stream.on('finish', () => r()));
        dns.serve(stream, {}, 'udp');
        await finished;
        const parsed = parseDnsQuery(Buffer.from(bytes));
        if (!('rcode' in parsed)) return;
        expect(replies.length).toBe(parsed.id === null ? 0 : 1);
        if (replies[0]) {
          expect(replies[0].readUInt16BE(0)).toBe(parsed.id);
          expect(replies[0].readUInt16BE(2) & 0xf).toBe(parsed.rcode === 'FORMERR' ? 1 : 4);
        }
      }),
      { numRuns: 300 },
    );
    expect(lookups.every((l) => l.name.length <= 300)).toBe(true);
  });

  it('reads a name only as a host name: labels of other bytes, compression pointers and overlong names are refused', () => {
    const query = (labels: Buffer[]): Buffer =>
      Buffer.concat([
        Buffer.from([0, 7, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0]),
        ...labels.map((l) => Buffer.concat([Buffer.from([l.length]), l])),
        Buffer.from([0, 0, 1, 0, 1]),
      ]);
    expect(parseDnsQuery(query([Buffer.from('Good-Name'), Buffer.from('example')]))).toMatchObject({
      id: 7,
      name: 'good-name.example',
      type: 1,
    });
    expect(parseDnsQuery(query([Buffer.from('a b'), Buffer.from('example')]))).toMatchObject({
      rcode: 'FORMERR',
      reason: expect.stringMatching(/not a host name/),
    });
    expect(parseDnsQuery(query([Buffer.from([0xc3, 0xa9]), Buffer.from('example')]))).toMatchObject({ rcode: 'FORMERR' });
    expect(parseDnsQuery(Buffer.concat([Buffer.from([0, 7, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0xc0, 0x0c, 0, 1, 0, 1])]))).toMatchObject({
      rcode: 'FORMERR',
      reason: expect.stringMatching(/compression pointer/),
    });
    expect(parseDnsQuery(query(new Array(5).fill(Buffer.alloc(60, 'a'))))).toMatchObject({
      rcode: 'FORMERR',
      reason: expect.stringMatching(/over 255/),
    });
    expect(parseDnsQuery(Buffer.from([0, 7, 0x28, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 1]))).toMatchObject({ rcode: 'NOTIMP' });
  });
});
