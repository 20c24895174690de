import type { ReactNode } from 'react';
import type { TableKind, TableRow } from '../../electron/contract/appContract.ts';
import { TABLE_COLUMNS, type TableColumn } from '../../electron/contract/tableColumns.ts';
import { asNumber, cellText, formatBytes, formatCost, formatCount, formatDuration, formatTime } from '../app/format.ts';

/** What a cell may do besides show text: jump to a row in another view. */
export interface CellContext {
  readonly jump: (kind: TableKind, seq: number) => void;
}

export interface ColumnSpec {
  readonly key: string;
  readonly label: string;
  /** A CSS grid track: the table lays out header and rows on one grid. */
  readonly width: string;
  readonly numeric?: boolean;
  readonly render: (row: TableRow, context: CellContext) => ReactNode;
  /** Hover text, for cells that clip (paths, previews). */
  readonly title?: (row: TableRow) => string;
}

const field = (row: TableRow, key: string) => row.columns[key] ?? null;
const text = (key: string) => (row: TableRow) => cellText(field(row, key));
const num = (format: (n: number | null) => string, key: string) => (row: TableRow) => format(asNumber(field(row, key)));

const time: ColumnSpec = { key: 'at', label: 'time', width: '104px', render: (row) => formatTime(row.at), title: (row) => row.at };
const duration: ColumnSpec = {
  key: 'duration_ms',
  label: 'duration',
  width: '78px',
  numeric: true,
  render: num(formatDuration, 'duration_ms'),
};

function statusClass(code: number | null): string {
  if (code == null) return 'muted';
  return code >= 500 ? 'bad' : code >= 400 ? 'warn' : 'ok';
}

/**
 * How each of the contract's table columns is drawn. The compiler demands an entry for every
 * column TABLE_COLUMNS lists; null marks one drawn in another's cell (bytes sent and received share one).
 */
const CELLS: { readonly [K in TableKind]: Record<TableColumn<K>, ColumnSpec | null> } = {
  net: {
    method: { key: 'method', label: 'method', width: '72px', render: text('method') },
    domain: { key: 'domain', label: 'domain', width: 'minmax(90px, 1.2fr)', render: text('domain'), title: text('domain') },
    path: { key: 'path', label: 'path', width: 'minmax(90px, 2fr)', render: text('path'), title: text('path') },
    status_code: {
      key: 'status_code',
      label: 'status',
      width: '64px',
      numeric: true,
      render: (row) => {
        const code = asNumber(field(row, 'status_code'));
        return <span className={statusClass(code)}>{code ?? '—'}</span>;
      },
    },
    decision: {
      key: 'decision',
      label: 'decision',
      width: '78px',
      render: (row) => {
        const decision = cellText(field(row, 'decision'));
        return <span className={decision === 'denied' || decision === 'deny' ? 'bad' : undefined}>{decision}</span>;
      },
    },
    bytes_sent: {
      key: 'bytes',
      label: 'bytes ↑/↓',
      width: '150px',
      numeric: true,
      render: (row) => `${formatBytes(asNumber(field(row, 'bytes_sent')))} / ${formatBytes(asNumber(field(row, 'bytes_received')))}`,
    },
    bytes_received: null,
    duration_ms: duration,
    process_name: {
      key: 'process_name',
      label: 'process',
      width: 'minmax(60px, 0.6fr)',
      render: text('process_name'),
      title: text('process_name'),
    },
  },
  model: {
    provider: { key: 'provider', label: 'provider', width: '82px', render: text('provider') },
    model: { key: 'model', label: 'model', width: 'minmax(120px, 1.5fr)', render: text('model'), title: text('model') },
    input_tokens: { key: 'input_tokens', label: 'in', width: '64px', numeric: true, render: num(formatCount, 'input_tokens') },
    output_tokens: { key: 'output_tokens', label: 'out', width: '64px', numeric: true, render: num(formatCount, 'output_tokens') },
    cache_read: { key: 'cache_read', label: 'cache rd', width: '74px', numeric: true, render: num(formatCount, 'cache_read') },
    cache_write: { key: 'cache_write', label: 'cache wr', width: '74px', numeric: true, render: num(formatCount, 'cache_write') },
    estimated_cost_usd: {
      key: 'estimated_cost_usd',
      label: 'cost',
      width: '72px',
      numeric: true,
      render: num(formatCost, 'estimated_cost_usd'),
    },
    stop_reason: { key: 'stop_reason', label: 'stop', width: 'minmax(80px, 0.6fr)', render: text('stop_reason') },
    duration_ms: duration,
  },
  tool: {
    origin: { key: 'origin', label: 'origin', width: '70px', render: text('origin') },
    tool_name: { key: 'tool_name', label: 'tool', width: 'minmax(90px, 0.8fr)', render: text('tool_name'), title: text('tool_name') },
    status: { key: 'status', label: 'status', width: '90px', render: text('status') },
    duration_ms: duration,
    response_preview: {
      key: 'response_preview',
      label: 'response',
      width: 'minmax(160px, 3fr)',
      render: text('response_preview'),
      title: text('response_preview'),
    },
    model_call_seq: {
      key: 'model_call_seq',
      label: 'model call',
      width: '90px',
      render: (row, context) => {
        const seq = asNumber(field(row, 'model_call_seq'));
        if (seq == null) return null;
        return (
          <button
            type="button"
            className="link"
            data-testid="tool-model-link"
            onClick={(e) => {
              e.stopPropagation();
              context.jump('model', seq);
            }}
          >
            #{seq}
          </button>
        );
      },
    },
  },
  file: {
    action: { key: 'action', label: 'action', width: '80px', render: text('action') },
    path: { key: 'path', label: 'path', width: 'minmax(200px, 4fr)', render: text('path'), title: text('path') },
    size: { key: 'size', label: 'size', width: '84px', numeric: true, render: num(formatBytes, 'size') },
  },
  exec: {
    argv: { key: 'argv', label: 'command', width: 'minmax(200px, 4fr)', render: text('argv'), title: text('argv') },
    exit_code: { key: 'exit_code', label: 'exit', width: '52px', numeric: true, render: text('exit_code') },
    duration_ms: duration,
    stdout_bytes: { key: 'stdout_bytes', label: 'stdout', width: '76px', numeric: true, render: num(formatBytes, 'stdout_bytes') },
    stderr_bytes: { key: 'stderr_bytes', label: 'stderr', width: '76px', numeric: true, render: num(formatBytes, 'stderr_bytes') },
  },
};

function viewColumns<K extends TableKind>(kind: K): readonly ColumnSpec[] {
  const cells: Record<string, ColumnSpec | null> = CELLS[kind];
  return [time, ...TABLE_COLUMNS[kind].flatMap((name) => cells[name] ?? [])];
}

/** Each view's columns: the time, then the contract's TABLE_COLUMNS in its order. */
export const VIEW_COLUMNS: Record<TableKind, readonly ColumnSpec[]> = {
  net: viewColumns('net'),
  model: viewColumns('model'),
  tool: viewColumns('tool'),
  file: viewColumns('file'),
  exec: viewColumns('exec'),
};
