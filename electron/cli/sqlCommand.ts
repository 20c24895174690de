import Database from 'better-sqlite3';
import { openMainDb } from '../store/mainDb.ts';
import { parseCommandArgs, UsageError, type Command } from './context.ts';
import { targetSession } from './sessionTarget.ts';
import type { CommandOutput } from './commandOutput.ts';
import { formatCell, tablePages } from './table.ts';

// A result is read row by row and written a page at a time, each page once stdout has taken the
// last, so a query of any size runs in bounded memory and stops when the reader goes away.

/** Rows per page written to stdout. */
const PAGE_ROWS = 1000;

/** Rows of the statement in pages of PAGE_ROWS, read as they are needed. */
function* pages<T>(rows: Iterable<T>): Generator<T[]> {
  let page: T[] = [];
  for (const row of rows) {
    page.push(row);
    if (page.length === PAGE_ROWS) {
      yield page;
      page = [];
    }
  }
  if (page.length > 0) yield page;
}

/** The rows as a table; returns how many there were. */
async function sendTable(output: CommandOutput, stmt: Database.Statement): Promise<number> {
  const table = tablePages(stmt.columns().map((c) => c.name));
  let count = 0;
  for (const page of pages(stmt.raw(true).iterate() as Iterable<unknown[]>)) {
    await output.send(`${table.page(page.map((row) => row.map(formatCell)))}\n`);
    count += page.length;
  }
  if (count === 0) await output.send(`${table.page([])}\n`);
  return count;
}

/** JSON for a column's value; the holder's own value is read, as a Buffer's toJSON has run before a replacer sees it. */
function jsonValue(this: Record<string, unknown>, key: string, value: unknown): unknown {
  const raw = this[key];
  return raw instanceof Uint8Array ? `<blob ${raw.byteLength} B>` : typeof raw === 'bigint' ? String(raw) : value;
}

/** The rows as one JSON array, written as JSON.stringify(rows, null, 2) would write it; returns how many there were. */
async function sendJson(output: CommandOutput, stmt: Database.Statement): Promise<number> {
  let count = 0;
  for (const page of pages(stmt.iterate() as Iterable<Record<string, unknown>>)) {
    const items = page.map((row) => `  ${JSON.stringify(row, jsonValue, 2).replaceAll('\n', '\n  ')}`);
    await output.send(`${count === 0 ? '[\n' : ',\n'}${items.join(',\n')}`);
    count += page.length;
  }
  await output.send(count === 0 ? '[]\n' : '\n]\n');
  return count;
}

export const sqlCommand: Command = {
  name: 'sql',
  summary: "run a read-only SQL query against a session's database",
  usage: `capsem sql [ID|NAME] "SELECT ..." [--json]

Runs one read-only statement against a session.db (the newest on disk when no session is
named). The database is opened read-only: statements that would write are refused.

  --json  print rows as a JSON array`,
  async run(ctx, argv) {
    const { values, positionals } = parseCommandArgs(this, argv, { json: { type: 'boolean' } });
    if (positionals.length === 0 || positionals.length > 2)
      throw new UsageError('sql takes an optional session and one query (see capsem sql --help)');
    const query = positionals.at(-1)!;
    const mainDb = openMainDb(ctx.home);
    let dbPath: string;
    try {
      dbPath = targetSession(ctx.home, mainDb, positionals.length === 2 ? positionals[0] : undefined).dbPath;
    } finally {
      mainDb.close();
    }
    const db = new Database(dbPath, { readonly: true, fileMustExist: true });
    try {
      db.pragma('query_only = ON');
      let stmt: Database.Statement;
      try {
        stmt = db.prepare(query);
      } catch (err) {
        throw new Error(`query refused: ${(err as Error).message}`);
      }
      if (!stmt.reader) throw new Error('query refused: capsem sql runs read-only queries (SELECT, WITH, PRAGMA reads)');
      const count = values.json ? await sendJson(ctx.output, stmt) : await sendTable(ctx.output, stmt);
      if (!values.json) ctx.out(`(${count} row${count === 1 ? '' : 's'})`);
      return 0;
    } finally {
      db.close();
    }
  },
};
