import type { Json } from '../json.ts';
import { emptyView, message, settings, turn, type RequestView } from '../requestView.ts';
import { ollamaLines } from './ollamaChat.ts';
import type { WireFormat } from './wire.ts';

// Ollama's native completion API, /api/generate: one prompt, answered as /api/chat is.

/** /api/generate: one prompt and an optional system prompt; it streams unless told not to. */
function generateRequest(body: Json): RequestView {
  const messages = [...(typeof body.system === 'string' ? [message('system', body.system)] : []), message('user', body.prompt)];
  return settings({ ...emptyView(), messages, turns: [turn('user', body.prompt)] }, { stream: body.stream !== false });
}

export const ollamaGenerate: WireFormat = {
  id: 'ollama-generate',
  path: /^\/api\/generate$/,
  request: generateRequest,
  response: { lines: ollamaLines },
};
