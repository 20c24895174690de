import fc from 'fast-check';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  findSocketRow,
  isHeldConnection,
  kernelEndpoint,
  parseSocketRow,
  peerOf,
  socketTableReadable,
  type Byteorder,
  type SocketRow,
} from '../../../electron/platform/socketTable.ts';

// The table's rows written as the kernel writes them (net/ipv4/tcp_ipv4.c get_tcp4_sock, and
// net/ipv6/tcp_ipv6.c get_tcp6_sock for the 32-digit addresses), so the parser is held to the
// real format and not to its own idea of it.

const hex = (n: number, width: number): string => n.toString(16).toUpperCase().padStart(width, '0');

function kernelRow(sl: number, row: SocketRow): string {
  return (
    `${String(sl).padStart(4)}: ${row.local} ${row.remote} ${hex(row.state, 2)} 00000000:00000000 00:00000000 00000000 ` +
    `${String(row.uid).padStart(5)} ${String(0).padStart(8)} ${row.inode} 1 0000000000000000 20 4 30 10 -1`
  );
}

const HEADER = '  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode';

const byteArb = fc.integer({ min: 0, max: 255 });
const portArb = fc.integer({ min: 0, max: 65535 });
const kernelAddress = fc.oneof(
  fc.array(byteArb, { minLength: 4, maxLength: 4 }).map((b) => b.map((x) => hex(x, 2)).join('')),
  fc.array(byteArb, { minLength: 16, maxLength: 16 }).map((b) => b.map((x) => hex(x, 2)).join('')),
);
const kernelEnd = fc.tuple(kernelAddress, portArb).map(([a, p]) => `${a}:${hex(p, 4)}`);
const rowArb: fc.Arbitrary<SocketRow> = fc.record({
  local: kernelEnd,
  remote: kernelEnd,
  state: fc.integer({ min: 1, max: 12 }),
  uid: fc.integer({ min: 0, max: 2 ** 32 - 1 }),
  inode: fc.integer({ min: 0, max: 2 ** 40 }),
});

/** The 16 bytes back from the kernel's four host-order words. */
function bytesOfKernelHex(address: string, order: Byteorder): number[] {
  const words = address.match(/.{8}/g)!.map((w) => w.match(/../g)!.map((b) => parseInt(b, 16)));
  return words.flatMap((w) => (order === 'LE' ? w.reverse() : w));
}

describe('the socket table, parsed', () => {
  it('reads back every field of a row the kernel wrote, and nothing from its header', () => {
    expect(parseSocketRow(HEADER)).toBeNull();
    fc.assert(
      fc.property(fc.nat(99_999), rowArb, (sl, row) => {
        expect(parseSocketRow(kernelRow(sl, row))).toEqual(row);
      }),
    );
  });

  it('never throws on arbitrary text, and what it accepts is a well-formed row', () => {
    fc.assert(
      fc.property(fc.oneof(fc.string(), fc.string({ unit: fc.constantFrom(...' :0123456789ABCDEFx\n\t-') })), (line) => {
        const row = parseSocketRow(line);
        if (row === null) return;
        expect(row.local).toMatch(/^([0-9A-F]{8}|[0-9A-F]{32}):[0-9A-F]{4}$/);
        expect(Number.isSafeInteger(row.uid) && Number.isSafeInteger(row.inode)).toBe(true);
      }),
    );
  });

  it('finds the row with exactly the four-tuple asked for, among any others and any junk, or none', () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(rowArb, { selector: (r) => `${r.local} ${r.remote}`, maxLength: 30 }),
        fc.array(fc.string(), { maxLength: 5 }),
        kernelEnd,
        kernelEnd,
        (rows, junk, local, remote) => {
          const lines = [HEADER, ...rows.map((r, i) => kernelRow(i, r)), ...junk.map((j) => j.replace(/\n/g, ' '))];
          const table = `${lines.join('\n')}\n`;
          const wanted = rows.find((r) => r.local === local && r.remote === remote) ?? null;
          expect(findSocketRow(table, local, remote)).toEqual(wanted);
          for (const row of rows) expect(findSocketRow(table, row.local, row.remote)).toEqual(row);
        },
      ),
    );
  });

  it('counts only a socket a process still holds: not TIME_WAIT (uid 0 there is no one), not a listener, not inode 0', () => {
    const row = { local: '0100007F:1F90', remote: '0100007F:D431', state: 0x01, uid: 1000, inode: 42 };
    expect(isHeldConnection(row)).toBe(true);
    expect(isHeldConnection({ ...row, state: 0x06, uid: 0, inode: 0 })).toBe(false);
    expect(isHeldConnection({ ...row, state: 0x05, uid: 0, inode: 0 })).toBe(false);
    expect(isHeldConnection({ ...row, state: 0x0a })).toBe(false);
    expect(isHeldConnection({ ...row, state: 0x08 })).toBe(true);
  });
});

