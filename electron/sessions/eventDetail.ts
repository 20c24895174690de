import type { Body, EventDetail, Frame, TableKind } from '../contract/appContract.ts';
import { bodyText, BodyTextCache } from './bodyText.ts';
import { TABLE_SPECS } from './eventTable.ts';
import type { OpenSession } from './sessionStores.ts';

// events.detail and events.body: one row whole, its headers, its bodies decoded, and the links
// between a model call, the HTTP exchange that carried it and the tools it asked for.

/** A detail the session cannot give: no such row or body, or a body that is not text; each transport words it as its own error. */
export class EventReadError extends Error {
  override name = 'EventReadError';

  constructor(
    readonly code: 'unknown_event' | 'binary_body',
    message: string,
  ) {
    super(message);
  }
}

/** The part of a body a detail pane gets at once; the rest comes through events.body. */
export const PREVIEW_CHARS = 256 * 1024;
/** Frames a detail pane lists at once, and the bytes of each shown as hex. */
export const FRAMES_SHOWN = 500;
const FRAME_HEX_BYTES = 256;

type Cell = string | number | null;
type Row = Record<string, unknown>;

const HEADER_COLUMNS = new Set(['request_headers', 'response_headers']);

function headers(value: unknown): Record<string, string> | null {
  if (typeof value !== 'string') return null;
  try {
    const parsed = JSON.parse(value) as unknown;
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return null;
    const out: Record<string, string> = {};
    for (const [k, v] of Object.entries(parsed)) out[k] = Array.isArray(v) ? v.map(String).join(', ') : String(v);
    return out;
  } catch {
    return null;
  }
}

function fields(row: Row): Record<string, Cell> {
  const out: Record<string, Cell> = {};
  for (const [k, v] of Object.entries(row)) {
    if (HEADER_COLUMNS.has(k)) continue;
    if (v === null || typeof v === 'string' || typeof v === 'number') out[k] = v;
    else if (typeof v === 'bigint') out[k] = Number(v);
  }
  return out;
}

interface BlobRow {
  event_id: string;
  direction: 'request' | 'response';
  content_type: string | null;
  content_encoding: string | null;
  original_bytes: number;
  stored_bytes: number;
  truncated: number;
  body: Uint8Array | null;
}

export class EventDetails {
  private readonly texts = new BodyTextCache();

  private row(session: OpenSession, kind: TableKind, seq: number): Row {
    const spec = TABLE_SPECS[kind];
    const row = session.tables().has(spec.table)
      ? (session.store.db.prepare(`SELECT * FROM ${spec.table} WHERE ${spec.seq} = ?`).get(seq) as Row | undefined)
      : undefined;
    if (!row) throw new EventReadError('unknown_event', `session ${session.store.sessionId} has no ${kind} row with seq ${seq}`);
    return row;
  }

  /** Bodies are stored under the HTTP exchange: a model call's under its net_event_id. */
  private exchangeOf(session: OpenSession, eventId: string): string {
    if (!session.tables().has('model_calls')) return eventId;
    const call = session.store.db.prepare('SELECT net_event_id FROM model_calls WHERE event_id = ? LIMIT 1').get(eventId) as
      { net_event_id: string | null } | undefined;
    return call?.net_event_id ?? eventId;
  }

  private blobs(session: OpenSession, eventId: string): BlobRow[] {
    if (!session.tables().has('event_body_blobs')) return [];
    return session.store.db
      .prepare(
        'SELECT event_id, direction, content_type, content_encoding, original_bytes, stored_bytes, truncated, body FROM event_body_blobs WHERE event_id = ? ORDER BY direction',
      )
      .all(eventId) as BlobRow[];
  }

