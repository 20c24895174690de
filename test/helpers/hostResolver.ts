import dns, { type LookupAddress } from 'node:dns';
import { isIP } from 'node:net';
import { syncBuiltinESMExports } from 'node:module';

// The host's resolver as a DNS server the test controls: node:dns's lookup, which the proxy's
// egress and its DNS answerer call (in this process), answers the names the test knows with the
// address it chooses at the time of the lookup, and passes every other name to the real one.

export interface HostResolver {
  /** Puts the real resolver back. */
  restore(): void;
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/** Until restored, `answer(name)` (an IP address, or undefined for the real resolver) answers this process's lookups. */
export function controlHostResolver(answer: (name: string) => string | undefined): HostResolver {
  const real = dns.lookup;
  const controlled = (hostname: string, options: unknown, callback?: LookupCallback): void => {
    const done = (typeof options === 'function' ? options : callback) as LookupCallback;
    const address = answer(hostname.toLowerCase());
    if (address === undefined) return void (real as (...args: unknown[]) => void)(hostname, options, callback);
    const family = isIP(address);
    const all = typeof options === 'object' && options !== null && (options as { all?: boolean }).all === true;
    process.nextTick(() => (all ? done(null, [{ address, family }]) : done(null, address, family)));
  };
  (dns as { lookup: unknown }).lookup = controlled;
  syncBuiltinESMExports();
  return {
    restore() {
      (dns as { lookup: unknown }).lookup = real;
      syncBuiltinESMExports();
    },
  };
}
