import { z } from 'zod';

// The providers whose keys stay on the host: where each key comes from on the host, how a client
// sends it (a header, optionally a query parameter), which API hosts and ports it belongs to (over
// TLS only), and the shape of its stand-in, so an agent's own format check on the key passes.
// Anthropic, OpenAI and Gemini are built in; a policy file's `credentials.providers` adds others,
// and its `credentials.hosts` and `credentials.ports` change a provider's hosts and ports.

export interface StandInShape {
  readonly prefix: string;
  /** Random characters after the prefix for a key too short to set the length (standIns.ts), from the base64url alphabet keys are made of. */
  readonly randomChars: number;
  /** Fixed characters after the random part (Anthropic keys end in "AA"). */
  readonly suffix: string;
}

/** Where a client puts the key: a header's whole value, or after `Bearer ` in one. */
export interface KeyHeader {
  readonly name: string;
  readonly bearer: boolean;
}

export interface Provider {
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

/** Where a provider's key is released unless its entry or the policy names other ports. */
export const DEFAULT_KEY_PORTS: readonly number[] = [443];

export const BUILT_IN_PROVIDERS: readonly Provider[] = [
  {
    id: 'anthropic',
    env: ['ANTHROPIC_API_KEY'],
    // x-api-key is the SDKs' and Claude Code's; Bearer is what OAuth-style clients send.
    headers: [
      { name: 'x-api-key', bearer: false },
      { name: 'authorization', bearer: true },
    ],
    query: null,
    hosts: ['api.anthropic.com'],
    ports: DEFAULT_KEY_PORTS,
    standIn: { prefix: 'sk-ant-api03-', randomChars: 93, suffix: 'AA' },
  },
  {
    id: 'openai',
    env: ['OPENAI_API_KEY'],
    headers: [{ name: 'authorization', bearer: true }],
    query: null,
    hosts: ['api.openai.com'],
    ports: DEFAULT_KEY_PORTS,
    standIn: { prefix: 'sk-proj-', randomChars: 156, suffix: '' },
  },
  {
    id: 'gemini',
    env: ['GEMINI_API_KEY', 'GOOGLE_API_KEY'],
    headers: [{ name: 'x-goog-api-key', bearer: false }],
    query: 'key',
    hosts: ['generativelanguage.googleapis.com'],
    ports: DEFAULT_KEY_PORTS,
    standIn: { prefix: 'AIza', randomChars: 35, suffix: '' },
  },
];

const hostName = z
  .string()
  .regex(/^[a-z0-9.-]+$/i, 'a host name (letters, digits, dots and dashes)')
  .transform((h) => h.toLowerCase());

const keyPorts = z.array(z.number().int().min(1).max(65535)).min(1);

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

/** Every provider, with the policy's hosts and ports applied. A provider id named twice keeps the first. */
export function providersOf(settings: CredentialsSettings): Provider[] {
  const extras: Provider[] = settings.providers.map((p) => ({
    id: p.id,
    env: [p.env],
    headers: [{ name: p.header, bearer: p.bearer }],
    query: p.query ?? null,
    hosts: p.hosts,
    ports: p.ports ?? DEFAULT_KEY_PORTS,
    standIn: { prefix: p.standInPrefix, randomChars: 48, suffix: '' },
  }));
  const seen = new Set<string>();
  return [...BUILT_IN_PROVIDERS, ...extras]
    .filter((p) => !seen.has(p.id) && seen.add(p.id))
    .map((p) => ({ ...p, hosts: settings.hosts[p.id] ?? p.hosts, ports: settings.ports[p.id] ?? p.ports }));
}
