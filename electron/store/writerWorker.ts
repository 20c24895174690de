import type Database from 'better-sqlite3';
import { createHash } from 'node:crypto';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { parentPort, workerData } from 'node:worker_threads';
import { firstEventId } from './eventIds.ts';
import { openSessionDbForWriting } from './sessionDb.ts';
import { insertColumns, SEQUENCED_TABLES, SESSION_TABLE_NAMES, type SessionTable } from './sessionSchema.ts';
import type { BatchRows, CellValue, FromWorker, RejectedRow, ToWorker, WriterInit } from './writerProtocol.ts';

// The writer thread: the only code that writes a live session.db. Batches arrive already shaped as
// positional rows; each becomes one transaction, so the producer's thread never waits on disk.

const port = parentPort;
if (!port) throw new Error('writerWorker must run in a worker thread');
const send = (message: FromWorker): void => port.postMessage(message);

function upsertMeta(db: Database.Database, meta: Readonly<Record<string, string>>): void {
  const stmt = db.prepare('INSERT INTO session_meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value');
  for (const [key, value] of Object.entries(meta)) stmt.run(key, value);
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

const BLOB_COLUMNS = insertColumns('event_body_blobs');
const BODY_AT = BLOB_COLUMNS.indexOf('body');
const HASH_AT = BLOB_COLUMNS.indexOf('body_hash');

/**
 * A body row that comes without body_hash gets the SHA-256 of its body here: hashing 10 MiB takes
 * about 11 ms, which on the proxy's thread delayed the next request. Returns the batch's body bytes
 * (bodies are the schema's only byte cells).
 */
function hashBodies(rows: BatchRows): number {
  let bytes = 0;
  for (const row of rows.event_body_blobs ?? []) {
    const body = row[BODY_AT];
    if (!(body instanceof Uint8Array)) continue;
    bytes += body.byteLength;
    if (row[HASH_AT] === null) row[HASH_AT] = createHash('sha256').update(body).digest('hex');
  }
  return bytes;
}

function main(init: WriterInit): void {
  const collect = garbageCollector();
  let bodyBytesSinceCollect = 0;
  const db = openSessionDbForWriting(init.dbPath);
  upsertMeta(db, init.meta);
  const inserts = new Map<SessionTable, Database.Statement<CellValue[]>>();
  for (const table of SESSION_TABLE_NAMES) {
    const cols = insertColumns(table);
    inserts.set(table, db.prepare(`INSERT INTO ${table} (${cols.join(', ')}) VALUES (${cols.map(() => '?').join(', ')})`));
  }
  const insert = (table: SessionTable): Database.Statement<CellValue[]> => inserts.get(table)!;

  const writeAll = db.transaction((rows: BatchRows) => {
    let count = 0;
    for (const [table, list] of Object.entries(rows) as [SessionTable, CellValue[][]][]) {
      const stmt = insert(table);
      for (const row of list) stmt.run(...row);
      count += list.length;
    }
    return count;
  });

  // A bad row must not cost its batch-mates: on failure, redo the batch row by row and report
  // only the rows SQLite refused.
  const writeEach = db.transaction((rows: BatchRows) => {
    const rejected: RejectedRow[] = [];
    let count = 0;
    for (const [table, list] of Object.entries(rows) as [SessionTable, CellValue[][]][]) {
      const stmt = insert(table);
      const idIndex = insertColumns(table).indexOf('id');
      for (const row of list) {
        try {
          db.prepare('SAVEPOINT one_row').run();
          stmt.run(...row);
          db.prepare('RELEASE one_row').run();
          count += 1;
        } catch (err) {
          db.prepare('ROLLBACK TO one_row').run();
          db.prepare('RELEASE one_row').run();
          rejected.push({ table, id: Number(row[idIndex] ?? 0), error: (err as Error).message });
        }
      }
    }
    return { count, rejected };
  });

  send({ kind: 'ready', ...highWaterMarks(db) });

  port!.on('message', (message: ToWorker) => {
    try {
      if (message.kind === 'batch') {
        bodyBytesSinceCollect += hashBodies(message.rows);
        if (collect && bodyBytesSinceCollect >= COLLECT_AFTER_BYTES) {
          bodyBytesSinceCollect = 0;
          // After this handler returns: the message being handled still holds its bodies.
          setImmediate(collect);
        }
        try {
          const rows = writeAll(message.rows);
          send({ kind: 'committed', batchNo: message.batchNo, rows, rejected: [] });
        } catch {
          const { count, rejected } = writeEach(message.rows);
          send({ kind: 'committed', batchNo: message.batchNo, rows: count, rejected });
        }
        return;
      }
      upsertMeta(db, message.meta);
      // At close the file must be whole on its own: fold the WAL back in and sync it fully.
      db.pragma('synchronous = FULL');
      db.pragma('wal_checkpoint(TRUNCATE)');
      db.close();
      send({ kind: 'closed' });
      port!.close();
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
