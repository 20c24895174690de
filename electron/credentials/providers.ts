import { z } from 'zod';
import { BUILT_IN_TABLE, type ProviderTable } from '../telemetry/providers/index.ts';
import { DEFAULT_PORTS, type KeyHeader, type StandInShape } from '../telemetry/providers/provider.ts';

// The providers whose keys stay on the host, as the broker sees them: where each key comes from on
// the host, how a client sends it (a header, optionally a query parameter), which API hosts and
// ports it belongs to (over TLS only), and the shape of its stand-in, so an agent's own format
// check on the key passes. Every provider of the table (telemetry/providers/, with the policy
// file's `providers`) that takes a key is one; the policy's `credentials.providers` adds key-only
// ones, and its `credentials.hosts` and `credentials.ports` change a provider's hosts and ports.

export interface Provider {
  /** The key's name: in the key store, `capsem keys`, the policy's credentials section and the ledger. */
  readonly id: string;
  /** Host variables the key is read from, the first set wins; the guest gets the stand-in under the first. */
  readonly env: readonly string[];
  readonly headers: readonly KeyHeader[];
  /** A query parameter that carries the key (Gemini's `key=`), or null. */
  readonly query: string | null;
  readonly hosts: readonly string[];
  /** The TLS ports on those hosts the key is released on: 443 unless the provider or the policy says otherwise. */
  readonly ports: readonly number[];
  readonly standIn: StandInShape;
}

/** A host name as policy entries give it, compared in lower case. */
export const hostName = z
  .string()
  .regex(/^[a-z0-9.-]+$/i, 'a host name (letters, digits, dots and dashes)')
  .transform((h) => h.toLowerCase());

export const keyPorts = z.array(z.number().int().min(1).max(65535)).min(1);

const extraProvider = z.object({
  id: z.string().regex(/^[a-z][a-z0-9-]{0,31}$/, 'lowercase letters, digits and dashes'),
  env: z.string().regex(/^[A-Z_][A-Z0-9_]*$/, 'an environment variable name'),
  header: z
    .string()
    .regex(/^[a-z0-9-]+$/i, 'a header name')
    .transform((h) => h.toLowerCase()),
  bearer: z.boolean().default(false),
  query: z.string().min(1).optional(),
  hosts: z.array(hostName).min(1),
  ports: keyPorts.optional(),
  standInPrefix: z
    .string()
    .regex(/^[A-Za-z0-9_-]{0,32}$/)
    .default(''),
});

/** The `credentials` section of the policy file. */
export const credentialsSettings = z
  .object({
    /** What happens to a stand-in seen anywhere but its provider's hosts: refused (the default), or let through and recorded. */
    standInElsewhere: z.enum(['refuse', 'allow']).default('refuse'),
    /** A provider's API hosts, replacing the built-in list. */
    hosts: z.record(z.string(), z.array(hostName).min(1)).default({}),
    /** A provider's TLS ports on those hosts, replacing its entry's (443 unless it names others). */
    ports: z.record(z.string(), keyPorts).default({}),
    providers: z.array(extraProvider).default([]),
  })
  .strict();

export type CredentialsSettings = z.infer<typeof credentialsSettings>;

export const DEFAULT_CREDENTIALS_SETTINGS: CredentialsSettings = { standInElsewhere: 'refuse', hosts: {}, ports: {}, providers: [] };

/** The key view of the table's providers that take a key. */
function keyedProviders(table: ProviderTable): Provider[] {
  return table.providers.flatMap((p) =>
    p.key
      ? [
          {
            id: p.key.name,
            env: p.key.env,
            headers: p.key.headers,
            query: p.key.query,
            hosts: p.hosts,
            ports: p.ports,
            standIn: p.key.standIn,
          },
        ]
      : [],
  );
}

/** Every provider that takes a key, with the policy's hosts and ports applied. A provider id named twice keeps the first. */
export function providersOf(settings: CredentialsSettings, table: ProviderTable = BUILT_IN_TABLE): Provider[] {
  const extras: Provider[] = settings.providers.map((p) => ({
    id: p.id,
    env: [p.env],
    headers: [{ name: p.header, bearer: p.bearer }],
    query: p.query ?? null,
    hosts: p.hosts,
    ports: p.ports ?? DEFAULT_PORTS,
    standIn: { prefix: p.standInPrefix, randomChars: 48, suffix: '' },
  }));
  const seen = new Set<string>();
  return [...keyedProviders(table), ...extras]
    .filter((p) => !seen.has(p.id) && seen.add(p.id))
    .map((p) => ({ ...p, hosts: settings.hosts[p.id] ?? p.hosts, ports: settings.ports[p.id] ?? p.ports }));
}
