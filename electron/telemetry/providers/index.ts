import { findProvider } from '@pydantic/genai-prices';
import type { RequestView } from '../requestView.ts';
import { matchWire, wireNamed, wireRequestView, WIRE_FORMATS, type WireMatch } from '../wire/index.ts';
import { anthropic } from './anthropic.ts';
import { deepseek } from './deepseek.ts';
import { google } from './google.ts';
import { groq } from './groq.ts';
import { lmstudio } from './lmstudio.ts';
import { mistral } from './mistral.ts';
import { ollama } from './ollama.ts';
import { openai } from './openai.ts';
import { openrouter } from './openrouter.ts';
import { together } from './together.ts';
import { vllm } from './vllm.ts';
import { UNPRICED, type ModelProvider } from './provider.ts';

// Every model provider Capsem knows, listed once; a policy file adds its own (policy/). A request is
// a model call when its host and port are a provider's and its path one of that provider's
// endpoints, or, on a host no provider names, when its path has a wire format's shape.

export const BUILT_IN_PROVIDERS: readonly ModelProvider[] = [
  anthropic,
  openai,
  google,
  mistral,
  groq,
  deepseek,
  openrouter,
  together,
  ollama,
  vllm,
  lmstudio,
];

/** What a request is, as the table reads it: who serves it, in which wire format, and how it is priced. */
export interface ModelApi {
  /** Recorded as model_calls.provider. */
  readonly provider: string;
  readonly wire: string;
  /** A genai-prices provider id, LOCAL_PRICE or UNPRICED. */
  readonly pricing: string;
  /** The model named in the URL path (Gemini), the last place model resolution looks. */
  readonly pathModel?: string;
}

/** The one built-in provider that speaks a wire format, if only one does: Anthropic's Messages, Gemini's, Ollama's own. */
function soleSpeaker(wire: string): ModelProvider | undefined {
  const speakers = BUILT_IN_PROVIDERS.filter((p) => p.endpoints.some((e) => e.wire === wire));
  return speakers.length === 1 ? speakers[0] : undefined;
}

/** The genai-prices provider whose API lives at this host, cached: a client names the same few hosts on every request. */
const catalogByHost = new Map<string, string | null>();
function catalogProviderAt(scheme: string, host: string): string | null {
  const place = `${scheme}://${host}`;
  let id = catalogByHost.get(place);
  if (id === undefined) {
    id = findProvider({ providerApiUrl: place })?.id ?? null;
    catalogByHost.set(place, id);
  }
  return id;
}

const withModel = (api: Omit<ModelApi, 'pathModel'>, match: WireMatch): ModelApi =>
  match.pathModel === undefined ? api : { ...api, pathModel: match.pathModel };

export class ProviderTable {
  constructor(readonly providers: readonly ModelProvider[]) {}

  named(id: string): ModelProvider | undefined {
    return this.providers.find((p) => p.id === id);
  }

  /** The providers whose API answers at host:port, in the table's order. */
  at(host: string, port: number): ModelProvider[] {
    const name = host.toLowerCase();
    return this.providers.filter((p) => p.hosts.includes(name) && p.ports.includes(port));
  }

  /**
   * Which model API a request is; null for health checks, auth, token counting and everything else.
   * On a provider's host, only the endpoints of the providers there count. On a host no provider
   * names, a path in a wire format's shape is still a model call: Anthropic's, Gemini's and
   * Ollama's own formats are their provider's; an OpenAI-compatible one is recorded under the
   * genai-prices provider whose API the host is, else under the host's name, unpriced.
   */
  detect(host: string, port: number, scheme: string, path: string): ModelApi | null {
    const bare = path.split('?')[0]!;
    const owners = this.at(host, port);
    for (const owner of owners) {
      for (const endpoint of owner.endpoints) {
        if (!bare.startsWith(endpoint.basePath)) continue;
        const match = matchWire(wireNamed(endpoint.wire), bare.slice(endpoint.basePath.length));
        if (match) return withModel({ provider: owner.id, wire: endpoint.wire, pricing: owner.price }, match);
      }
    }
    if (owners.length > 0) return null;
    for (const wire of WIRE_FORMATS) {
      const match = matchWire(wire, bare);
      if (!match) continue;
      const home = soleSpeaker(wire.id);
      if (home) return withModel({ provider: home.id, wire: wire.id, pricing: home.price }, match);
      const catalog = catalogProviderAt(scheme, host.toLowerCase());
      return withModel(
        catalog
          ? { provider: catalog, wire: wire.id, pricing: catalog }
          : { provider: host.toLowerCase(), wire: wire.id, pricing: UNPRICED },
        match,
      );
    }
    return null;
  }

  /** How a recorded provider's calls are priced: its declaration's, else the catalog's provider of that name. */
  pricingOf(provider: string): string {
    return this.named(provider)?.price ?? provider;
  }

  /**
   * The request view of a call recorded under `provider` at `path`: the wire format of the
   * provider's endpoint that claims the path, else of any wire format the path has the shape of,
   * else Chat Completions (what an unknown provider most likely speaks).
   */
  requestView(provider: string, path: string, body: unknown): RequestView {
    const bare = path.split('?')[0]!;
    const declared = this.named(provider)?.endpoints.find(
      (e) => bare.startsWith(e.basePath) && wireNamed(e.wire).path.test(bare.slice(e.basePath.length)),
    );
    const wire = declared?.wire ?? WIRE_FORMATS.find((w) => w.path.test(bare))?.id ?? 'openai-chat';
    return wireRequestView(wire, body);
  }
}

/** The built-in providers alone: what a reader without the session's policy knows. */
export const BUILT_IN_TABLE = new ProviderTable(BUILT_IN_PROVIDERS);

export const providerNamed = (id: string): ModelProvider | undefined => BUILT_IN_TABLE.named(id);

/** The request view of a recorded call, read with the built-in providers. */
export function requestView(provider: string, path: string, body: unknown): RequestView {
  return BUILT_IN_TABLE.requestView(provider, path, body);
}
