import type { CredentialRefOf } from './credentialRef.ts';
import type { KeyStore } from './keyStore.ts';
import { providersOf, type CredentialsSettings, type Provider } from './providers.ts';
import { newStandIn } from './standIns.ts';

// The credential broker of one session. The real keys stay here, on the host; the session's
// programs get stand-ins (guestEnv). On a request to a provider's own API host that carries the
// provider's stand-in exactly where the provider takes its key (its header, or its query
// parameter), the proxy sends the real key instead. A stand-in seen anywhere else (another host,
// any header, the URL, the body) is refused unless the policy allows it, and every sighting is
// reported so the ledger can say which credential was used where. When in doubt nothing is
// substituted: only an exact host and an exact value get the real key.

/** The rule a request carrying a stand-in away from its provider's hosts is refused under. */
export const STAND_IN_ELSEWHERE_RULE = 'credentials.stand-in-elsewhere';

/** Where a key came from, as the user is told (never the key). */
export type KeySource = { readonly kind: 'env'; readonly variable: string } | { readonly kind: 'stored'; readonly store: string };

export interface SessionKey {
  readonly provider: Provider;
  readonly source: KeySource;
  readonly standIn: string;
  readonly credentialRef: string;
}

/** One sighting of a stand-in in a request, and what was done about it. */
export interface CredentialUse {
  readonly provider: string;
  /** `header:NAME`, `query:NAME`, `url` or `body`. */
  readonly where: string;
  readonly host: string;
  readonly outcome: 'substituted' | 'refused' | 'allowed-leak';
  readonly credentialRef: string;
}

export type OutgoingHeaders = Record<string, string | string[]>;

export interface BrokeredRequest {
  readonly headers: OutgoingHeaders;
  readonly path: string;
  readonly uses: readonly CredentialUse[];
  /** Why the request must not leave, one line; null when it may. */
  readonly refusal: string | null;
}

/** Watches a request body as it streams by, for stand-ins going where they do not belong. */
export interface BodyScanner {
  /** The first sighting in the body so far (reported once), or null. */
  push(chunk: Buffer): CredentialUse | null;
}

export interface CredentialBroker {
  readonly keys: readonly SessionKey[];
  /** The request as it goes upstream: stand-ins substituted on their provider's hosts, or a refusal. */
  request(host: string, headers: OutgoingHeaders, path: string): BrokeredRequest;
  /** A scanner for a request body to `host`, or null when no stand-in could be out of place there. */
  bodyScanner(host: string, cap: number): BodyScanner | null;
  /** Why a refused sighting was refused, and how to allow it: one line for the client. */
  refusal(use: CredentialUse): string;
}

export interface BrokerSources {
  /** The environment of the process that starts the session. */
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly store: KeyStore | null;
  /** The policy file's credentials section, read at each request (the policy reloads). */
  readonly settings: () => CredentialsSettings;
  readonly credentialRefOf: CredentialRefOf;
}

export interface SessionCredentials {
  /** What the session's programs get in their environment: stand-ins only, under every variable the host had the key in. */
  readonly guestEnv: Record<string, string>;
  readonly broker: CredentialBroker;
}

/** A provider's key from the environment, else from the store, with where it came from. */
export function findKey(
  provider: Provider,
  env: BrokerSources['env'],
  store: KeyStore | null,
): { readonly key: string; readonly source: KeySource } | null {
  for (const variable of provider.env) {
    const value = env[variable]?.trim();
    if (value) return { key: value, source: { kind: 'env', variable } };
  }
  const stored = store?.get(provider.id);
  return stored ? { key: stored, source: { kind: 'stored', store: store!.description } } : null;
}

function headerText(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value.join(', ') : value;
}

/** The path with its percent-escapes undone where they parse, so an escaped stand-in is still seen. */
function decodedPath(path: string): string {
  try {
    return decodeURIComponent(path);
  } catch {
    return path;
  }
}

