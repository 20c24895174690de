import Database from 'better-sqlite3';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { isSameProcessAlive, processStartTicks } from '../platform/processIdentity.ts';
import { ensurePrivateDir, makePrivateFiles, type CapsemHome } from '../store/paths.ts';

// The exporter's disk queue, CAPSEM_HOME/otel/ledger.db, shared by every process of the home (the
// app, `capsem run`, `capsem otel export`). For each endpoint it holds the span ids ever queued
// (a span is queued once, whoever reads it again) and the queued request bodies, oldest first,
// up to a bound in bytes: past it the oldest bodies are dropped, and each drop is kept with its
// span count and why. A body leaves only when its endpoint has taken it; a process sends a body
// only while it holds the body's claim, so two processes never send one body at once.

export const DEFAULT_QUEUE_BYTES = 256 << 20;
/** A claim older than this is taken to be a sender that hung mid-send; a dead sender's claim is free at once. */
const CLAIM_MS = 60_000;

/** A claim names its process (pid and start time) and the ledger it was made through. */
const claimOf = (): string => `${process.pid}/${processStartTicks(process.pid) ?? ''}/${randomUUID()}`;

function claimHolderAlive(claim: string): boolean {
  const [pid, start] = claim.split('/');
  return isSameProcessAlive(Number(pid), start === undefined || start === '' ? null : start);
}

const SCHEMA = `
CREATE TABLE IF NOT EXISTS queued_spans (
  endpoint TEXT NOT NULL,
  span_id TEXT NOT NULL,
  session_id TEXT NOT NULL,
  PRIMARY KEY (endpoint, span_id)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS batches (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  endpoint TEXT NOT NULL,
  session_id TEXT NOT NULL,
  spans INTEGER NOT NULL,
  body BLOB NOT NULL,
  queued_at TEXT NOT NULL,
  attempts INTEGER NOT NULL DEFAULT 0,
  claim TEXT,
  claimed_at INTEGER
);
CREATE INDEX IF NOT EXISTS batches_endpoint ON batches (endpoint, id);
CREATE TABLE IF NOT EXISTS drops (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  endpoint TEXT NOT NULL,
  session_id TEXT NOT NULL,
  spans INTEGER NOT NULL,
  reason TEXT NOT NULL,
  at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS sent (
  endpoint TEXT PRIMARY KEY,
  spans INTEGER NOT NULL,
  requests INTEGER NOT NULL
);
`;

export interface QueuedBatch {
  readonly id: number;
  readonly sessionId: string;
  readonly spans: number;
  readonly body: Buffer;
  readonly attempts: number;
}

export interface LedgerStatus {
  readonly queuedBatches: number;
  readonly queuedSpans: number;
  readonly queuedBytes: number;
  readonly sentSpans: number;
  readonly sentRequests: number;
  readonly droppedSpans: number;
  readonly drops: readonly { sessionId: string; spans: number; reason: string; at: string }[];
}

export class ExportLedger {
  private readonly claim = claimOf();

  private constructor(
    private readonly db: Database.Database,
    private readonly maxBytes: number,
  ) {}

  static open(home: CapsemHome, maxBytes = DEFAULT_QUEUE_BYTES): ExportLedger {
    const dir = join(home.root, 'otel');
    ensurePrivateDir(dir);
    const path = join(dir, 'ledger.db');
    const db = new Database(path);
    db.pragma('journal_mode = WAL');
    db.pragma('busy_timeout = 5000');
    db.exec(SCHEMA);
    makePrivateFiles(path);
    return new ExportLedger(db, maxBytes);
  }

  close(): void {
    this.db.close();
  }

  /** The span ids of `sessionId` already queued for `endpoint`. */
  queuedSpanIds(endpoint: string, sessionId: string): Set<string> {
    const rows = this.db.prepare('SELECT span_id FROM queued_spans WHERE endpoint = ? AND session_id = ?').pluck().all(endpoint, sessionId);
    return new Set(rows as string[]);
  }

  /**
   * Queues `spans` not queued before for the endpoint, in bodies of at most `perBody` spans made by
   * `encode`, in one transaction with their ids: what another process queued first is left out.
   * Returns how many spans were queued.
   */
  enqueue<T extends { readonly spanId: string }>(
    endpoint: string,
    sessionId: string,
    spans: readonly T[],
    encode: (spans: readonly T[]) => Uint8Array,
    perBody = 512,
  ): number {
    const known = this.db.prepare('SELECT 1 FROM queued_spans WHERE endpoint = ? AND span_id = ?').pluck();
    const mark = this.db.prepare('INSERT INTO queued_spans (endpoint, span_id, session_id) VALUES (?, ?, ?)');
    const add = this.db.prepare('INSERT INTO batches (endpoint, session_id, spans, body, queued_at) VALUES (?, ?, ?, ?, ?)');
    const queue = this.db.transaction(() => {
      const fresh = spans.filter((s) => known.get(endpoint, s.spanId) === undefined);
      for (let at = 0; at < fresh.length; at += perBody) {
        const part = fresh.slice(at, at + perBody);
        for (const span of part) mark.run(endpoint, span.spanId, sessionId);
        add.run(endpoint, sessionId, part.length, Buffer.from(encode(part)), new Date().toISOString());
      }
      this.trim(endpoint);
      return fresh.length;
    });
    return queue.immediate();
  }

