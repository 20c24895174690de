import type Database from 'better-sqlite3';
import { hash } from 'node:crypto';
import { rmSync, truncateSync, writeFileSync } from 'node:fs';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { parentPort, workerData } from 'node:worker_threads';
import { nameThisThread } from '../platform/threadName.ts';
import { diskFailure } from './diskFailure.ts';
import { firstEventId } from './eventIds.ts';
import { openSessionDbForWriting } from './sessionDb.ts';
import { insertColumns, SEQUENCED_TABLES, SESSION_TABLE_NAMES, type SessionTable } from './sessionSchema.ts';
import {
  rowsOf,
  type AnsweredToolCall,
  type BatchRows,
  type CellValue,
  type FromWorker,
  type RejectedRow,
  type RowCounts,
  type ToWorker,
  type WriterInit,
} from './writerProtocol.ts';

// The writer thread: the only code that writes a live session.db. Batches arrive already shaped as
// positional rows; each becomes one transaction, so the producer's thread never waits on disk.

const port = parentPort;
if (!port) throw new Error('writerWorker must run in a worker thread');
const send = (message: FromWorker): void => port.postMessage(message);

/** One transaction: a loss marker is all there or not at all, and takes one commit's room on a full disk. */
function upsertMeta(db: Database.Database, meta: Readonly<Record<string, string>>): void {
  const stmt = db.prepare('INSERT INTO session_meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value');
  db.transaction(() => {
    for (const [key, value] of Object.entries(meta)) stmt.run(key, value);
  })();
}

function highWaterMarks(db: Database.Database): { maxSeq: number; maxIds: Partial<Record<SessionTable, number>>; nextEventId: number } {
  let maxSeq = 0;
  let maxEventId: string | null = null;
  for (const table of SESSION_TABLE_NAMES) {
    if (!insertColumns(table).includes('event_id')) continue;
    const row = db.prepare(`SELECT max(event_id) AS m FROM ${table}`).get() as { m: string | null };
    if (row.m !== null && (maxEventId === null || row.m > maxEventId)) maxEventId = row.m;
  }
  for (const table of SEQUENCED_TABLES) {
    const row = db.prepare(`SELECT max(seq) AS m FROM ${table}`).get() as { m: number | null };
    maxSeq = Math.max(maxSeq, row.m ?? 0);
  }
  const maxIds: Partial<Record<SessionTable, number>> = {};
  for (const table of SESSION_TABLE_NAMES) {
    if (!insertColumns(table).includes('id')) continue;
    const row = db.prepare(`SELECT max(id) AS m FROM ${table}`).get() as { m: number | null };
    maxIds[table] = row.m ?? 0;
  }
  return { maxSeq, maxIds, nextEventId: firstEventId(maxEventId) };
}

/**
 * Body blobs arrive as transferred memory that V8 frees only when this thread collects garbage,
 * and its heuristic waits for about 64 MiB of it per isolate: after a few large downloads a proxy
 * held 80 MiB of dead bodies here. This thread's heap is small, so a full collection after every
 * 32 MiB of bodies costs a few milliseconds off the main thread and returns that memory at once.
 */
const COLLECT_AFTER_BYTES = 32 << 20;

function garbageCollector(): (() => void) | null {
  try {
    setFlagsFromString('--expose-gc');
    const gc: unknown = runInNewContext('gc');
    return typeof gc === 'function' ? (gc as () => void) : null;
  } catch {
    return null;
  }
}

/**
 * SQLite checkpoints (copies the WAL into session.db) inside the commit that takes the WAL past
 * wal_autocheckpoint: on this thread, in the middle of the traffic being recorded. A 20 MB burst
 * of downloads met one every third time, 60 ms of CPU more than its other rounds on a two-core
 * machine whose cores the burst's own client, upstream and proxy wanted. Once this many body bytes
 * were committed since the last checkpoint, and no batch has come for IDLE_CHECKPOINT_MS, the
 * writer checkpoints then instead: a burst seldom finds the WAL near the mark, and a session that
 * never pauses still has the automatic one. The same bytes are copied, with a pair of syncs per
 * quiet spell rather than per 64 MiB; a checkpoint is SQLite's own either way, so crash safety is
 * unchanged.
 */
const IDLE_CHECKPOINT_BYTES = 8 << 20;
const IDLE_CHECKPOINT_MS = 100;

const BLOB_COLUMNS = insertColumns('event_body_blobs');
const BODY_AT = BLOB_COLUMNS.indexOf('body');
const HASH_AT = BLOB_COLUMNS.indexOf('body_hash');

/**
 * A body row that comes without body_hash gets the SHA-256 of its body here: hashing 10 MiB takes
 * about 11 ms, which on the proxy's thread delayed the next request. Returns the memory the
 * batch's bodies hold (bodies are the schema's only byte cells; small ones share a pack).
 */
