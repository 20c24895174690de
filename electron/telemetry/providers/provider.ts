// What Capsem knows of a model provider, declared in one place: who it is, where its API lives
// (hosts and ports), which paths there are model calls and in which wire format (telemetry/wire/),
// how its calls are priced, and how its key travels (for the credential broker and the agents'
// settings). Detection, pricing, the broker, `capsem check` and the timeline all read these.

/** A provider's model API under one base path: `${basePath}/v1/chat/completions` read as `wire`. */
export interface ProviderEndpoint {
  /** What comes before the wire format's own path ('' for none, '/openai' for Groq's). */
  readonly basePath: string;
  /** A wire format's id (telemetry/wire/), recorded as model_calls.wire. */
  readonly wire: string;
}

export interface StandInShape {
  readonly prefix: string;
  /** Random characters after the prefix for a key too short to set the length (credentials/standIns.ts), from the base64url alphabet keys are made of. */
  readonly randomChars: number;
  /** Fixed characters after the random part (Anthropic keys end in "AA"). */
  readonly suffix: string;
}

/** Where a client puts the key: a header's whole value, or after `Bearer ` in one. */
export interface KeyHeader {
  readonly name: string;
  readonly bearer: boolean;
}

/** How a provider's key travels, for the broker that keeps it on the host. */
export interface ProviderKey {
  /** The name the key goes by in the key store, `capsem keys`, the policy's `credentials` section and the ledger. */
  readonly name: string;
  /** Host variables the key is read from, the first set wins; the guest gets the stand-in under the first. */
  readonly env: readonly string[];
  readonly headers: readonly KeyHeader[];
  /** A query parameter that carries the key (Gemini's `key=`), or null. */
  readonly query: string | null;
  readonly standIn: StandInShape;
}

/** Priced by the genai-prices catalog under this provider id. */
export type CatalogPrice = string;
/** Runs on the user's machine: costs nothing. */
export const LOCAL_PRICE = 'local';
/** No price is known: the call's cost is recorded as unknown (null), not as zero. */
export const UNPRICED = 'unpriced';

export interface ModelProvider {
  /** The name recorded in model_calls.provider. */
  readonly id: string;
  readonly label: string;
  /** Its API's host names, lower case. */
  readonly hosts: readonly string[];
  /** The ports on those hosts its API answers on: 443 unless it says otherwise. */
  readonly ports: readonly number[];
  readonly endpoints: readonly ProviderEndpoint[];
  /** Its id in the bundled genai-prices catalog, LOCAL_PRICE or UNPRICED. */
  readonly price: CatalogPrice;
  /** Null for a provider that takes no key (a local server). */
  readonly key: ProviderKey | null;
}

/** Where a provider's API answers unless its declaration names other ports. */
export const DEFAULT_PORTS: readonly number[] = [443];

/** The wire formats a server that speaks OpenAI's API serves. */
export const OPENAI_WIRES = ['openai-chat', 'openai-responses'] as const;

/** The endpoints of `wires` under one base path. */
export function endpointsAt(basePath: string, wires: readonly string[]): ProviderEndpoint[] {
  return wires.map((wire) => ({ basePath, wire }));
}

/** A key sent as `Authorization: Bearer KEY`, read from `env`, named after the provider unless said otherwise. */
export function bearerKey(name: string, env: string, standIn: Partial<StandInShape> = {}): ProviderKey {
  return {
    name,
    env: [env],
    headers: [{ name: 'authorization', bearer: true }],
    query: null,
    standIn: { prefix: '', randomChars: 48, suffix: '', ...standIn },
  };
}

export interface CompatibleProvider {
  readonly id: string;
  readonly label: string;
  readonly hosts: readonly string[];
  readonly ports?: readonly number[];
  /** What comes before /v1/chat/completions on its hosts. */
  readonly basePath?: string;
  /** The wire formats it serves there: Chat Completions unless said. */
  readonly wires?: readonly string[];
  /** Its genai-prices id; the provider's own id unless said. */
  readonly price?: CatalogPrice;
  readonly key: ProviderKey | null;
}

/** A provider that serves OpenAI's API (Chat Completions unless it says which) under one base path. */
export function openaiCompatible(p: CompatibleProvider): ModelProvider {
  return {
    id: p.id,
    label: p.label,
    hosts: p.hosts,
    ports: p.ports ?? DEFAULT_PORTS,
    endpoints: endpointsAt(p.basePath ?? '', p.wires ?? ['openai-chat']),
    price: p.price ?? p.id,
    key: p.key,
  };
}
