import type { Json } from '../json.ts';
import type { ResponseReader } from '../modelResponse.ts';
import type { RequestView } from '../requestView.ts';

// How a model API's bodies are written, apart from who serves it: Chat Completions is spoken by
// OpenAI, Mistral, Groq, vLLM and Ollama alike. A provider (telemetry/providers/) names the wire
// formats it serves and under which base path; a wire format says how its requests and responses read.

export interface WireFormat {
  /** Recorded as model_calls.wire. */
  readonly id: string;
  /** The request path after the provider's base path, without its query; a first capture group is the model the path names (Gemini). */
  readonly path: RegExp;
  readonly request: (body: Json) => RequestView;
  readonly response: ResponseReader;
}
