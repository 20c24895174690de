import { requestView } from '../telemetry/requestView.ts';
import type { EventRef, SessionEventStore } from './sessionEventStore.ts';

// GET /v1/sessions/{id}/search: the seqs of the events whose bodies hold q, reading only what the
// summary view drops (request and response bodies, inference lists, MCP params and results),
// keys and values as the detail view shows them. One pass, one event at a time, and it stops as
// soon as the client has gone.

const PAGE = 256;
const SLICE_MS = 15;

/** Every key and scalar value of a JSON value, in document order. */
function collectJson(value: unknown, out: string[]): void {
  if (typeof value === 'string') out.push(value);
  else if (typeof value === 'number' || typeof value === 'boolean') out.push(String(value));
  else if (Array.isArray(value)) for (const v of value) collectJson(v, out);
  else if (value !== null && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) {
      out.push(k);
      collectJson(v, out);
    }
  }
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** A body as the detail view shows it: JSON as its keys and values, text as text, binary not at all. */
function bodyStrings(body: unknown, out: string[]): unknown {
  if (!(body instanceof Uint8Array)) return undefined;
  let textBody: string;
  try {
    textBody = utf8.decode(body);
  } catch {
    return undefined;
  }
  const first = textBody.trimStart()[0];
  if (first === '{' || first === '[') {
    try {
      const parsed: unknown = JSON.parse(textBody);
      collectJson(parsed, out);
      return parsed;
    } catch {
      // not JSON after all: searched as text below
    }
  }
  out.push(textBody);
  return undefined;
}

function matches(parts: readonly string[], needle: string): boolean {
  // NUL separators keep a match from spanning two keys or values.
  return parts.length > 0 && parts.join('\u0000').toLowerCase().includes(needle);
}

export interface SearchResult {
  seqs: number[];
  lastSeq: number;
}

export async function searchSession(store: SessionEventStore, q: string, aborted: () => boolean): Promise<SearchResult | null> {
  const needle = q.toLowerCase();
  const seqs: number[] = [];
  // A model call's request body is its HTTP exchange's: parse it once for both events.
  let parsedFor: string | null = null;
  let parsedBody: unknown;
  let lastSeq = 0;
  let sliceStart = performance.now();
  let refs: EventRef[] = store.after(0, PAGE);
  while (refs.length > 0) {
    for (const ref of refs) {
      lastSeq = ref.seq;
      const row = store.row(ref);
      const parts: string[] = [];
      if (ref.table === 'net_events') {
        const eventId = String(row.event_id);
        for (const blob of store.blobs(eventId)) {
          const parsed = bodyStrings(blob.body, parts);
          if (blob.direction === 'request') {
            parsedFor = eventId;
            parsedBody = parsed;
          }
        }
        if (typeof row.request_headers === 'string' || typeof row.response_headers === 'string') {
          for (const headers of [row.request_headers, row.response_headers]) {
            if (typeof headers !== 'string') continue;
            try {
              collectJson(JSON.parse(headers), parts);
            } catch {
              parts.push(headers);
            }
          }
        }
        if (typeof row.query === 'string') parts.push(row.query);
        if (typeof row.status_code === 'number') parts.push(String(row.status_code));
      } else if (ref.table === 'model_calls') {
        const exchange = typeof row.net_event_id === 'string' ? row.net_event_id : String(row.event_id);
        const body = parsedFor === exchange ? parsedBody : store.requestBody(exchange);
        const view = requestView(String(row.provider), String(row.path), body);
        for (const m of view.messages) parts.push(m.content);
        for (const t of view.tools) parts.push(t.name, t.description ?? '', JSON.stringify(t.parameters ?? null));
        for (const r of view.toolResults) parts.push(r.content);
        for (const c of view.historyToolCalls) parts.push(c.name, c.arguments);
        for (const c of store.toolCallsOf(row.id)) {
          parts.push(String(c.tool_name), String(c.arguments ?? ''));
        }
      } else if (ref.table === 'tool_calls' && row.origin === 'mcp') {
        parts.push(String(row.tool_name), String(row.arguments ?? ''), String(row.response_preview ?? ''));
      }
      if (matches(parts, needle)) seqs.push(ref.seq);
    }
    if (performance.now() - sliceStart > SLICE_MS) {
      await new Promise((resolve) => setImmediate(resolve));
      if (aborted()) return null;
      sliceStart = performance.now();
    }
    refs = store.after(lastSeq, PAGE);
  }
  return { seqs, lastSeq };
}
