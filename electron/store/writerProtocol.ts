import type { SessionTable } from './sessionSchema.ts';

export type CellValue = string | number | bigint | Uint8Array | null;

export interface WriterInit {
  readonly dbPath: string;
  readonly meta: Readonly<Record<string, string>>;
}

/**
 * Rows grouped by table, each table's rows one after another in one array: a row is
 * `insertColumns(table).length` cells in that order. One array a table, not one a row: postMessage
 * clones, and the writer thread rebuilds, every array it carries.
 */
export type BatchRows = Partial<Record<SessionTable, CellValue[]>>;

/** The rows of one table's cells, each as its own array. */
export function* rowsOf(cells: readonly CellValue[], width: number): Generator<CellValue[]> {
  for (let at = 0; at < cells.length; at += width) yield cells.slice(at, at + width);
}

/** A native tool call whose result a later request carried back: it now reads as responded, or error when the result says the tool failed. */
export interface AnsweredToolCall {
  readonly callId: string;
  readonly preview: string | null;
  readonly isError: boolean;
}

export type ToWorker =
  | { readonly kind: 'batch'; readonly batchNo: number; readonly rows: BatchRows; readonly answered: readonly AnsweredToolCall[] }
  | { readonly kind: 'close'; readonly meta: Readonly<Record<string, string>> };

export interface RejectedRow {
  readonly table: SessionTable;
  readonly id: number;
  readonly error: string;
}

/** Rows by table: what a batch held when the disk refused it. */
export type RowCounts = Partial<Record<SessionTable, number>>;

export type FromWorker =
  | {
      readonly kind: 'ready';
      readonly maxSeq: number;
      readonly maxIds: Partial<Record<SessionTable, number>>;
      readonly nextEventId: number;
    }
  | { readonly kind: 'committed'; readonly batchNo: number; readonly rows: number; readonly rejected: RejectedRow[] }
  /** The batch was not written because session.db cannot be written; `reason` says why. */
  | { readonly kind: 'lost'; readonly batchNo: number; readonly rows: RowCounts; readonly reason: string }
  | { readonly kind: 'closed' }
  | { readonly kind: 'failed'; readonly error: string };
