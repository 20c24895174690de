import type { Json } from '../json.ts';
import type { ResponseReader } from '../modelResponse.ts';
import type { RequestView } from '../requestView.ts';

// What Capsem knows of a model provider, declared in one place: which request paths are its model
// calls, how their requests and responses read, where its API usually lives and how it is priced.
// Detection, parsing, `capsem check`, the timeline and the wire events all read these declarations.

export interface ModelEndpoint {
  /** The wire format its bodies are written in ('anthropic-messages', 'openai-chat', ...), recorded as model_calls.wire. */
  readonly wire: string;
  /** The request path without its query; a first capture group is the model the path names (Gemini). */
  readonly path: RegExp;
  readonly request: (body: Json) => RequestView;
  readonly response: ResponseReader;
}

export interface ModelProvider {
  /** The name recorded in model_calls.provider. */
  readonly id: string;
  /** Where its API usually lives, for rows recorded without a host. */
  readonly host: string;
  /** Its id in the bundled genai-prices catalog; null for a local model, which costs nothing. */
  readonly priceCatalogId: string | null;
  readonly endpoints: readonly ModelEndpoint[];
}
