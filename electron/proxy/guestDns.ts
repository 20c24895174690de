import { lookup as dnsLookup } from 'node:dns';
import type { Duplex } from 'node:stream';
import { canonicalHost } from '../policy/addresses.ts';
import {
  dnsAnswer,
  DnsFrames,
  dnsRefusalAnswer,
  framed,
  isInternetClass,
  isRefusal,
  parseDnsQuery,
  printable,
  TYPE_A,
  TYPE_AAAA,
  typeName,
  type DnsQuery,
  type Rcode,
} from './dnsMessage.ts';
import type { Decision } from '../policy/policy.ts';
import type { ResolveMap } from './resolveMap.ts';
import type { StandInAddresses } from './standInAddresses.ts';

// The host's half of the guest's DNS answerer: the agent hands over each query as a `dns`
// stream (native/agent/PROTOCOL.md). A query is judged by the policy on its name before anything
// leaves the host, so a name the policy denies is never sent to a resolver (a lookup is a way
// out: its name reaches whoever serves the domain). A denied name still gets its stand-in, so the
// connection that follows is refused with a readable 403 and recorded with its process, as on
// the proxied path; an allowed name is resolved (CAPSEM_RESOLVE first) only to tell whether it
// exists. The guest is answered with stand-in addresses (standInAddresses.ts), never with where
// the name really goes, and every lookup becomes a `dns_events` row.

export interface GuestLookup {
  readonly startedAt: Date;
  /** The name asked for, or `(unparsed)` for a query that could not be read. */
  readonly name: string;
  readonly type: string;
  readonly rcode: Rcode;
  /** The stand-in addresses the guest was given. */
  readonly answers: readonly string[];
  /** Where the host's resolution (or CAPSEM_RESOLVE) says the name goes; empty when not resolved. */
  readonly resolved: readonly string[];
  readonly decision: 'allowed' | 'denied';
  readonly matchedRule: string | null;
  readonly processName: string | null;
  readonly pid: number | null;
  readonly durationMs: number;
  readonly error: string | null;
}

export interface LookupOrigin {
  readonly processName?: string;
  readonly pid?: number;
}

export interface DnsPolicy {
  decideName(host: string): Decision;
}

export interface GuestDnsOptions {
  readonly policy: DnsPolicy;
  readonly resolve?: ResolveMap;
  readonly names: StandInAddresses;
  readonly onLookup: (lookup: GuestLookup) => void;
  /** Why nothing can be recorded any more, or null: then every query is refused, unresolved. */
  readonly refusal?: () => string | null;
  /** The host's resolver: every address a name has. */
  readonly lookup?: (name: string) => Promise<string[]>;
  readonly lookupTimeoutMs?: number;
}

export interface GuestDns {
  /** Answers the queries on one stream: one for a datagram, any number on a TCP connection. */
  serve(stream: Duplex, origin: LookupOrigin, transport: 'udp' | 'tcp'): void;
}

/** Seconds a guest may keep an answer: stand-ins hold for the session unless 65,536 newer names push one out. */
const ANSWER_TTL = 60;
/** The guest's resolver waits 5 s for an answer before it asks again. */
const DEFAULT_LOOKUP_TIMEOUT_MS = 4000;
/** Queries a TCP connection may have waiting for the resolver; a client that sends more waits. */
const MAX_IN_FLIGHT = 16;

class LookupFailed extends Error {
  constructor(
    readonly rcode: 'NXDOMAIN' | 'SERVFAIL',
    message: string,
  ) {
    super(message);
  }
}

function systemLookup(name: string): Promise<string[]> {
  return new Promise((resolve, reject) => {
    dnsLookup(name, { all: true, family: 0 }, (err, addresses) => (err ? reject(err) : resolve(addresses.map((a) => a.address))));
  });
}

