import type Database from 'better-sqlite3';
import type { TableKind, TablePage, TableRow } from '../contract/appContract.ts';
import { TABLE_COLUMNS, type TableColumn } from '../contract/tableColumns.ts';
import { containsPattern } from './columnSearch.ts';
import type { OpenSession } from './sessionStores.ts';

// events.page: one view's table straight from SQL, ordered by seq. OFFSET alone costs a step per
// skipped row (50 ms at 100,000), so each table (and each filter) keeps a mark every STRIDE rows:
// the seq found at that offset. A page starts from the nearest mark and skips fewer than STRIDE
// rows. Rows are only ever appended, so after a commit (data_version moves) the marks are extended
// from the last seq seen, never rebuilt; the same pass gives the total the virtualized table needs.

interface TableSpec {
  readonly table: string;
  /** The order and the seq a row is addressed by; exec_events has no seq, so its id stands in. */
  readonly seq: string;
  /** SQL for each of the view's TABLE_COLUMNS (the compiler checks there is one for each), over the table aliased `t`. */
  readonly columns: Readonly<Record<string, string>>;
  /** The columns a filter looks in: the ones shown as text. */
  readonly text: readonly string[];
}

const usage = (key: string): string => `CASE WHEN json_valid(t.usage_details) THEN json_extract(t.usage_details, '$.${key}') END`;

export const TABLE_SPECS: Record<TableKind, TableSpec> = {
  net: {
    table: 'net_events',
    seq: 'seq',
    columns: {
      method: 't.method',
      domain: 't.domain',
      path: 't.path',
      status_code: 't.status_code',
      decision: 't.decision',
      bytes_sent: 't.bytes_sent',
      bytes_received: 't.bytes_received',
      duration_ms: 't.duration_ms',
      process_name: 't.process_name',
    },
    text: ['t.method', 't.domain', 't.path', 't.status_code', 't.decision', 't.process_name'],
  },
  model: {
    table: 'model_calls',
    seq: 'seq',
    columns: {
      provider: 't.provider',
      model: 't.model',
      input_tokens: 't.input_tokens',
      output_tokens: 't.output_tokens',
      cache_read: usage('cache_read'),
      cache_write: usage('cache_write'),
      estimated_cost_usd: 't.estimated_cost_usd',
      stop_reason: 't.stop_reason',
      duration_ms: 't.duration_ms',
    },
    text: ['t.provider', 't.model', 't.stop_reason'],
  },
  tool: {
    table: 'tool_calls',
    seq: 'seq',
    columns: {
      origin: 't.origin',
      tool_name: 't.tool_name',
      status: 't.status',
      duration_ms: 't.duration_ms',
      response_preview: 't.response_preview',
      model_call_seq: '(SELECT m.seq FROM model_calls m WHERE m.id = t.model_call_id)',
    },
    text: ['t.origin', 't.tool_name', 't.status', 't.response_preview'],
  },
  file: {
    table: 'fs_events',
    seq: 'seq',
    columns: { action: 't.action', path: 't.path', size: 't.size' },
    text: ['t.action', 't.path'],
  },
  exec: {
    table: 'exec_events',
    seq: 'id',
    columns: {
      argv: 't.argv',
      exit_code: 't.exit_code',
      duration_ms: 't.duration_ms',
      stdout_bytes: 't.stdout_bytes',
      stderr_bytes: 't.stderr_bytes',
    },
    text: ['t.argv'],
  },
} satisfies { readonly [K in TableKind]: TableSpec & { readonly columns: Readonly<Record<TableColumn<K>, string>> } };

type Cell = string | number | null;

/** argv is stored as JSON; the table shows it as a command line. */
function displayArgv(value: Cell): Cell {
  if (typeof value !== 'string') return value;
  try {
    const argv = JSON.parse(value) as unknown;
    if (Array.isArray(argv)) return argv.map((a) => (/^[\w@%+=:,./-]+$/.test(String(a)) ? String(a) : JSON.stringify(String(a)))).join(' ');
  } catch {
    // stored as plain text by another tool: shown as it is
  }
  return value;
}

/**
 * SQL true when the row's visible text holds the pattern; LIKE folds ASCII case in C, without
 * copying rows out. Columns are joined by a unit separator: LIKE stops at a NUL.
 */
export function filterSql(spec: TableSpec): string {
  return `(${spec.text.map((c) => `coalesce(${c}, '')`).join(' || char(31) || ')}) LIKE ? ESCAPE '\\'`;
}

const STRIDE = 256;
/** Filters whose marks are kept per session; the oldest is dropped past it. */
const MAX_FILTERS = 8;

interface Marks {
  version: number;
  /** The last seq counted, and how many rows (matching the filter) up to it. */
  lastSeq: number;
  total: number;
  /**
   * Unfiltered: marks[k] is the seq of the row at offset k * STRIDE, filled as pages need them
   * (sparse). Filtered: every matching seq, since matches may lie far apart.
   */
  readonly marks: number[];
}

export class EventTables {
  private readonly marks = new WeakMap<Database.Database, Map<string, Marks>>();
  private readonly statements = new WeakMap<Database.Database, Map<string, Database.Statement>>();

  private stmt(db: Database.Database, sql: string): Database.Statement {
    let byDb = this.statements.get(db);
    if (!byDb) this.statements.set(db, (byDb = new Map()));
    let s = byDb.get(sql);
    if (!s) byDb.set(sql, (s = db.prepare(sql)));
    return s;
  }

