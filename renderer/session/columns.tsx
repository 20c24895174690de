import type { ReactNode } from 'react';
import type { TableKind, TableRow } from '../../electron/contract/appContract.ts';
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
const duration: ColumnSpec = { key: 'duration_ms', label: 'duration', width: '78px', numeric: true, render: num(formatDuration, 'duration_ms') };

function statusClass(code: number | null): string {
  if (code == null) return 'muted';
  return code >= 500 ? 'bad' : code >= 400 ? 'warn' : 'ok';
}

/** Each view's columns, drawn from TABLE_COLUMNS in the contract, in its order. */
export const VIEW_COLUMNS: Record<TableKind, readonly ColumnSpec[]> = {
  net: [
    time,
    { key: 'method', label: 'method', width: '72px', render: text('method') },
    { key: 'domain', label: 'domain', width: 'minmax(90px, 1.2fr)', render: text('domain'), title: text('domain') },
    { key: 'path', label: 'path', width: 'minmax(90px, 2fr)', render: text('path'), title: text('path') },
    {
      key: 'status_code',
      label: 'status',
      width: '64px',
      numeric: true,
      render: (row) => {
        const code = asNumber(field(row, 'status_code'));
        return <span className={statusClass(code)}>{code ?? '—'}</span>;
      },
    },
    {
      key: 'decision',
      label: 'decision',
      width: '78px',
      render: (row) => {
        const decision = cellText(field(row, 'decision'));
        return <span className={decision === 'denied' || decision === 'deny' ? 'bad' : undefined}>{decision}</span>;
      },
    },
    {
      key: 'bytes',
      label: 'bytes ↑/↓',
      width: '150px',
      numeric: true,
      render: (row) => `${formatBytes(asNumber(field(row, 'bytes_sent')))} / ${formatBytes(asNumber(field(row, 'bytes_received')))}`,
    },
    duration,
    { key: 'process_name', label: 'process', width: 'minmax(60px, 0.6fr)', render: text('process_name'), title: text('process_name') },
  ],
  model: [
    time,
    { key: 'provider', label: 'provider', width: '82px', render: text('provider') },
    { key: 'model', label: 'model', width: 'minmax(120px, 1.5fr)', render: text('model'), title: text('model') },
    { key: 'input_tokens', label: 'in', width: '64px', numeric: true, render: num(formatCount, 'input_tokens') },
    { key: 'output_tokens', label: 'out', width: '64px', numeric: true, render: num(formatCount, 'output_tokens') },
    { key: 'cache_read', label: 'cache rd', width: '74px', numeric: true, render: num(formatCount, 'cache_read') },
    { key: 'cache_write', label: 'cache wr', width: '74px', numeric: true, render: num(formatCount, 'cache_write') },
    { key: 'estimated_cost_usd', label: 'cost', width: '72px', numeric: true, render: num(formatCost, 'estimated_cost_usd') },
    { key: 'stop_reason', label: 'stop', width: 'minmax(80px, 0.6fr)', render: text('stop_reason') },
    duration,
  ],
  tool: [
    time,
    { key: 'origin', label: 'origin', width: '70px', render: text('origin') },
    { key: 'tool_name', label: 'tool', width: 'minmax(90px, 0.8fr)', render: text('tool_name'), title: text('tool_name') },
    { key: 'status', label: 'status', width: '90px', render: text('status') },
    duration,
    { key: 'response_preview', label: 'response', width: 'minmax(160px, 3fr)', render: text('response_preview'), title: text('response_preview') },
    {
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
  ],
  file: [
    time,
    { key: 'action', label: 'action', width: '80px', render: text('action') },
    { key: 'path', label: 'path', width: 'minmax(200px, 4fr)', render: text('path'), title: text('path') },
    { key: 'size', label: 'size', width: '84px', numeric: true, render: num(formatBytes, 'size') },
  ],
  exec: [
    time,
    { key: 'argv', label: 'command', width: 'minmax(200px, 4fr)', render: text('argv'), title: text('argv') },
    { key: 'exit_code', label: 'exit', width: '52px', numeric: true, render: text('exit_code') },
    duration,
    { key: 'stdout_bytes', label: 'stdout', width: '76px', numeric: true, render: num(formatBytes, 'stdout_bytes') },
    { key: 'stderr_bytes', label: 'stderr', width: '76px', numeric: true, render: num(formatBytes, 'stderr_bytes') },
  ],
};