  private frames(session: OpenSession, eventId: string): { frames: Frame[]; frameCount: number } {
    if (!session.tables().has('ws_frames')) return { frames: [], frameCount: 0 };
    const db = session.store.db;
    const { n } = db.prepare('SELECT count(*) AS n FROM ws_frames WHERE net_event_id = ?').get(eventId) as { n: number };
    const rows = db
      .prepare(
        'SELECT timestamp, direction, opcode, size, content, substr(body, 1, ?) AS head, truncated, stored_bytes FROM ws_frames WHERE net_event_id = ? ORDER BY id LIMIT ?',
      )
      .all(FRAME_HEX_BYTES, eventId, FRAMES_SHOWN) as {
      timestamp: string;
      direction: 'sent' | 'received';
      opcode: string;
      size: number;
      content: string | null;
      head: Uint8Array | null;
      truncated: number;
      stored_bytes: number;
    }[];
    const frames = rows.map((r) => ({
      at: r.timestamp,
      direction: r.direction,
      opcode: r.opcode,
      size: r.size,
      text: r.content,
      hex: r.head ? Buffer.from(r.head).toString('hex') : null,
      truncated: r.truncated === 1 || r.stored_bytes > FRAME_HEX_BYTES,
    }));
    return { frames, frameCount: n };
  }

  private text(session: OpenSession, blob: BlobRow) {
    return this.texts.get(`${session.store.sessionId}\u0000${blob.event_id}\u0000${blob.direction}`, () =>
      bodyText(blob.body, blob.content_encoding),
    );
  }

  async detail(session: OpenSession, kind: TableKind, seq: number): Promise<EventDetail> {
    const row = this.row(session, kind, seq);
    const db = session.store.db;
    const eventId = String(row.event_id);
    const bodies: Body[] = [];
    for (const blob of this.blobs(session, this.exchangeOf(session, eventId))) {
      const { text } = await this.text(session, blob);
      bodies.push({
        direction: blob.direction,
        contentType: blob.content_type,
        contentEncoding: blob.content_encoding,
        originalBytes: blob.original_bytes,
        storedBytes: blob.stored_bytes,
        truncated: blob.truncated === 1,
        preview: text === null ? null : text.slice(0, PREVIEW_CHARS),
        complete: text === null || text.length <= PREVIEW_CHARS,
      });
    }
    const items =
      kind === 'model' && session.tables().has('model_items')
        ? (
            db
              .prepare(
                'SELECT kind, item_index, call_id, tool_name, content, arguments FROM model_items WHERE model_call_id = ? ORDER BY id',
              )
              .all(row.id) as Row[]
          ).map((i) => ({
            kind: String(i.kind),
            index: Number(i.item_index),
            callId: (i.call_id as string | null) ?? null,
            toolName: (i.tool_name as string | null) ?? null,
            content: (i.content as string | null) ?? null,
            arguments: (i.arguments as string | null) ?? null,
          }))
        : [];
    const modelCallSeq =
      kind === 'tool' && typeof row.model_call_id === 'number'
        ? ((db.prepare('SELECT seq FROM model_calls WHERE id = ?').get(row.model_call_id) as { seq: number } | undefined)?.seq ?? null)
        : null;
    const netSeq =
      kind === 'model' && typeof row.net_event_id === 'string' && session.tables().has('net_events')
        ? ((db.prepare('SELECT seq FROM net_events WHERE event_id = ?').get(row.net_event_id) as { seq: number } | undefined)?.seq ?? null)
        : null;
    const shown = fields(row);
    // exec_events has no seq column: the id it is addressed by is its seq.
    const rowSeq = kind === 'exec' ? Number(row.id) : Number(row.seq);
    return {
      kind,
      seq: rowSeq,
      eventId,
      fields: shown,
      requestHeaders: headers(row.request_headers),
      responseHeaders: headers(row.response_headers),
      bodies,
      items,
      modelCallSeq,
      netSeq,
      ...(kind === 'net' ? this.frames(session, eventId) : { frames: [], frameCount: 0 }),
    };
  }

  /** A stretch of a body's text as the detail shows it (so offset = preview length continues it). */
  async body(
    session: OpenSession,
    eventId: string,
    direction: 'request' | 'response',
    offset: number,
    length: number,
  ): Promise<{ text: string; offset: number; total: number }> {
    const blob = this.blobs(session, this.exchangeOf(session, eventId)).find((b) => b.direction === direction);
    if (!blob) throw new EventReadError('unknown_event', `no stored ${direction} body for event ${eventId}`);
    const { text } = await this.text(session, blob);
    if (text === null)
      throw new EventReadError('binary_body', `the ${direction} body of event ${eventId} is binary; export the session to get its bytes`);
    const start = Math.min(offset, text.length);
    return { text: text.slice(start, start + length), offset: start, total: text.length };
  }
}