  /** Drops the oldest bodies until the endpoint's queue is within the bound, keeping what was dropped. */
  private trim(endpoint: string): void {
    let bytes =
      (this.db.prepare('SELECT coalesce(sum(length(body)), 0) FROM batches WHERE endpoint = ?').pluck().get(endpoint) as number) ?? 0;
    if (bytes <= this.maxBytes) return;
    const oldest = this.db.prepare(
      'SELECT id, session_id, spans, length(body) AS size FROM batches WHERE endpoint = ? ORDER BY id LIMIT 64',
    );
    while (bytes > this.maxBytes) {
      const rows = oldest.all(endpoint) as { id: number; session_id: string; spans: number; size: number }[];
      if (rows.length === 0) return;
      for (const row of rows) {
        if (bytes <= this.maxBytes) return;
        this.db.prepare('DELETE FROM batches WHERE id = ?').run(row.id);
        this.recordDrop(endpoint, row.session_id, row.spans, `the queue for ${endpoint} was over ${this.maxBytes} bytes`);
        bytes -= row.size;
      }
    }
  }

  private recordDrop(endpoint: string, sessionId: string, spans: number, reason: string): void {
    this.db
      .prepare('INSERT INTO drops (endpoint, session_id, spans, reason, at) VALUES (?, ?, ?, ?, ?)')
      .run(endpoint, sessionId, spans, reason, new Date().toISOString());
  }

  /** Claims the oldest body of the endpoint no live sender holds; null when there is none. */
  claimNext(endpoint: string): QueuedBatch | null {
    const now = Date.now();
    const take = this.db.transaction((): QueuedBatch | null => {
      const candidates = this.db
        .prepare('SELECT id, claim, claimed_at FROM batches WHERE endpoint = ? ORDER BY id LIMIT 64')
        .all(endpoint) as {
        id: number;
        claim: string | null;
        claimed_at: number | null;
      }[];
      const free = candidates.find(
        (c) => c.claim === null || c.claim === this.claim || (c.claimed_at ?? 0) < now - CLAIM_MS || !claimHolderAlive(c.claim),
      );
      if (!free) return null;
      this.db.prepare('UPDATE batches SET claim = ?, claimed_at = ? WHERE id = ?').run(this.claim, now, free.id);
      const row = this.db.prepare('SELECT id, session_id, spans, body, attempts FROM batches WHERE id = ?').get(free.id) as {
        id: number;
        session_id: string;
        spans: number;
        body: Buffer;
        attempts: number;
      };
      return { id: row.id, sessionId: row.session_id, spans: row.spans, body: row.body, attempts: row.attempts };
    });
    return take.immediate();
  }

  /**
   * The endpoint took the body. With a partial success, `rejected` of its spans were refused by the
   * endpoint: only the rest count as sent, and the rejected ones are kept as dropped with `reason`.
   */
  sent(endpoint: string, batch: QueuedBatch, rejected = 0, reason = ''): void {
    const refused = Math.min(Math.max(0, rejected), batch.spans);
    this.db.transaction(() => {
      this.db.prepare('DELETE FROM batches WHERE id = ?').run(batch.id);
      this.db
        .prepare(
          'INSERT INTO sent (endpoint, spans, requests) VALUES (?, ?, 1) ON CONFLICT (endpoint) DO UPDATE SET spans = spans + excluded.spans, requests = requests + 1',
        )
        .run(endpoint, batch.spans - refused);
      if (refused > 0) this.recordDrop(endpoint, batch.sessionId, refused, reason);
    })();
  }

  /** The send failed and will be tried again: the claim stays, the attempt is counted. */
  failed(batch: QueuedBatch): void {
    this.db.prepare('UPDATE batches SET attempts = attempts + 1, claimed_at = ? WHERE id = ?').run(Date.now(), batch.id);
  }

  /** The endpoint refused the body for good: it is dropped, and why is kept. */
  refused(endpoint: string, batch: QueuedBatch, reason: string): void {
    this.db.transaction(() => {
      this.db.prepare('DELETE FROM batches WHERE id = ?').run(batch.id);
      this.recordDrop(endpoint, batch.sessionId, batch.spans, reason);
    })();
  }

  /** Lets go of the claims this process holds, for another sender to take at once. */
  release(): void {
    this.db.prepare('UPDATE batches SET claim = NULL, claimed_at = NULL WHERE claim = ?').run(this.claim);
  }

  status(endpoint: string): LedgerStatus {
    const queued = this.db
      .prepare(
        'SELECT count(*) AS n, coalesce(sum(spans), 0) AS spans, coalesce(sum(length(body)), 0) AS bytes FROM batches WHERE endpoint = ?',
      )
      .get(endpoint) as { n: number; spans: number; bytes: number };
    const sent = this.db.prepare('SELECT spans, requests FROM sent WHERE endpoint = ?').get(endpoint) as
      { spans: number; requests: number } | undefined;
    const drops = this.db
      .prepare('SELECT session_id AS sessionId, spans, reason, at FROM drops WHERE endpoint = ? ORDER BY id')
      .all(endpoint) as LedgerStatus['drops'][number][];
    return {
      queuedBatches: queued.n,
      queuedSpans: queued.spans,
      queuedBytes: queued.bytes,
      sentSpans: sent?.spans ?? 0,
      sentRequests: sent?.requests ?? 0,
      droppedSpans: drops.reduce((n, d) => n + d.spans, 0),
      drops,
    };
  }
}
