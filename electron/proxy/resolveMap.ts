import { isIP } from 'node:net';

// CAPSEM_RESOLVE="host:port=ip:port,…" sends a host to another address, as curl's --resolve
// does: for tests against local upstreams and for corporate setups. A host mapped here on purpose
// may land in private address space without the policy refusing it.

export interface ResolveTarget {
  readonly address: string;
  readonly port: number;
}

export type ResolveMap = ReadonlyMap<string, ResolveTarget>;

function splitHostPort(text: string, what: string): [string, number] {
  const m = /^(\[[^\]]+\]|[^:]+):(\d{1,5})$/.exec(text.trim());
  const port = m ? Number(m[2]) : NaN;
  if (!m || port < 1 || port > 65535) throw new Error(`CAPSEM_RESOLVE: "${text}" is not ${what}:port`);
  return [m[1]!.replace(/^\[|\]$/g, '').toLowerCase(), port];
}

export function parseResolveMap(spec: string | undefined): ResolveMap {
  const map = new Map<string, ResolveTarget>();
  if (!spec) return map;
  for (const entry of spec
    .split(',')
    .map((e) => e.trim())
    .filter(Boolean)) {
    const [from, to] = entry.split('=');
    if (from === undefined || to === undefined) throw new Error(`CAPSEM_RESOLVE: "${entry}" must look like host:port=ip:port`);
    const [host, port] = splitHostPort(from, 'host');
    const [address, targetPort] = splitHostPort(to, 'ip');
    if (isIP(address) === 0) throw new Error(`CAPSEM_RESOLVE: "${address}" is not an IP address`);
    map.set(`${host}:${port}`, { address, port: targetPort });
  }
  return map;
}
