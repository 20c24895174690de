import { closeSync, openSync, readSync } from 'node:fs';
import { isIPv4, isIPv6 } from 'node:net';
import { endianness } from 'node:os';

// Which user is on the other end of a loopback TCP connection, from the kernel's socket table
// (/proc/net/tcp and /proc/net/tcp6): the peer's socket is the row whose local address is our
// connection's remote one and whose remote address is our local one, and its uid column is the
// user that made that socket. TCP lets no two live sockets share a four-tuple, so the row is the
// peer's alone. Linux only; elsewhere the table is not there and the caller decides.

/** One end of a TCP connection as Node names it (`socket.localAddress`, `socket.remotePort`). */
export interface Endpoint {
  readonly address: string;
  readonly port: number;
}

/** A row of /proc/net/tcp{,6}: the addresses as the kernel prints them (hex, in its byte order). */
export interface SocketRow {
  readonly local: string;
  readonly remote: string;
  readonly state: number;
  readonly uid: number;
  readonly inode: number;
}

export type Byteorder = 'LE' | 'BE';

/** TIME_WAIT: a socket its process has let go of, printed with uid 0 and inode 0 (the kernel's get_timewait_sock). */
const TCP_TIME_WAIT = 0x06;
const TCP_CLOSE = 0x07;
const TCP_LISTEN = 0x0a;

/** Four bytes as the kernel prints a __be32 with %08X: the word read in the host's byte order. */
function wordHex(bytes: readonly number[], order: Byteorder): string {
  const word = order === 'LE' ? [...bytes].reverse() : bytes;
  return word
    .map((b) => b.toString(16).padStart(2, '0'))
    .join('')
    .toUpperCase();
}

function ipv4Bytes(address: string): number[] {
  return address.split('.').map(Number);
}

/** The 16 bytes of an IPv6 address, `::` and a dotted IPv4 tail (`::ffff:127.0.0.1`) included. */
function ipv6Bytes(scoped: string): number[] {
  const address = scoped.split('%')[0]!;
  const tail = /(\d+\.\d+\.\d+\.\d+)$/.exec(address);
  const hextets = (tail ? address.slice(0, -tail[1]!.length) : address).split('::');
  const part = (s: string | undefined): number[] => (s ? s.split(':').filter((h) => h !== '') : []).map((h) => parseInt(h, 16));
  const head = part(hextets[0]);
  const rest = part(hextets[1]);
  const tailWords = tail ? ipv4Bytes(tail[1]!) : [];
  const words =
    hextets.length === 2 ? [...head, ...Array<number>(8 - head.length - rest.length - tailWords.length / 2).fill(0), ...rest] : head;
  return [...words.flatMap((w) => [w >> 8, w & 0xff]), ...tailWords];
}

/**
 * An endpoint as /proc/net/tcp (IPv4) or /proc/net/tcp6 prints it: `0100007F:1F90` for
 * 127.0.0.1:8080 on a little-endian host. The port is printed in host order, so plain hex.
 */
export function kernelEndpoint(endpoint: Endpoint, table: 'tcp' | 'tcp6', order: Byteorder): string | null {
  const port = endpoint.port.toString(16).toUpperCase().padStart(4, '0');
  if (table === 'tcp') {
    // A dual-stack listener names an IPv4 peer by its mapped address; that peer's own socket may be IPv4.
    const v4 = isIPv4(endpoint.address) ? endpoint.address : /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(endpoint.address)?.[1];
    return v4 === undefined ? null : `${wordHex(ipv4Bytes(v4), order)}:${port}`;
  }
  let bytes: number[];
  if (isIPv6(endpoint.address)) bytes = ipv6Bytes(endpoint.address);
  // An IPv4 connection made from an IPv6 socket is listed in tcp6 under its mapped address.
  else if (isIPv4(endpoint.address)) bytes = [...Array<number>(10).fill(0), 0xff, 0xff, ...ipv4Bytes(endpoint.address)];
  else return null;
  const words = [0, 4, 8, 12].map((i) => wordHex(bytes.slice(i, i + 4), order)).join('');
  return `${words}:${port}`;
}

/**
 * One line of the table, or null for the header and anything that is not a row. The columns
 * (the kernel's tcp4_seq_show): sl, local, remote, st, tx:rx queue, timer, retransmits, uid,
 * timeout, inode, then more that are not read.
 */
