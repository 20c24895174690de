import type { CredentialRefOf } from './credentialRef.ts';
import { keyForms, type KeyForm } from './keyForms.ts';
import type { KeyStore } from './keyStore.ts';
import { BUILT_IN_TABLE, type ProviderTable } from '../telemetry/providers/index.ts';
import { providersOf, type CredentialsSettings, type Provider } from './providers.ts';
import { newStandIn } from './standIns.ts';

// The credential broker of one session. The real keys stay here, on the host; the session's
// programs get stand-ins (guestEnv). On a request over TLS (the proxy's own, verified connection
// upstream) to one of a provider's API hosts and ports that carries the provider's stand-in exactly
// where the provider takes its key (its header, or its query parameter), the proxy sends the real
// key instead. A stand-in seen anywhere else (another host, plain HTTP or another port of the
// provider's host, any header, the URL, the body) is refused unless the policy allows it, and every
// sighting is reported so the ledger can say which credential was used where. When in doubt nothing
// is substituted: only TLS, an exact host and port, and an exact value get the real key. What comes
// back from where a key may have gone is scrubbed of it (scrubForms).

/** The rule a request carrying a stand-in away from its provider's TLS hosts and ports is refused under. */
export const STAND_IN_ELSEWHERE_RULE = 'credentials.stand-in-elsewhere';
/** The rule a request body is refused under when it cannot be checked for stand-ins (a coding past reading, or decoding too far). */
export const UNCHECKED_BODY_RULE = 'credentials.unchecked-body';

/** Where a key came from, as the user is told (never the key). */
export type KeySource = { readonly kind: 'env'; readonly variable: string } | { readonly kind: 'stored'; readonly store: string };

export interface SessionKey {
  readonly provider: Provider;
  readonly source: KeySource;
  readonly standIn: string;
  readonly credentialRef: string;
}

/** Where a request goes, as the broker judges it: the key is released only over TLS. */
export interface Endpoint {
  readonly scheme: 'https' | 'http';
  readonly host: string;
  readonly port: number;
}