function hashBodies(rows: BatchRows): number {
  const memory = new Set<ArrayBufferLike>();
  const cells = rows.event_body_blobs ?? [];
  for (let at = 0; at < cells.length; at += BLOB_COLUMNS.length) {
    const body = cells[at + BODY_AT];
    if (!(body instanceof Uint8Array)) continue;
    memory.add(body.buffer);
    if (cells[at + HASH_AT] === null) cells[at + HASH_AT] = hash('sha256', body, 'hex');
  }
  let bytes = 0;
  for (const buffer of memory) bytes += buffer.byteLength;
  return bytes;
}

/**
 * Room kept on the disk for the moment it fills, so that the loss marker in session_meta and the
 * rollup into main.db, which usually share that disk, can still be written. Written at open (with
 * zeros: a sparse file reserves nothing) and given back in two halves: the first when a commit
 * fails for the disk, or at close, for the marker and the closing meta (a few 32 KiB WAL frames);
 * the second once session.db is closed, for main.db (about ten 4 KiB WAL frames and a 32 KiB
 * -shm). Not before: closing session.db folds its WAL into the file, which grows by whatever
 * room there is, and would take it all.
 */
const RESERVE_BYTES = 512 << 10;

class Reserve {
  private halved = false;

  constructor(private readonly path: string) {
    try {
      writeFileSync(path, Buffer.alloc(RESERVE_BYTES), { mode: 0o600 });
    } catch (err) {
      rmSync(path, { force: true });
      throw new Error(`cannot write session.db: no room for its ${RESERVE_BYTES >> 10} KiB reserve beside it (${(err as Error).message})`);
    }
  }

  /** Gives back the first half, for what is still written to session.db. */
  halve(): void {
    if (this.halved) return;
    this.halved = true;
    try {
      truncateSync(this.path, RESERVE_BYTES / 2);
    } catch {
      // Removed by hand: there is nothing left to give back, and the writer must go on regardless.
    }
  }

  /** Gives back the rest, once session.db is closed. */
  release(): void {
    rmSync(this.path, { force: true });
  }
}

function rowCounts(rows: BatchRows): RowCounts {
  const counts: RowCounts = {};
  for (const [table, cells] of Object.entries(rows) as [SessionTable, CellValue[]][])
    counts[table] = cells.length / insertColumns(table).length;
  return counts;
}

/** session_meta's record of a disk failure; the writer's close writes the same keys with the final counts. */
function lossMarker(reason: string, lost: RowCounts): Record<string, string> {
  const rows = Object.values(lost).reduce((sum, n) => sum + n, 0);
  return { writer_unwritable: reason, writer_lost: String(rows), writer_lost_net_events: String(lost.net_events ?? 0) };
}