export function parseSocketRow(line: string): SocketRow | null {
  const f = line.trim().split(/\s+/);
  if (f.length < 10 || !/^\d+:$/.test(f[0]!)) return null;
  const address = /^([0-9A-F]{8}|[0-9A-F]{32}):[0-9A-F]{4}$/;
  if (!address.test(f[1]!) || !address.test(f[2]!) || !/^[0-9A-F]{2}$/.test(f[3]!)) return null;
  if (!/^\d+$/.test(f[7]!) || !/^\d+$/.test(f[9]!)) return null;
  const uid = Number(f[7]);
  const inode = Number(f[9]);
  if (!Number.isSafeInteger(uid) || !Number.isSafeInteger(inode)) return null;
  return { local: f[1]!, remote: f[2]!, state: parseInt(f[3]!, 16), uid, inode };
}

/** Whether a row is a socket a process still holds: not a listener, not closed, not let go of (inode 0). */
export function isHeldConnection(row: SocketRow): boolean {
  return row.inode !== 0 && row.state !== TCP_TIME_WAIT && row.state !== TCP_CLOSE && row.state !== TCP_LISTEN;
}

/** The row of the socket at `local` connected to `remote`, in a table's text, or null. */
export function findSocketRow(table: string, local: string, remote: string): SocketRow | null {
  const needle = ` ${local} ${remote} `;
  for (let at = table.indexOf(needle); at >= 0; at = table.indexOf(needle, at + 1)) {
    const start = table.lastIndexOf('\n', at) + 1;
    const end = table.indexOf('\n', at);
    const row = parseSocketRow(table.slice(start, end < 0 ? undefined : end));
    if (row && row.local === local && row.remote === remote) return row;
  }
  return null;
}

export type PeerLookup =
  | { readonly kind: 'user'; readonly uid: number }
  /** No process holds the peer's socket any more (it hung up): there is no one to answer. */
  | { readonly kind: 'gone' }
  /** The table cannot be read here (not Linux, or /proc not mounted): who is connecting is unknown. */
  | { readonly kind: 'unknown'; readonly reason: string };

/** Whether this system has the table at all (Linux with /proc): without it every peer is unknown. */
export function socketTableReadable(procNet = '/proc/net'): boolean {
  try {
    closeSync(openSync(`${procNet}/tcp`, 'r'));
    return true;
  } catch {
    return false;
  }
}

/** One read buffer for every lookup: the reads are synchronous, so no two lookups share it at once. */
const chunk = Buffer.alloc(64 << 10);

/**
 * Reads a table until the row is found (the kernel hands out about one page a read, so stopping
 * early halves the average cost); undefined when the file cannot be opened.
 */
function scanTable(path: string, local: string, remote: string): SocketRow | null | undefined {
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch {
    return undefined;
  }
  try {
    let carry = '';
    for (let n = readSync(fd, chunk); n > 0; n = readSync(fd, chunk)) {
      const text = carry + chunk.toString('latin1', 0, n);
      const complete = text.lastIndexOf('\n') + 1;
      const row = findSocketRow(text.slice(0, complete), local, remote);
      if (row) return row;
      carry = text.slice(complete);
    }
    return findSocketRow(carry, local, remote);
  } finally {
    closeSync(fd);
  }
}

/**
 * The user holding the other end of an accepted loopback connection. Read fresh on every call:
 * a port is reused by another user's socket as soon as its last one closes, so nothing is kept.
 */
export function peerOf(local: Endpoint, remote: Endpoint, procNet = '/proc/net', order: Byteorder = endianness()): PeerLookup {
  let readable = false;
  for (const table of ['tcp', 'tcp6'] as const) {
    // The peer's row: its local end is our remote end, and the other way round.
    const theirs = kernelEndpoint(remote, table, order);
    const ours = kernelEndpoint(local, table, order);
    if (theirs === null || ours === null) continue;
    const row = scanTable(`${procNet}/${table}`, theirs, ours);
    if (row === undefined) continue;
    readable = true;
    if (row && isHeldConnection(row)) return { kind: 'user', uid: row.uid };
  }
  return readable ? { kind: 'gone' } : { kind: 'unknown', reason: `${procNet}/tcp cannot be read on this system` };
}
