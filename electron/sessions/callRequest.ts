import { emptyView, type RequestView } from '../telemetry/requestView.ts';
import { WIRE_FORMATS, wireRequestView } from '../telemetry/wire/index.ts';
import { requestViewByPath } from './foreignDatabases.ts';

// A model call's request as the API and search show it: its stored body read in the wire format
// the recorder read it in (model_calls.wire), never by detecting the format again from its path.
// model_items keeps the prompt, the answer and the tool calls; the whole conversation, the
// declared tools and the settings are only in the body. A call with no recorded wire was written
// by another tool (foreignDatabases.ts).

export interface RecordedCall {
  readonly wire?: unknown;
  readonly provider?: unknown;
  readonly path?: unknown;
}

export function requestViewOfCall(call: RecordedCall, body: unknown): RequestView {
  if (typeof call.wire !== 'string' || call.wire === '') return requestViewByPath(String(call.provider), String(call.path), body);
  const wire = call.wire;
  return WIRE_FORMATS.some((w) => w.id === wire) ? wireRequestView(wire, body) : emptyView();
}
