import { insertColumns, SESSION_TABLES, type ColumnDef, type SessionTable } from './sessionSchema.ts';
import type { CellValue } from './writerProtocol.ts';

/**
 * Pushes a row's cells onto `cells` in column order, the column's DEFAULT for what the row leaves
 * out, and returns what they weigh in the writer's queue (a string two bytes a character, bytes
 * their length, anything else eight, and sixteen for the row).
 */
export type RowPacker = (row: Readonly<Record<string, CellValue | undefined>>, cells: CellValue[]) => number;

/** How a table's row is laid out as the positional cells its insert statement binds. */
export interface TableLayout {
  readonly columns: readonly string[];
  /** The column's DEFAULT, used when a producer leaves it out (an explicit NULL would override it). */
  readonly defaults: readonly CellValue[];
  readonly idIndex: number;
  readonly seqIndex: number;
  readonly eventIdIndex: number;
  /** The BLOB columns: the only cells that carry bytes. */
  readonly byteIndexes: readonly number[];
  readonly pack: RowPacker;
}

/** A DEFAULT clause as a value: a number or a quoted string literal. */
function literalDefault(sql: string | undefined): CellValue {
  if (sql === undefined) return null;
  if (/^-?\d+(\.\d+)?$/.test(sql)) return Number(sql);
  const quoted = /^'((?:[^']|'')*)'$/.exec(sql);
  if (quoted) return quoted[1]!.replace(/''/g, "'");
  throw new Error(`the writer cannot apply DEFAULT ${sql}; give the column a literal default or fill it in the producer`);
}

/**
 * A packer written out for one table's columns: every recorded exchange packs a few rows, and a loop
 * reading each row by a computed column name was a lookup the engine could not specialise (a
 * quarter of the recording's cost on the proxy's thread). The names are the schema's own
 * identifiers, quoted; no producer's data reaches the code.
 */
function packerFor(columns: readonly string[], defaults: readonly CellValue[]): RowPacker {
  const body = columns.map(
    (column, i) =>
      `v = row[${JSON.stringify(column)}] ?? d[${i}]; cells.push(v); ` +
      "w += typeof v === 'string' ? v.length * 2 : v === null ? 1 : typeof v === 'object' ? v.byteLength : 8;",
  );
  const make = new Function('d', `return function pack(row, cells) { let v; let w = 16; ${body.join(' ')} return w; };`) as (
    d: readonly CellValue[],
  ) => RowPacker;
  return make(defaults);
}

const layouts = new Map<SessionTable, TableLayout>();

export function layoutOf(table: SessionTable): TableLayout {
  let layout = layouts.get(table);
  if (!layout) {
    const columns = insertColumns(table);
    const defs = SESSION_TABLES[table].columns as Record<string, ColumnDef>;
    const defaults = columns.map((c) => literalDefault(defs[c]!.default));
    layout = {
      columns,
      defaults,
      idIndex: columns.indexOf('id'),
      seqIndex: columns.indexOf('seq'),
      eventIdIndex: columns.indexOf('event_id'),
      byteIndexes: columns.flatMap((c, i) => (defs[c]!.type === 'BLOB' ? [i] : [])),
      pack: packerFor(columns, defaults),
    };
    layouts.set(table, layout);
  }
  return layout;
}