  /** The marks of a table (and filter), brought up to the database's current data_version. */
  private marksOf(session: OpenSession, kind: TableKind, filter: string | undefined): Marks {
    const db = session.store.db;
    const version = session.store.dataVersion();
    let byKey = this.marks.get(db);
    if (!byKey) this.marks.set(db, (byKey = new Map()));
    const key = `${kind}\u0000${filter ?? ''}`;
    let marks = byKey.get(key);
    if (marks) byKey.delete(key);
    marks ??= { version: -1, lastSeq: -1, total: 0, marks: [] };
    byKey.set(key, marks);
    for (const old of byKey.keys()) {
      if (byKey.size <= MAX_FILTERS + 1) break;
      byKey.delete(old);
    }
    if (marks.version === version) return marks;
    const spec = TABLE_SPECS[kind];
    if (filter) {
      const seqs = this.stmt(
        db,
        `SELECT ${spec.seq} FROM ${spec.table} t WHERE ${spec.seq} > ? AND ${filterSql(spec)} ORDER BY ${spec.seq}`,
      )
        .pluck()
        .all(marks.lastSeq, containsPattern(filter)) as number[];
      for (const seq of seqs) marks.marks.push(seq);
      marks.total += seqs.length;
      marks.lastSeq = seqs.at(-1) ?? marks.lastSeq;
    } else {
      // Counted in C over the seq index; the marks themselves are found when a page needs them.
      const added = this.stmt(db, `SELECT count(*) AS n, max(${spec.seq}) AS last FROM ${spec.table} WHERE ${spec.seq} > ?`).get(
        marks.lastSeq,
      ) as { n: number; last: number | null };
      marks.total += added.n;
      marks.lastSeq = added.last ?? marks.lastSeq;
    }
    marks.version = version;
    return marks;
  }

  /**
   * The seq at offset `k * STRIDE` of an unfiltered table: stepped to over the covering seq index
   * from the nearest mark below it (OFFSET there is a C loop over index entries: ~2 ms per
   * 100,000), then kept.
   */
  private mark(session: OpenSession, kind: TableKind, marks: Marks, k: number): number | undefined {
    const known = marks.marks[k];
    if (known !== undefined) return known;
    let j = k - 1;
    while (j >= 0 && marks.marks[j] === undefined) j--;
    const spec = TABLE_SPECS[kind];
    const seq = this.stmt(
      session.store.db,
      `SELECT ${spec.seq} FROM ${spec.table} WHERE ${spec.seq} >= ? ORDER BY ${spec.seq} LIMIT 1 OFFSET ?`,
    )
      .pluck()
      .get(j >= 0 ? marks.marks[j]! : -1, (k - Math.max(j, 0)) * STRIDE) as number | undefined;
    if (seq !== undefined) marks.marks[k] = seq;
    return seq;
  }

  page(session: OpenSession, kind: TableKind, offset: number, limit: number, filter?: string): TablePage {
    const spec = TABLE_SPECS[kind];
    if (!session.tables().has(spec.table)) return { rows: [], total: 0, nextOffset: null };
    const needle = filter && filter.length > 0 ? filter : undefined;
    const marks = this.marksOf(session, kind, needle);
    const total = marks.total;
    if (offset >= total) return { rows: [], total, nextOffset: null };
    const from = needle ? marks.marks[offset] : this.mark(session, kind, marks, Math.floor(offset / STRIDE));
    if (from === undefined) return { rows: [], total, nextOffset: null };
    const db = session.store.db;
    const columns = TABLE_COLUMNS[kind].map((name) => `${spec.columns[name]} AS "${name}"`).join(', ');
    const head = `SELECT t.id AS __id, t.${spec.seq} AS __seq, t.event_id AS __event_id, t.timestamp AS __at, ${columns} FROM ${spec.table} t`;
    let sql: string;
    let args: (number | string)[];
    if (needle) {
      // The matching seqs are known: the page is those rows by key, whatever lies between them.
      sql = `${head} WHERE t.${spec.seq} IN (SELECT value FROM json_each(?)) ORDER BY t.${spec.seq}`;
      args = [JSON.stringify(marks.marks.slice(offset, offset + limit))];
    } else {
      // Rows committed after the count are left for the next request to count.
      sql = `${head} WHERE t.id IN (SELECT id FROM ${spec.table} WHERE ${spec.seq} >= ? AND ${spec.seq} <= ? ORDER BY ${spec.seq} LIMIT ? OFFSET ?) ORDER BY t.${spec.seq}`;
      args = [from, marks.lastSeq, limit, offset % STRIDE];
    }
    const rows = (this.stmt(db, sql).all(...args) as Record<string, Cell>[]).map((r): TableRow => {
      const cells: Record<string, Cell> = {};
      for (const name of TABLE_COLUMNS[kind]) cells[name] = r[name] ?? null;
      if (kind === 'exec') cells.argv = displayArgv(cells.argv ?? null);
      return { seq: Number(r.__seq), id: Number(r.__id), eventId: String(r.__event_id), at: String(r.__at), columns: cells };
    });
    const next = offset + rows.length;
    return { rows, total, nextOffset: rows.length > 0 && next < total ? next : null };
  }

  /** The newest seq of each view's table (for `session.events`: which views got rows). */
  newest(session: OpenSession): Partial<Record<TableKind, number>> {
    const out: Partial<Record<TableKind, number>> = {};
    const tables = session.tables();
    for (const [kind, spec] of Object.entries(TABLE_SPECS) as [TableKind, TableSpec][]) {
      if (!tables.has(spec.table)) continue;
      const row = this.stmt(session.store.db, `SELECT max(${spec.seq}) AS m FROM ${spec.table}`).get() as { m: number | null };
      out[kind] = row.m ?? 0;
    }
    return out;
  }
}