export function createGuestDns(options: GuestDnsOptions): GuestDns {
  const lookup = options.lookup ?? systemLookup;
  const timeoutMs = options.lookupTimeoutMs ?? DEFAULT_LOOKUP_TIMEOUT_MS;

  /** Where `name` goes: CAPSEM_RESOLVE's entries for it on any port, else the host's resolver. */
  async function resolveName(name: string): Promise<string[]> {
    const mapped = [...(options.resolve ?? new Map())]
      .filter(([key]) => key.slice(0, key.lastIndexOf(':')) === name)
      .map(([, target]) => target.address);
    if (mapped.length > 0) return [...new Set(mapped)];
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new LookupFailed('SERVFAIL', `the host's resolver did not answer within ${timeoutMs} ms`)),
        timeoutMs,
      );
    });
    try {
      return await Promise.race([lookup(name), timeout]);
    } catch (err) {
      if (err instanceof LookupFailed) throw err;
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOTFOUND' || code === 'ENODATA') throw new LookupFailed('NXDOMAIN', `${name} does not resolve (${code})`);
      throw new LookupFailed('SERVFAIL', `the host's resolver failed: ${code ?? (err as Error).message}`);
    } finally {
      clearTimeout(timer);
    }
  }

  async function answer(message: Buffer, origin: LookupOrigin): Promise<Buffer | null> {
    const startedAt = new Date();
    const t0 = performance.now();
    const record = (fields: Pick<GuestLookup, 'name' | 'type' | 'rcode' | 'decision'> & Partial<GuestLookup>): void => {
      try {
        options.onLookup({
          startedAt,
          answers: [],
          resolved: [],
          matchedRule: null,
          error: null,
          ...fields,
          processName: origin.processName ?? null,
          pid: origin.pid ?? null,
          durationMs: Math.round(performance.now() - t0),
        });
      } catch {
        // A recorder failure must never take the answerer down; the writer counts its own losses.
      }
    };
    const parsed = parseDnsQuery(message);
    if (isRefusal(parsed)) {
      record({
        name: '(unparsed)',
        type: '?',
        rcode: parsed.rcode,
        decision: 'denied',
        matchedRule: 'proxy.bad-query',
        error: parsed.reason,
      });
      return parsed.id === null ? null : dnsRefusalAnswer({ ...parsed, id: parsed.id });
    }
    const query: DnsQuery = parsed;
    const type = typeName(query.type);
    const unrecordable = options.refusal?.();
    if (unrecordable) {
      record({
        name: printable(query.name),
        type,
        rcode: 'REFUSED',
        decision: 'denied',
        matchedRule: 'proxy.unrecordable',
        error: `this session cannot be recorded: ${unrecordable}`,
      });
      return dnsAnswer(query, 'REFUSED', [], 0);
    }
    const host = canonicalHost(query.name);
    if (host?.kind !== 'name') {
      record({
        name: printable(query.name),
        type,
        rcode: 'NXDOMAIN',
        decision: 'denied',
        matchedRule: 'proxy.bad-host',
        error: `"${printable(query.name)}" is not a host name`,
      });
      return dnsAnswer(query, 'NXDOMAIN', [], 0);
    }
    const name = host.host;
    const wantsAddress = isInternetClass(query) && (query.type === TYPE_A || query.type === TYPE_AAAA);
    const standIn = (): string[] => {
      const s = options.names.standInsFor(name);
      return [query.type === TYPE_A ? s.v4 : s.v6];
    };
    const decision = options.policy.decideName(name);
    if (decision.action === 'deny') {
      // Not resolved: the name goes nowhere, and the connection that follows is refused by name.
      const answers = wantsAddress ? standIn() : [];
      record({
        name,
        type,
        rcode: 'NOERROR',
        answers,
        decision: 'denied',
        matchedRule: decision.rule,
        error: `blocked by policy rule ${decision.rule}`,
      });
      return dnsAnswer(query, 'NOERROR', answers, ANSWER_TTL);
    }
    if (!wantsAddress) {
      // Only addresses are answered; other records (MX, TXT, SRV) are not looked up at all.
      record({ name, type, rcode: 'NOERROR', decision: 'allowed', matchedRule: decision.rule });
      return dnsAnswer(query, 'NOERROR', [], ANSWER_TTL);
    }
    try {
      const resolved = await resolveName(name);
      const answers = standIn();
      record({ name, type, rcode: 'NOERROR', answers, resolved, decision: 'allowed', matchedRule: decision.rule });
      return dnsAnswer(query, 'NOERROR', answers, ANSWER_TTL);
    } catch (err) {
      const failed = err instanceof LookupFailed ? err : new LookupFailed('SERVFAIL', (err as Error).message);
      record({ name, type, rcode: failed.rcode, decision: 'allowed', matchedRule: decision.rule, error: failed.message });
      return dnsAnswer(query, failed.rcode, [], 0);
    }
  }

  function serve(stream: Duplex, origin: LookupOrigin, transport: 'udp' | 'tcp'): void {
    const frames = new DnsFrames();
    let inFlight = 0;
    let ended = false;
    const finishIfDone = (): void => {
      if (ended && inFlight === 0 && !stream.destroyed) stream.end();
    };
    stream.on('error', () => stream.destroy());
    stream.on('data', (chunk: Buffer) => {
      for (const message of frames.push(chunk)) {
        inFlight += 1;
        if (inFlight >= MAX_IN_FLIGHT) stream.pause();
        answer(message, origin)
          .then(
            (reply) => {
              if (reply && !stream.destroyed) stream.write(framed(reply));
            },
            () => undefined,
          )
          .finally(() => {
            inFlight -= 1;
            stream.resume();
            // A datagram carries one query: its stream ends with its answer.
            if (transport === 'udp') ended = true;
            finishIfDone();
          });
      }
    });
    stream.on('end', () => {
      ended = true;
      finishIfDone();
    });
  }

  return { serve };
}
