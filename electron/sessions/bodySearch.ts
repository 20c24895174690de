import { requestViewOfCall } from './callRequest.ts';
import { finalSeqOf, requestSeqOf } from './eventSeq.ts';
import { EXCHANGE_EVENT_ROW_SEQ, type SessionEventStore } from './sessionEventStore.ts';

// GET /v1/sessions/{id}/search: the seqs of the events whose bodies hold q, reading only what the
// summary view drops (request and response bodies, inference lists, MCP params and results),
// keys and values as the detail view shows them. One pass, one event at a time, and it stops as
// soon as the client has gone.

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

function matches(parts: readonly string[], needle: string): boolean {
  // NUL separators keep a match from spanning two keys or values.
  return parts.length > 0 && parts.join('\u0000').toLowerCase().includes(needle);
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

interface BodyVerdict {
  readonly hit: boolean;
  /** The parsed JSON, when the body was parsed (only bodies that may hold the needle are). */
  readonly json?: unknown;
}

/**
 * Whether a body, as the detail view shows it (JSON as keys and values, text as text, binary not
 * at all), holds the needle. Most bodies do not: when the whole text, lowercased, lacks the needle
 * and holds no \u escape that could hide it, no key or value can hold it either, and the body is
 * never parsed.
 */
function searchBody(body: unknown, needle: string, plainNeedle: boolean): BodyVerdict {
  if (!(body instanceof Uint8Array)) return { hit: false };
  let text: string;
  try {
    text = utf8.decode(body);
  } catch {
    return { hit: false };
  }
  if (plainNeedle && !text.toLowerCase().includes(needle) && !text.includes('\\u')) return { hit: false };
  const first = text.trimStart()[0];
  if (first === '{' || first === '[') {
    try {
      const json: unknown = JSON.parse(text);
      const parts: string[] = [];
      collectJson(json, parts);
      return { hit: matches(parts, needle), json };
    } catch {
      // not JSON after all: searched as text
    }
  }
  return { hit: text.toLowerCase().includes(needle) };
}

export interface SearchResult {
  seqs: number[];
  lastSeq: number;
}

/** A row that may match, and the events a match lands on (an exchange's request or its response). */
interface Candidate {
  check: () => number[];
}

const WINDOW = 512;

/**
 * One pass over the session in seq windows. Each window reads only the columns search needs, a
 * table at a time, and lets SQLite rule out the bodies that cannot match before any is copied out.
 */
export async function searchBodies(store: SessionEventStore, q: string, aborted: () => boolean): Promise<SearchResult | null> {
  const needle = q.toLowerCase();
  // A needle with a quote, backslash or control character could hide behind JSON escaping.
  const plainNeedle = !/["\\\u0000-\u001f]/.test(needle);
  // For a plain ASCII needle SQLite rules out most bodies first: LIKE folds ASCII case in C. JSON
  // encoders escape only quotes, backslashes, control and (optionally) non-ASCII characters, none
  // of which a plain ASCII needle holds, so a body LIKE rules out cannot match once parsed. (The
  // two non-ASCII letters whose lowercase is ASCII, U+0130 and U+212A, are not folded there.)
  const likePattern = plainNeedle && /^[\x20-\x7e]+$/.test(needle) ? `%${needle.replace(/[\\%_]/g, (c) => `\\${c}`)}%` : null;
  const db = store.db;
  const netRows = db.prepare(
    `SELECT seq, event_id, request_headers, response_headers, query, status_code, ${EXCHANGE_EVENT_ROW_SEQ} AS exchange_seq FROM net_events WHERE seq > ? AND seq <= ?`,
  );
  const probes = db.prepare(
    `SELECT n.event_id, b.direction, ${likePattern === null ? '1' : "CAST(b.body AS TEXT) LIKE ? ESCAPE '\\'"} AS maybe
     FROM net_events n JOIN event_body_blobs b ON b.event_id = n.event_id WHERE n.seq > ? AND n.seq <= ? AND b.body IS NOT NULL ORDER BY n.seq, b.direction`,
  );
  const modelRows = db.prepare('SELECT seq, id, event_id, net_event_id, provider, path, wire FROM model_calls WHERE seq > ? AND seq <= ?');
  const emitted = db.prepare('SELECT model_call_id, tool_name, arguments FROM tool_calls WHERE model_call_id BETWEEN ? AND ?');
  const lastSeq = store.newestEventSeq();
  const seqs = new Set<number>();
  const requestVerdicts = new Map<string, BodyVerdict>();
  let sliceStart = performance.now();
  for (let lo = 0; lo < lastSeq; lo += WINDOW) {
    const hi = lo + WINDOW;
    const candidates: Candidate[] = [];
    const bodyHits = new Set<string>();
    requestVerdicts.clear();
    for (const probe of (likePattern === null ? probes.all(lo, hi) : probes.all(likePattern, lo, hi)) as {
      event_id: string;
      direction: string;
      maybe: number;
    }[]) {
      const verdict = probe.maybe ? searchBody(store.bodyBytes(probe.event_id, probe.direction), needle, plainNeedle) : { hit: false };
      if (probe.direction === 'request') requestVerdicts.set(probe.event_id, verdict);
      if (verdict.hit) bodyHits.add(`${probe.event_id}\u0000${probe.direction}`);
    }
    for (const row of netRows.all(lo, hi) as Record<string, unknown>[]) {
      const exchange = row.exchange_seq as number;
      const side = (direction: 'request' | 'response', headers: unknown, extra: unknown): boolean => {
        if (bodyHits.has(`${String(row.event_id)}\u0000${direction}`)) return true;
        const parts: string[] = [];
        if (typeof headers === 'string') {
          try {
            collectJson(JSON.parse(headers), parts);
          } catch {
            parts.push(headers);
          }
        }
        if (typeof extra === 'string' || typeof extra === 'number') parts.push(String(extra));
        return matches(parts, needle);
      };
      candidates.push({
        check: () => [
          ...(side('request', row.request_headers, row.query) ? [requestSeqOf(exchange)] : []),
          ...(side('response', row.response_headers, row.status_code) ? [finalSeqOf(exchange)] : []),
        ],
      });
    }
    const models = modelRows.all(lo, hi) as Record<string, unknown>[];
    const toolCalls = new Map<number, string[]>();
    if (models.length > 0) {
      const ids = models.map((m) => m.id as number);
      for (const c of emitted.all(Math.min(...ids), Math.max(...ids)) as Record<string, unknown>[]) {
        const list = toolCalls.get(c.model_call_id as number) ?? [];
        list.push(String(c.tool_name), String(c.arguments ?? ''));
        toolCalls.set(c.model_call_id as number, list);
      }
    }
    for (const row of models) {
      candidates.push({
        check: () => {
          const exchange = typeof row.net_event_id === 'string' ? row.net_event_id : String(row.event_id);
          const request = requestVerdicts.get(exchange) ?? searchBody(store.bodyBytes(exchange, 'request'), needle, plainNeedle);
          const parts: string[] = [];
          // The request view is drawn from the request body: if no key or value of the body holds
          // the needle, none of the view's messages, tools or results can.
          if (request.hit) {
            const view = requestViewOfCall(row, request.json);
            for (const m of view.messages) parts.push(m.content);
            for (const t of view.tools) parts.push(t.name, t.description ?? '', JSON.stringify(t.parameters ?? null));
            for (const r of view.toolResults) parts.push(r.content);
            for (const c of view.historyToolCalls) parts.push(c.name, c.arguments);
          }
          const seq = row.seq as number;
          return [
            ...(matches(parts, needle) ? [requestSeqOf(seq)] : []),
            ...(matches(toolCalls.get(row.id as number) ?? [], needle) ? [finalSeqOf(seq)] : []),
          ];
        },
      });
    }
    for (const c of candidates) for (const seq of c.check()) seqs.add(seq);
    // Asked after every window, not only after a yield: a search the LIKE filter makes fast would
    // otherwise read the whole session for a client that has gone.
    if (aborted()) return null;
    if (performance.now() - sliceStart > SLICE_MS) {
      await new Promise((resolve) => setImmediate(resolve));
      if (aborted()) return null;
      sliceStart = performance.now();
    }
  }
  return { seqs: [...seqs].sort((a, b) => a - b), lastSeq };
}
