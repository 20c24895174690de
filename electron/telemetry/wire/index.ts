import { isObject } from '../json.ts';
import { readModelResponse, type ModelResponse } from '../modelResponse.ts';
import { emptyView, type RequestView } from '../requestView.ts';
import { anthropic } from './anthropic.ts';
import { gemini } from './gemini.ts';
import { ollama } from './ollama.ts';
import { openai } from './openai.ts';
import type { ModelEndpoint, ModelProvider } from './provider.ts';

// Every model provider Capsem reads, listed once. A request is a model call exactly when one of
// these endpoints claims its path: the recorder, `capsem check` and the timeline all ask here.

export const MODEL_PROVIDERS: readonly ModelProvider[] = [anthropic, openai, gemini, ollama];

export interface ModelApi {
  readonly provider: string;
  readonly wire: string;
  /** The model named in the URL path (Gemini), the last place model resolution looks. */
  readonly pathModel?: string;
}

/** A path segment percent-decoded, or as it came when its escapes are broken (%E0%A4%A). */
function decodedSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

/** Which model API a request path is; null for health checks, auth and everything else. */
export function detectModelApi(path: string): ModelApi | null {
  const bare = path.split('?')[0]!;
  for (const provider of MODEL_PROVIDERS) {
    for (const endpoint of provider.endpoints) {
      const match = endpoint.path.exec(bare);
      if (!match) continue;
      return match[1] === undefined
        ? { provider: provider.id, wire: endpoint.wire }
        : { provider: provider.id, wire: endpoint.wire, pathModel: decodedSegment(match[1]) };
    }
  }
  return null;
}

export const providerNamed = (id: string): ModelProvider | undefined => MODEL_PROVIDERS.find((p) => p.id === id);

/** A recorded call's endpoint: the provider's one that claims the path, else its first; Chat Completions for a provider unknown here. */
function endpointOf(provider: string, path: string): ModelEndpoint {
  const bare = path.split('?')[0]!;
  const endpoints = providerNamed(provider)?.endpoints ?? openai.endpoints;
  return endpoints.find((e) => e.path.test(bare)) ?? endpoints[0]!;
}

/** The request view for a provider and API path; an unknown shape gives an empty view. */
export function requestView(provider: string, path: string, body: unknown): RequestView {
  return isObject(body) ? endpointOf(provider, path).request(body) : emptyView();
}

/** Reads a model API response body (already decoded from its Content-Encoding). */
export function parseModelResponse(api: ModelApi, contentType: string | undefined, body: Uint8Array): ModelResponse {
  const endpoint = MODEL_PROVIDERS.flatMap((p) => p.endpoints).find((e) => e.wire === api.wire);
  if (!endpoint) throw new Error(`no model endpoint ${api.wire}`);
  const out = readModelResponse(endpoint.response, contentType, body);
  out.model ??= api.pathModel;
  return out;
}
