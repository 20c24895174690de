import type Database from 'better-sqlite3';
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

function main(init: WriterInit): void {
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
