import type { TableKind } from './appContract.ts';

// Kept apart from the zod schemas so the renderer, which draws these columns, imports them without bundling zod.

/** The columns each view's table has, in display order; the renderer must draw each (TableColumn). */
export const TABLE_COLUMNS = {
  net: ['method', 'domain', 'path', 'status_code', 'decision', 'bytes_sent', 'bytes_received', 'duration_ms', 'process_name'],
  model: [
    'provider',
    'model',
    'input_tokens',
    'output_tokens',
    'cache_read',
    'cache_write',
    'estimated_cost_usd',
    'stop_reason',
    'duration_ms',
  ],
  tool: ['origin', 'tool_name', 'status', 'duration_ms', 'response_preview', 'model_call_seq'],
  file: ['action', 'path', 'size'],
  exec: ['argv', 'exit_code', 'duration_ms', 'stdout_bytes', 'stderr_bytes'],
} as const satisfies Record<TableKind, readonly string[]>;
export type TableColumn<K extends TableKind> = (typeof TABLE_COLUMNS)[K][number];