export function openSessionCredentials(sources: BrokerSources): SessionCredentials {
  const settingsAtStart = sources.settings();
  const real = new Map<string, string>();
  const keys: SessionKey[] = [];
  const guestEnv: Record<string, string> = {};
  for (const provider of providersOf(settingsAtStart)) {
    const found = findKey(provider, sources.env, sources.store);
    if (!found) continue;
    const standIn = newStandIn(provider.standIn);
    real.set(provider.id, found.key);
    keys.push({ provider, source: found.source, standIn, credentialRef: sources.credentialRefOf(found.key) });
    // Every variable the host set for this provider: a second one left alone would carry a real key in.
    for (const variable of provider.env)
      if (variable === provider.env[0] || sources.env[variable] !== undefined) guestEnv[variable] = standIn;
  }

  const hostsOf = (key: SessionKey): readonly string[] => sources.settings().hosts[key.provider.id] ?? key.provider.hosts;
  const outOfPlace = (key: SessionKey, host: string, where: string): CredentialUse => ({
    provider: key.provider.id,
    where,
    host,
    outcome: sources.settings().standInElsewhere === 'allow' ? 'allowed-leak' : 'refused',
    credentialRef: key.credentialRef,
  });

  function substitute(key: SessionKey, host: string, headers: OutgoingHeaders, path: string, uses: CredentialUse[]): string {
    const realKey = real.get(key.provider.id)!;
    for (const header of key.provider.headers) {
      const value = headers[header.name];
      if (typeof value !== 'string') continue;
      const bearer = /^bearer /i.exec(value);
      const carried = header.bearer ? (bearer ? value.slice(bearer[0].length) : null) : value;
      if (carried !== key.standIn) continue;
      headers[header.name] = header.bearer ? `Bearer ${realKey}` : realKey;
      uses.push({
        provider: key.provider.id,
        where: `header:${header.name}`,
        host,
        outcome: 'substituted',
        credentialRef: key.credentialRef,
      });
    }
    const name = key.provider.query;
    const q = path.indexOf('?');
    if (name === null || q < 0) return path;
    let substituted = false;
    const params = path
      .slice(q + 1)
      .split('&')
      .map((param) => {
        if (param !== `${name}=${key.standIn}`) return param;
        substituted = true;
        return `${name}=${encodeURIComponent(realKey)}`;
      });
    if (!substituted) return path;
    uses.push({ provider: key.provider.id, where: `query:${name}`, host, outcome: 'substituted', credentialRef: key.credentialRef });
    return `${path.slice(0, q)}?${params.join('&')}`;
  }

  function sightings(key: SessionKey, host: string, headers: OutgoingHeaders, path: string): CredentialUse[] {
    const found: CredentialUse[] = [];
    for (const [name, value] of Object.entries(headers)) {
      if (headerText(value)?.includes(key.standIn)) found.push(outOfPlace(key, host, `header:${name}`));
    }
    if (path.includes(key.standIn) || decodedPath(path).includes(key.standIn)) found.push(outOfPlace(key, host, 'url'));
    return found;
  }

  const broker: CredentialBroker = {
    keys,
    request(host, headers, path) {
      const name = host.toLowerCase();
      const out: OutgoingHeaders = { ...headers };
      let outPath = path;
      const uses: CredentialUse[] = [];
      for (const key of keys) {
        if (hostsOf(key).includes(name)) outPath = substitute(key, name, out, outPath, uses);
        else uses.push(...sightings(key, name, out, outPath));
      }
      const refused = uses.find((u) => u.outcome === 'refused');
      return { headers: out, path: outPath, uses, refusal: refused ? broker.refusal(refused) : null };
    },
    bodyScanner(host, cap) {
      const name = host.toLowerCase();
      const watched = keys.filter((key) => !hostsOf(key).includes(name)).map((key) => ({ key, needle: Buffer.from(key.standIn) }));
      if (watched.length === 0) return null;
      const overlap = Math.max(...watched.map((w) => w.needle.length)) - 1;
      let tail = Buffer.alloc(0);
      let seen = 0;
      let reported = false;
      return {
        push(chunk) {
          if (reported || seen >= cap) return null;
          const piece = chunk.subarray(0, cap - seen);
          seen += piece.length;
          const window = Buffer.concat([tail, piece]);
          tail = window.subarray(Math.max(0, window.length - overlap));
          const hit = watched.find((w) => window.includes(w.needle));
          if (!hit) return null;
          reported = true;
          return outOfPlace(hit.key, name, 'body');
        },
      };
    },
    refusal(use) {
      const key = keys.find((k) => k.provider.id === use.provider);
      const hosts = key ? hostsOf(key).join(', ') : 'its API hosts';
      return `this request carries the session's stand-in for the ${use.provider} key (in ${use.where}) to ${use.host}, which is not one of ${use.provider}'s API hosts (${hosts}); refused and recorded. To let stand-ins go elsewhere, set "credentials": {"standInElsewhere": "allow"} in the policy file`;
    },
  };
  return { guestEnv, broker };
}
