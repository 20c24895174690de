import Database from 'better-sqlite3';
import { openMainDb } from '../store/mainDb.ts';
import { parseCommandArgs, UsageError, type Command } from './context.ts';
import { targetSession } from './sessionTarget.ts';
import { formatCell, formatTable } from './table.ts';

export const sqlCommand: Command = {
  name: 'sql',
  summary: "run a read-only SQL query against a session's database",
  usage: `capsem sql [ID|NAME] "SELECT ..." [--json]

Runs one read-only statement against a session.db (the newest on disk when no session is
named). The database is opened read-only: statements that would write are refused.

  --json  print rows as a JSON array`,
  run(ctx, argv) {
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
      const rows = stmt.all() as Record<string, unknown>[];
      if (values.json) {
        ctx.out(
          JSON.stringify(
            rows,
            (_k, v: unknown) => (v instanceof Uint8Array ? `<blob ${v.byteLength} B>` : typeof v === 'bigint' ? String(v) : v),
            2,
          ),
        );
        return 0;
      }
      const cols = stmt.columns().map((c) => c.name);
      ctx.out(
        formatTable(
          cols,
          rows.map((r) => cols.map((c) => formatCell(r[c]))),
        ),
      );
      ctx.out(`(${rows.length} row${rows.length === 1 ? '' : 's'})`);
      return 0;
    } finally {
      db.close();
    }
  },
};