function main(init: WriterInit): void {
  // So top and the proxy bench tell the recording's CPU apart from the proxy's.
  nameThisThread('capsem-writer');
  const collect = garbageCollector();
  let bodyBytesSinceCollect = 0;
  let bodyBytesSinceCheckpoint = 0;
  let idleCheckpoint: NodeJS.Timeout | null = null;
  const db = openSessionDbForWriting(init.dbPath);
  let reserve: Reserve;
  try {
    reserve = new Reserve(`${init.dbPath}-reserve`);
  } catch (err) {
    db.close();
    throw err;
  }
  upsertMeta(db, init.meta);
  const inserts = new Map<SessionTable, Database.Statement<CellValue[]>>();
  for (const table of SESSION_TABLE_NAMES) {
    const cols = insertColumns(table);
    inserts.set(table, db.prepare(`INSERT INTO ${table} (${cols.join(', ')}) VALUES (${cols.map(() => '?').join(', ')})`));
  }
  const insert = (table: SessionTable): Database.Statement<CellValue[]> => inserts.get(table)!;

  // After the batch's rows: a call answered in the same batch it was asked in is found. A failed
  // tool's result is its error message too, as an MCP call's error is.
  const answer = db.prepare(
    `UPDATE tool_calls SET status = CASE WHEN :isError THEN 'error' ELSE 'responded' END,
       response_preview = coalesce(response_preview, :preview),
       error_message = CASE WHEN :isError THEN coalesce(error_message, :preview) ELSE error_message END
     WHERE call_id = :callId AND status = 'requested'`,
  );
  const answerAll = (answered: readonly AnsweredToolCall[]): void => {
    for (const a of answered) answer.run({ callId: a.callId, preview: a.preview, isError: a.isError ? 1 : 0 });
  };

  const writeAll = db.transaction((rows: BatchRows, answered: readonly AnsweredToolCall[]) => {
    let count = 0;
    for (const [table, cells] of Object.entries(rows) as [SessionTable, CellValue[]][]) {
      const stmt = insert(table);
      for (const row of rowsOf(cells, insertColumns(table).length)) {
        stmt.run(...row);
        count += 1;
      }
    }
    answerAll(answered);
    return count;
  });

  // A bad row must not cost its batch-mates: on failure, redo the batch row by row and report
  // only the rows SQLite refused.
  const writeEach = db.transaction((rows: BatchRows, answered: readonly AnsweredToolCall[]) => {
    const rejected: RejectedRow[] = [];
    let count = 0;
    for (const [table, cells] of Object.entries(rows) as [SessionTable, CellValue[]][]) {
      const stmt = insert(table);
      const idIndex = insertColumns(table).indexOf('id');
      for (const row of rowsOf(cells, insertColumns(table).length)) {
        try {
          db.prepare('SAVEPOINT one_row').run();
          stmt.run(...row);
          db.prepare('RELEASE one_row').run();
          count += 1;
        } catch (err) {
          // The disk, not this row: no later row would fare better.
          if (diskFailure(err)) throw err;
          db.prepare('ROLLBACK TO one_row').run();
          db.prepare('RELEASE one_row').run();
          rejected.push({ table, id: Number(row[idIndex] ?? 0), error: (err as Error).message });
        }
      }
    }
    answerAll(answered);
    return { count, rejected };
  });

  /** Why session.db cannot be written, once a commit has failed for the disk; rows lost since, by table. */
  let unwritable: string | null = null;
  const lost: RowCounts = {};

  // Past a disk failure no batch is tried again, neither the one that failed nor a later one: the
  // session is being ended (its recording refuses new requests and whoever runs it stops it), a
  // retry would take the room just freed for the marker and the rollup, and batches held for later
  // would pin up to the writer's hard limit of memory for a session that has no later.
  function lose(batchNo: number, rows: BatchRows, reason: string): void {
    const counts = rowCounts(rows);
    for (const [table, n] of Object.entries(counts) as [SessionTable, number][]) lost[table] = (lost[table] ?? 0) + n;
    if (unwritable === null) {
      unwritable = reason;
      reserve.halve();
      try {
        upsertMeta(db, lossMarker(reason, lost));
      } catch {
        // Close tries again, with the final counts.
      }
    }
    send({ kind: 'lost', batchNo, rows: counts, reason });
  }

  function commit(batchNo: number, rows: BatchRows, answered: readonly AnsweredToolCall[]): void {
    if (unwritable !== null) return lose(batchNo, rows, unwritable);
    try {
      return send({ kind: 'committed', batchNo, rows: writeAll(rows, answered), rejected: [] });
    } catch (err) {
      const reason = diskFailure(err);
      if (reason) return lose(batchNo, rows, reason);
    }
    try {
      const { count, rejected } = writeEach(rows, answered);
      send({ kind: 'committed', batchNo, rows: count, rejected });
    } catch (err) {
      const reason = diskFailure(err);
      if (!reason) throw err;
      lose(batchNo, rows, reason);
    }
  }

  function checkpointWhenIdle(): void {
    idleCheckpoint = null;
    bodyBytesSinceCheckpoint = 0;
    if (unwritable !== null) return;
    try {
      db.pragma('wal_checkpoint(PASSIVE)');
    } catch {
      // As SQLite's own checkpoint after a commit: what failed stays in the WAL, committed and read
      // from there, and the next commit meets a disk failure first-hand.
    }
  }

  function close(meta: Readonly<Record<string, string>>): void {
    if (idleCheckpoint) clearTimeout(idleCheckpoint);
    reserve.halve();
    try {
      upsertMeta(db, meta);
    } catch (err) {
      // After a disk failure the marker written at the time stands in for this one.
      if (unwritable === null || !diskFailure(err)) throw err;
    }
    // At close the file must be whole on its own: fold the WAL back in and sync it fully. Not
    // after a disk failure: the file would grow by what the WAL holds, which the disk refuses, and
    // the WAL keeps every committed row for readers to find.
    if (unwritable === null) {
      db.pragma('synchronous = FULL');
      db.pragma('wal_checkpoint(TRUNCATE)');
    }
    db.close();
    reserve.release();
    send({ kind: 'closed' });
    port!.close();
  }

  send({ kind: 'ready', ...highWaterMarks(db) });

  port!.on('message', (message: ToWorker) => {
    try {
      if (message.kind === 'close') return close(message.meta);
      if (idleCheckpoint) clearTimeout(idleCheckpoint);
      idleCheckpoint = null;
      const bodyBytes = hashBodies(message.rows);
      bodyBytesSinceCollect += bodyBytes;
      if (collect && bodyBytesSinceCollect >= COLLECT_AFTER_BYTES) {
        bodyBytesSinceCollect = 0;
        // After this handler returns: the message being handled still holds its bodies.
        setImmediate(collect);
      }
      commit(message.batchNo, message.rows, message.answered);
      bodyBytesSinceCheckpoint += bodyBytes;
      if (bodyBytesSinceCheckpoint >= IDLE_CHECKPOINT_BYTES) idleCheckpoint = setTimeout(checkpointWhenIdle, IDLE_CHECKPOINT_MS);
    } catch (err) {
      send({ kind: 'failed', error: (err as Error).message });
    }
  });
}

try {
  main(workerData as WriterInit);
} catch (err) {
  send({ kind: 'failed', error: (err as Error).message });
}