/** One sighting of a stand-in in a request, and what was done about it. */
export interface CredentialUse {
  readonly provider: string;
  /** `header:NAME`, `query:NAME`, `url` or `body`. */
  readonly where: string;
  readonly host: string;
  readonly port: number;
  /** Whether the request went over TLS. */
  readonly tls: boolean;
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

/** Watches a request body as it streams by (decoded, when it is compressed), for stand-ins going where they do not belong. */
export interface BodyScanner {
  /** Whether a stand-in found, or a body that cannot be read to look, refuses the request (the policy's standInElsewhere). */
  readonly refuses: boolean;
  /** The first sighting in the body so far (reported once), or null. */
  push(chunk: Buffer): CredentialUse | null;
}

export interface CredentialBroker {
  readonly keys: readonly SessionKey[];
  /** The request as it goes upstream: stand-ins substituted where their keys belong, or a refusal. */
  request(dest: Endpoint, headers: OutgoingHeaders, path: string): BrokeredRequest;
  /** A scanner for a request body to `dest`, or null when no stand-in could be out of place there. */
  bodyScanner(dest: Endpoint): BodyScanner | null;
  /**
   * The forms of every real key that may be released at `dest` (keyForms.ts), each with the
   * stand-in's form to put in its place: nothing that comes back from there may carry one to the
   * client or the record. Null when no key may go there, so nothing needs scrubbing.
   */
  scrubForms(dest: Endpoint): readonly KeyForm[] | null;
  /** Why a refused sighting was refused, and how to allow it: one line for the client. */
  refusal(use: CredentialUse): string;
}

export interface BrokerSources {
  /** The environment of the process that starts the session. */
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly store: KeyStore | null;
  /** The policy file's credentials section, read at each request (the policy reloads). */
  readonly settings: () => CredentialsSettings;
  /** The provider table under the same policy (the built-in one unless given): which providers take a key, on which hosts and ports. */
  readonly providers?: () => ProviderTable;
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

/** host:port as a URL writes it, the port left out when it is the scheme's. */
function placeOf(dest: Endpoint): string {
  const port = dest.port === (dest.scheme === 'https' ? 443 : 80) ? '' : `:${dest.port}`;
  return `${dest.scheme}://${dest.host}${port}`;
}

export function openSessionCredentials(sources: BrokerSources): SessionCredentials {
  const settingsAtStart = sources.settings();
  const tableNow = sources.providers ?? ((): ProviderTable => BUILT_IN_TABLE);
  const real = new Map<string, string>();
  const forms = new Map<string, readonly KeyForm[]>();
  const keys: SessionKey[] = [];
  const guestEnv: Record<string, string> = {};
  for (const provider of providersOf(settingsAtStart, tableNow())) {
    const found = findKey(provider, sources.env, sources.store);
    if (!found) continue;
    const standIn = newStandIn(provider.standIn, Buffer.byteLength(found.key));
    real.set(provider.id, found.key);
    forms.set(provider.id, keyForms(found.key, standIn));
    keys.push({ provider, source: found.source, standIn, credentialRef: sources.credentialRefOf(found.key) });
    // Every variable the host set for this provider: a second one left alone would carry a real key in.
    for (const variable of provider.env)
      if (variable === provider.env[0] || sources.env[variable] !== undefined) guestEnv[variable] = standIn;
  }

  /** Each provider's hosts and ports under the policy as it is now (it reloads); a session's keys keep their provider otherwise. */
  let providersFor: { settings: CredentialsSettings; table: ProviderTable; byId: Map<string, Provider> } | null = null;
  const current = (key: SessionKey): Provider => {
    const settings = sources.settings();
    const table = tableNow();
    if (providersFor?.settings !== settings || providersFor.table !== table)
      providersFor = { settings, table, byId: new Map(providersOf(settings, table).map((p) => [p.id, p])) };
    return providersFor.byId.get(key.provider.id) ?? key.provider;
  };
  const belongs = (key: SessionKey, dest: Endpoint): boolean => {
    const provider = current(key);
    return dest.scheme === 'https' && provider.hosts.includes(dest.host) && provider.ports.includes(dest.port);
  };
  const outOfPlace = (key: SessionKey, dest: Endpoint, where: string): CredentialUse => ({
    provider: key.provider.id,
    where,
    host: dest.host,
    port: dest.port,
    tls: dest.scheme === 'https',
    outcome: sources.settings().standInElsewhere === 'allow' ? 'allowed-leak' : 'refused',
    credentialRef: key.credentialRef,
  });

  function substitute(key: SessionKey, dest: Endpoint, headers: OutgoingHeaders, path: string, uses: CredentialUse[]): string {
    const realKey = real.get(key.provider.id)!;
    const used = (where: string): CredentialUse => ({
      provider: key.provider.id,
      where,
      host: dest.host,
      port: dest.port,
      tls: true,
      outcome: 'substituted',
      credentialRef: key.credentialRef,
    });
    for (const header of key.provider.headers) {
      const value = headers[header.name];
      if (typeof value !== 'string') continue;
      const bearer = /^bearer /i.exec(value);
      const carried = header.bearer ? (bearer ? value.slice(bearer[0].length) : null) : value;
      if (carried !== key.standIn) continue;
      headers[header.name] = header.bearer ? `Bearer ${realKey}` : realKey;
      uses.push(used(`header:${header.name}`));
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
    uses.push(used(`query:${name}`));
    return `${path.slice(0, q)}?${params.join('&')}`;
  }

  function sightings(key: SessionKey, dest: Endpoint, headers: OutgoingHeaders, path: string): CredentialUse[] {
    const found: CredentialUse[] = [];
    for (const [name, value] of Object.entries(headers)) {
      if (headerText(value)?.includes(key.standIn)) found.push(outOfPlace(key, dest, `header:${name}`));
    }
    if (path.includes(key.standIn) || decodedPath(path).includes(key.standIn)) found.push(outOfPlace(key, dest, 'url'));
    return found;
  }

  const broker: CredentialBroker = {
    keys,
    request(dest, headers, path) {
      const at = { ...dest, host: dest.host.toLowerCase() };
      const out: OutgoingHeaders = { ...headers };
      let outPath = path;
      const uses: CredentialUse[] = [];
      for (const key of keys) {
        if (belongs(key, at)) outPath = substitute(key, at, out, outPath, uses);
        else uses.push(...sightings(key, at, out, outPath));
      }
      const refused = uses.find((u) => u.outcome === 'refused');
      return { headers: out, path: outPath, uses, refusal: refused ? broker.refusal(refused) : null };
    },
    bodyScanner(dest) {
      const at = { ...dest, host: dest.host.toLowerCase() };
      const watched = keys.filter((key) => !belongs(key, at)).map((key) => ({ key, needle: Buffer.from(key.standIn) }));
      if (watched.length === 0) return null;
      const overlap = Math.max(...watched.map((w) => w.needle.length)) - 1;
      let tail = Buffer.alloc(0);
      let reported = false;
      return {
        refuses: sources.settings().standInElsewhere === 'refuse',
        push(chunk) {
          if (reported) return null;
          // The whole body is read: a stand-in past any cap would leave unseen. Only the seam with
          // the last chunk is copied.
          const seam = Buffer.concat([tail, chunk.subarray(0, overlap)]);
          tail = Buffer.from(
            chunk.length >= overlap ? chunk.subarray(chunk.length - overlap) : seam.subarray(Math.max(0, seam.length - overlap)),
          );
          const hit = watched.find((w) => seam.includes(w.needle) || chunk.includes(w.needle));
          if (!hit) return null;
          reported = true;
          return outOfPlace(hit.key, at, 'body');
        },
      };
    },
    scrubForms(dest) {
      const at = { ...dest, host: dest.host.toLowerCase() };
      const here = keys.filter((key) => belongs(key, at));
      return here.length === 0 ? null : here.flatMap((key) => forms.get(key.provider.id)!);
    },
    refusal(use) {
      const key = keys.find((k) => k.provider.id === use.provider);
      const provider = key ? current(key) : null;
      const hosts = provider?.hosts ?? [];
      const ports = provider?.ports ?? [];
      const dest: Endpoint = { scheme: use.tls ? 'https' : 'http', host: use.host, port: use.port };
      const homes = hosts.map((host) => placeOf({ scheme: 'https', host, port: ports[0] ?? 443 })).join(', ');
      const elsewhere = `To let stand-ins go elsewhere as they are, set "credentials": {"standInElsewhere": "allow"} in the policy file`;
      const [why, allow] = !hosts.includes(use.host)
        ? [`${use.host}, which is not one of ${use.provider}'s API hosts (${hosts.join(', ') || 'none'})`, elsewhere]
        : !use.tls
          ? [
              `${placeOf(dest)} over plain HTTP: the ${use.provider} key is released only over TLS (${homes})`,
              `Send it over https (the key never goes over plain HTTP). ${elsewhere}`,
            ]
          : [
              `${placeOf(dest)}, a port that is not one of ${use.provider}'s API ports (${ports.join(', ')})`,
              `To release the key on that port, list it in the policy file: "credentials": {"ports": {"${use.provider}": [${[...ports, use.port].join(', ')}]}}`,
            ];
      return `this request carries the session's stand-in for the ${use.provider} key (in ${use.where}) to ${why}; refused and recorded (rule ${STAND_IN_ELSEWHERE_RULE}). ${allow}`;
    },
  };
  return { guestEnv, broker };
}
