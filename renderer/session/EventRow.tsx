import { memo, type CSSProperties } from 'react';
import type { TableKind, TableRow } from '../../electron/contract/appContract.ts';
import type { CellContext, ColumnSpec } from './columns.tsx';

interface Props {
  readonly row: TableRow | undefined;
  readonly index: number;
  readonly start: number;
  readonly height: number;
  readonly kind: TableKind;
  readonly columns: readonly ColumnSpec[];
  readonly grid: CSSProperties;
  readonly selected: boolean;
  readonly context: CellContext;
  readonly onSelect: (seq: number, index: number) => void;
}

/**
 * One virtual row. Memoized: while scrolling, only rows that enter the viewport (or change
 * selection) render; the rest keep their DOM and only their offset moves.
 */
export const EventRow = memo(function EventRow({ row, index, start, height, kind, columns, grid, selected, context, onSelect }: Props) {
  return (
    <div
      className={selected ? 'grid-row selected' : 'grid-row'}
      style={{ ...grid, transform: `translateY(${start}px)`, height }}
      role="row"
      aria-selected={selected}
      data-testid={row ? `${kind}-row` : 'row-loading'}
      data-seq={row?.seq}
      onClick={() => row && onSelect(row.seq, index)}
    >
      {row ? (
        columns.map((c) => (
          <div key={c.key} className={c.numeric ? 'cell num' : 'cell'} title={c.title?.(row)}>
            {c.render(row, context)}
          </div>
        ))
      ) : (
        <div className="cell muted">…</div>
      )}
    </div>
  );
});
