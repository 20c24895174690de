import { insertColumns, SESSION_TABLES, type ColumnDef, type SessionTable } from './sessionSchema.ts';
import type { CellValue } from './writerProtocol.ts';

/** How a table's row is laid out as the positional cells its insert statement binds. */
export interface TableLayout {
  readonly columns: readonly string[];
  /** The column's DEFAULT, used when a producer leaves it out (an explicit NULL would override it). */
  readonly defaults: readonly CellValue[];
  readonly idIndex: number;
  readonly seqIndex: number;
  readonly eventIdIndex: number;
}

/** A DEFAULT clause as a value: a number or a quoted string literal. */
function literalDefault(sql: string | undefined): CellValue {
  if (sql === undefined) return null;
  if (/^-?\d+(\.\d+)?$/.test(sql)) return Number(sql);
  const quoted = /^'((?:[^']|'')*)'$/.exec(sql);
  if (quoted) return quoted[1]!.replace(/''/g, "'");
  throw new Error(`the writer cannot apply DEFAULT ${sql}; give the column a literal default or fill it in the producer`);
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
    };
    layouts.set(table, layout);
  }
  return layout;
}
