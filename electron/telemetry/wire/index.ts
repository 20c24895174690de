import { isObject } from '../json.ts';
import { readModelResponse, type ModelResponse } from '../modelResponse.ts';
import { emptyView, type RequestView } from '../requestView.ts';
import { anthropicMessages } from './anthropicMessages.ts';
import { geminiGenerate } from './geminiGenerate.ts';
import { ollamaChat } from './ollamaChat.ts';
import { ollamaGenerate } from './ollamaGenerate.ts';
import { openaiChat } from './openaiChat.ts';
import { openaiResponses } from './openaiResponses.ts';
import type { WireFormat } from './wire.ts';

// Every wire format Capsem reads, listed once. Which one a request speaks is the provider table's
// answer (telemetry/providers/); reading its bodies is this module's.

export const WIRE_FORMATS: readonly WireFormat[] = [
  anthropicMessages,
  openaiChat,
  openaiResponses,
  geminiGenerate,
  ollamaChat,
  ollamaGenerate,
];

/** The wire format a path (after any base path) has the shape of, with the model it names; null when none. */
export interface WireMatch {
  readonly wire: WireFormat;
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

/** Whether `path` (without its query) has `wire`'s shape, and the model its path names. */
export function matchWire(wire: WireFormat, path: string): WireMatch | null {
  const match = wire.path.exec(path);
  if (!match) return null;
  return match[1] === undefined ? { wire } : { wire, pathModel: decodedSegment(match[1]) };
}

export function wireNamed(id: string): WireFormat {
  const wire = WIRE_FORMATS.find((w) => w.id === id);
  if (!wire) throw new Error(`no wire format ${id}`);
  return wire;
}

/** The request view of a body in a wire format; an unknown shape gives an empty view. */
export function wireRequestView(wire: string, body: unknown): RequestView {
  return isObject(body) ? wireNamed(wire).request(body) : emptyView();
}

/** Reads a model API response body (already decoded from its Content-Encoding). */
export function parseModelResponse(
  api: { readonly wire: string; readonly pathModel?: string },
  contentType: string | undefined,
  body: Uint8Array,
): ModelResponse {
  const out = readModelResponse(wireNamed(api.wire).response, contentType, body);
  out.model ??= api.pathModel;
  return out;
}
