import { BlockList, isIP } from 'node:net';

// One spelling per destination. A host reaches the proxy as a CONNECT authority, a URL, a Host
// header, a policy rule or a DNS answer, and an address has many spellings: 2130706433, 0x7f.1,
// 0177.0.0.1 and 127.1 are all 127.0.0.1 to the C library that dials them, and ::ffff:127.0.0.1
// is 127.0.0.1 to a dual-stack socket. Policy compares canonical forms only, so no spelling of an
// address escapes a rule written with another.

export type CanonicalHost =
  { readonly kind: 'address'; readonly host: string; readonly family: 4 | 6 } | { readonly kind: 'name'; readonly host: string };

/** Characters a host never holds; the URL parser would otherwise read them as other URL parts. */
const NOT_HOST = /[\s/\\?#@]/;

/** Recent answers: a client names the same few hosts on every request, and each answer takes a URL parse. */
const recent = new Map<string, CanonicalHost | null>();
const RECENT = 1024;

/**
 * The canonical form of a host: an IP address in its one standard spelling (IPv4-mapped IPv6 as
 * the IPv4 address it reaches), or a lower-case name without its trailing dot; null when the text
 * is no host at all. IPv6 may come with or without brackets.
 */
export function canonicalHost(raw: string): CanonicalHost | null {
  let answer = recent.get(raw);
  if (answer === undefined) {
    answer = parseHost(raw);
    if (recent.size >= RECENT) recent.clear();
    recent.set(raw, answer);
  }
  return answer;
}

function parseHost(raw: string): CanonicalHost | null {
  if (raw === '' || NOT_HOST.test(raw)) return null;
  const bracketed = raw.startsWith('[') ? raw : raw.includes(':') ? `[${raw}]` : raw;
  let hostname: string;
  try {
    // WHATWG's host parser is what every spelling of an IPv4 number is defined against, and it
    // folds case, percent-decoding and IDNA into one canonical form.
    const url = new URL(`http://${bracketed}/`);
    if (url.port !== '' || url.username !== '' || url.password !== '' || url.pathname !== '/') return null;
    hostname = url.hostname;
  } catch {
    return null;
  }
  if (hostname.startsWith('[')) {
    const v6 = hostname.slice(1, -1);
    const mapped = mappedIpv4(v6);
    return mapped ? { kind: 'address', host: mapped, family: 4 } : { kind: 'address', host: v6, family: 6 };
  }
  if (isIP(hostname) === 4) return { kind: 'address', host: hostname, family: 4 };
  const name = hostname.endsWith('.') ? hostname.slice(0, -1) : hostname;
  if (name === '' || name.startsWith('.') || name.endsWith('.') || name.includes('..')) return null;
  return { kind: 'name', host: name };
}

/** The eight 16-bit groups of a valid IPv6 address (an embedded dotted quad included). */
function ipv6Groups(address: string): number[] {
  let text = address;
  const quad = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (quad) {
    const [a, b, c, d] = quad.slice(1).map(Number) as [number, number, number, number];
    text = `${text.slice(0, quad.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, tail] = text.split('::') as [string, string | undefined];
  const parse = (part: string): number[] => (part === '' ? [] : part.split(':').map((g) => parseInt(g, 16)));
  const front = parse(head);
  if (tail === undefined) return front;
  const back = parse(tail);
  return [...front, ...new Array<number>(8 - front.length - back.length).fill(0), ...back];
}

function ipv4Of(high: number, low: number): string {
  return `${high >> 8}.${high & 0xff}.${low >> 8}.${low & 0xff}`;
}

/** The IPv4 address an IPv4-mapped IPv6 address (::ffff:0:0/96) reaches, else null. */
function mappedIpv4(address: string): string | null {
  const g = ipv6Groups(address);
  return g.slice(0, 5).every((x) => x === 0) && g[5] === 0xffff ? ipv4Of(g[6]!, g[7]!) : null;
}

const nonPublicV4 = new BlockList();
for (const [net, bits] of [
  ['0.0.0.0', 8], // "this network"; 0.0.0.0 itself reaches the local host
  ['10.0.0.0', 8],
  ['100.64.0.0', 10], // carrier-grade NAT
  ['127.0.0.0', 8],
  ['169.254.0.0', 16], // link-local, where cloud metadata lives
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, and the broadcast address
] as const)
  nonPublicV4.addSubnet(net, bits, 'ipv4');

const nonPublicV6 = new BlockList();
for (const [net, bits] of [
  ['::', 96], // unspecified, loopback and the deprecated IPv4-compatible space
  ['64:ff9b:1::', 48], // local-use NAT64
  ['100::', 64], // discard
  ['2001:db8::', 32], // documentation
  ['fc00::', 7], // unique local
  ['fe80::', 10], // link-local
  ['fec0::', 10], // old site-local
  ['ff00::', 8], // multicast
] as const)
  nonPublicV6.addSubnet(net, bits, 'ipv6');

/**
 * The IPv4 address inside an IPv6 address that translates to one on the way out (NAT64's
 * well-known prefix, 6to4, a Teredo client), so that a private IPv4 address cannot be reached
 * through its IPv6 spelling.
 */
function embeddedIpv4(address: string): string | null {
  const g = ipv6Groups(address);
  if (g[0] === 0x64 && g[1] === 0xff9b && g.slice(2, 6).every((x) => x === 0)) return ipv4Of(g[6]!, g[7]!);
  if (g[0] === 0x2002) return ipv4Of(g[1]!, g[2]!);
  if (g[0] === 0x2001 && g[1] === 0) return ipv4Of(g[6]! ^ 0xffff, g[7]! ^ 0xffff);
  return null;
}

/**
 * Loopback, private, link-local, CGNAT, unspecified, multicast or reserved: anything but a public
 * unicast address, in any spelling. A string that is no address at all is not private; callers
 * pass addresses, never names.
 */
export function isPrivateAddress(address: string): boolean {
  const canonical = canonicalHost(address);
  if (canonical?.kind !== 'address') return false;
  if (canonical.family === 4) return nonPublicV4.check(canonical.host, 'ipv4');
  if (nonPublicV6.check(canonical.host, 'ipv6')) return true;
  const inner = embeddedIpv4(canonical.host);
  return inner !== null && nonPublicV4.check(inner, 'ipv4');
}

/** host:port as a URL authority or Host header writes it: IPv6 in brackets, the default port left out. */
export function authorityOf(host: string, port: number, defaultPort: number): string {
  const name = isIP(host) === 6 ? `[${host}]` : host;
  return port === defaultPort ? name : `${name}:${port}`;
}