describe('an endpoint as the kernel prints it', () => {
  it('prints 127.0.0.1:8080 as 0100007F:1F90 on little-endian hosts and 7F000001:1F90 on big-endian ones', () => {
    expect(kernelEndpoint({ address: '127.0.0.1', port: 8080 }, 'tcp', 'LE')).toBe('0100007F:1F90');
    expect(kernelEndpoint({ address: '127.0.0.1', port: 8080 }, 'tcp', 'BE')).toBe('7F000001:1F90');
    expect(kernelEndpoint({ address: '::1', port: 1 }, 'tcp6', 'LE')).toBe('00000000000000000000000001000000:0001');
    // An IPv4 connection from an IPv6 socket is in tcp6, under its mapped address.
    expect(kernelEndpoint({ address: '127.0.0.1', port: 80 }, 'tcp6', 'LE')).toBe('0000000000000000FFFF00000100007F:0050');
    expect(kernelEndpoint({ address: '::1', port: 80 }, 'tcp', 'LE')).toBeNull();
    // A dual-stack listener names an IPv4 peer as mapped; that peer's socket may be in tcp.
    expect(kernelEndpoint({ address: '::ffff:127.0.0.1', port: 80 }, 'tcp', 'LE')).toBe('0100007F:0050');
    expect(kernelEndpoint({ address: 'not an address', port: 80 }, 'tcp6', 'LE')).toBeNull();
  });

  it('gives every IPv4 address and port back from its printed form, in either byte order', () => {
    fc.assert(
      fc.property(
        fc.array(byteArb, { minLength: 4, maxLength: 4 }),
        portArb,
        fc.constantFrom<Byteorder>('LE', 'BE'),
        (bytes, port, order) => {
          const printed = kernelEndpoint({ address: bytes.join('.'), port }, 'tcp', order)!;
          const [address, portHex] = printed.split(':');
          expect(bytesOfKernelHex(address!, order)).toEqual(bytes);
          expect(parseInt(portHex!, 16)).toBe(port);
        },
      ),
    );
  });

  it('gives every IPv6 address back, however it is spelled (compressed, expanded, with a dotted tail)', () => {
    fc.assert(
      fc.property(fc.array(byteArb, { minLength: 16, maxLength: 16 }), fc.constantFrom<Byteorder>('LE', 'BE'), (bytes, order) => {
        const expanded = Array.from({ length: 8 }, (_, i) => hex((bytes[2 * i]! << 8) | bytes[2 * i + 1]!, 4)).join(':');
        const compressed = new URL(`http://[${expanded}]/`).hostname.slice(1, -1);
        const dotted = `${expanded.split(':').slice(0, 6).join(':')}:${bytes.slice(12).join('.')}`;
        for (const address of [expanded, compressed, dotted]) {
          const printed = kernelEndpoint({ address, port: 443 }, 'tcp6', order)!;
          expect(bytesOfKernelHex(printed.split(':')[0]!, order), address).toEqual(bytes);
        }
      }),
    );
  });
});

describe.runIf(socketTableReadable())('the peer of a real loopback connection', () => {
  let server: Server;
  const accepted: Socket[] = [];
  beforeAll(async () => {
    server = createServer((s) => accepted.push(s));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  });
  afterAll(() => {
    for (const s of accepted) s.destroy();
    server.close();
  });

  async function connectFrom(host: string): Promise<{ client: Socket; theirs: Socket }> {
    const before = accepted.length;
    const client = await new Promise<Socket>((resolve) => {
      const s = connect({ port: (server.address() as { port: number }).port, host }, () => resolve(s));
    });
    while (accepted.length === before) await new Promise((r) => setTimeout(r, 5));
    return { client, theirs: accepted.at(-1)! };
  }

  const ends = (s: Socket) =>
    [
      { address: s.localAddress!, port: s.localPort! },
      { address: s.remoteAddress!, port: s.remotePort! },
    ] as const;

  it('is this process, from an IPv4 socket (tcp) and from an IPv6 one connecting to a mapped address (tcp6)', async () => {
    for (const host of ['127.0.0.1', '::ffff:127.0.0.1']) {
      const { client, theirs } = await connectFrom(host);
      expect(peerOf(...ends(theirs)), host).toEqual({ kind: 'user', uid: process.getuid!() });
      client.destroy();
    }
  });

  it('is this process behind a dual-stack listener, which names an IPv4 peer by its mapped address', async () => {
    const dual = createServer();
    const theirs = new Promise<Socket>((resolve) => dual.once('connection', resolve));
    await new Promise<void>((resolve) => dual.listen(0, '::', resolve));
    const client = connect((dual.address() as { port: number }).port, '127.0.0.1');
    const accepted = await theirs;
    expect(accepted.remoteAddress).toBe('::ffff:127.0.0.1');
    expect(peerOf(...ends(accepted))).toEqual({ kind: 'user', uid: process.getuid!() });
    client.destroy();
    accepted.destroy();
    dual.close();
  });

  it('is gone once the client has closed its socket', async () => {
    const { client, theirs } = await connectFrom('127.0.0.1');
    const [local, remote] = ends(theirs);
    client.destroy();
    await new Promise((r) => setTimeout(r, 50));
    expect(peerOf(local, remote)).toEqual({ kind: 'gone' });
  });

  it('is unknown, saying why, where the table is not there', async () => {
    const { client, theirs } = await connectFrom('127.0.0.1');
    expect(peerOf(...ends(theirs), '/nonexistent/net')).toEqual({
      kind: 'unknown',
      reason: '/nonexistent/net/tcp cannot be read on this system',
    });
    client.destroy();
  });

  it('reads a table given whole or in pieces of any size alike (a row split across two reads is still found)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'capsem-net-'));
    try {
      const rows = Array.from({ length: 2000 }, (_, i) =>
        kernelRow(i, { local: `0100007F:${hex(i, 4)}`, remote: '0100007F:1F90', state: 1, uid: i, inode: i + 1 }),
      );
      writeFileSync(join(dir, 'tcp'), `${HEADER}\n${rows.join('\n')}\n`);
      for (const port of [0, 470, 1999])
        expect(peerOf({ address: '127.0.0.1', port: 8080 }, { address: '127.0.0.1', port }, dir, 'LE')).toEqual({
          kind: 'user',
          uid: port,
        });
      expect(existsSync(join(dir, 'tcp6'))).toBe(false);
      expect(peerOf({ address: '127.0.0.1', port: 8080 }, { address: '127.0.0.1', port: 4000 }, dir, 'LE')).toEqual({ kind: 'gone' });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
