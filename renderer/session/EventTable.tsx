import { useVirtualizer } from '@tanstack/react-virtual';
import { useCallback, useEffect, useLayoutEffect, useMemo, useRef, useState, type KeyboardEvent } from 'react';
import type { TableKind } from '../../electron/contract/appContract.ts';
import { formatCount } from '../app/format.ts';
import type { CellContext, ColumnSpec } from './columns.tsx';
import { DetailPane } from './DetailPane.tsx';
import { EventRow } from './EventRow.tsx';
import { usePagedRows } from './usePagedRows.ts';
import { useDebounced } from './useDebounced.ts';

/** Fixed row height: the virtualizer never measures, so 100k rows cost nothing to lay out. */
const ROW_HEIGHT = 24;

/** A request to show one row (a search hit, a link from another view); `nonce` repeats a jump. */
export interface Focus {
  readonly seq: number;
  readonly nonce: number;
}

interface Props {
  readonly sessionId: string;
  readonly kind: TableKind;
  readonly columns: readonly ColumnSpec[];
  readonly visible: boolean;
  readonly liveVersion: number;
  readonly focus: Focus | null;
  readonly context: CellContext;
}

/**
 * One view's events as a virtualized, lazily paged table with a filter and a detail pane. Only
 * the rows in and near the viewport are in the DOM, and only their pages are fetched.
 */
export function EventTable({ sessionId, kind, columns, visible, liveVersion, focus, context }: Props) {
  const [filterInput, setFilterInput] = useState('');
  const filter = useDebounced(filterInput.trim(), 250);
  const rows = usePagedRows(sessionId, kind, filter, liveVersion);
  const [selected, setSelected] = useState<{ seq: number; index: number } | null>(null);
  const scroller = useRef<HTMLDivElement>(null);
  const savedScroll = useRef(0);
  const count = rows.total ?? 0;

  const virtualizer = useVirtualizer({
    count,
    getScrollElement: () => scroller.current,
    estimateSize: () => ROW_HEIGHT,
    overscan: 12,
    // Rendering synchronously inside every scroll event costs frames on a busy machine; React's
    // normal batching paints the same rows a frame later at most.
    useFlushSync: false,
  });
  const items = virtualizer.getVirtualItems();
  const first = items[0]?.index ?? 0;
  const last = items.at(-1)?.index ?? 0;

  const { ensure } = rows;
  useEffect(() => {
    if (count > 0) ensure(first, last);
  }, [ensure, first, last, count]);

  // A hidden pane has no layout and may lose its offset: put it back when shown again.
  useLayoutEffect(() => {
    if (visible && scroller.current && scroller.current.scrollTop !== savedScroll.current) scroller.current.scrollTop = savedScroll.current;
  }, [visible]);

  // Jump to a row asked for from elsewhere: select it at once, then find and scroll to it.
  useEffect(() => {
    if (!focus) return;
    let cancelled = false;
    setSelected({ seq: focus.seq, index: -1 });
    void rows.findOffset(focus.seq).then((index) => {
      if (cancelled || index === null) return;
      setSelected({ seq: focus.seq, index });
      virtualizer.scrollToIndex(index, { align: 'center' });
    });
    return () => {
      cancelled = true;
    };
    // Only a new focus request moves the view (rows and virtualizer change on every render).
  }, [focus]);

  const move = (e: KeyboardEvent) => {
    if (e.key !== 'ArrowDown' && e.key !== 'ArrowUp') return;
    e.preventDefault();
    const from = selected && selected.index >= 0 ? selected.index : e.key === 'ArrowDown' ? -1 : count;
    const index = Math.max(0, Math.min(count - 1, from + (e.key === 'ArrowDown' ? 1 : -1)));
    const row = rows.rowAt(index);
    if (!row) return;
    setSelected({ seq: row.seq, index });
    virtualizer.scrollToIndex(index);
  };

  // Below the columns' minimum widths the table scrolls sideways instead of clipping cells; the
  // header follows the body's horizontal scroll.
  const grid = useMemo(() => {
    const minWidth = columns.reduce((sum, c) => sum + Number(/(\d+)px/.exec(c.width)?.[1] ?? 60), 0);
    return { gridTemplateColumns: columns.map((c) => c.width).join(' '), minWidth };
  }, [columns]);
  const select = useCallback((seq: number, index: number) => setSelected({ seq, index }), []);
  const head = useRef<HTMLDivElement>(null);
  const scrollerTestId = kind === 'net' ? 'net-table' : `${kind}-table`;

  return (
    <div className={selected ? 'split with-detail' : 'split'}>
      <div className="table-side">
        <div className="toolbar">
          <input
            className="filter"
            type="search"
            data-testid={`${kind}-filter`}
            placeholder="Filter rows"
            spellCheck={false}
            value={filterInput}
            onChange={(e) => setFilterInput(e.target.value)}
          />
          <span className="muted count" data-testid={`${kind}-count`}>
            {rows.total === null ? 'loading…' : `${formatCount(rows.total)} rows`}
          </span>
          {rows.error && <span className="error">{rows.error}</span>}
        </div>
        <div className="grid-head-wrap" ref={head}>
          <div className="grid-head" style={grid} role="row">
            {columns.map((c) => (
              <div key={c.key} className={c.numeric ? 'cell num' : 'cell'} role="columnheader">
                {c.label}
              </div>
            ))}
          </div>
        </div>
        <div
          ref={scroller}
          className="grid-body"
          data-testid={scrollerTestId}
          tabIndex={0}
          role="grid"
          aria-rowcount={count}
          onKeyDown={move}
          onScroll={(e) => {
            savedScroll.current = e.currentTarget.scrollTop;
            if (head.current) head.current.scrollLeft = e.currentTarget.scrollLeft;
          }}
        >
          <div style={{ height: virtualizer.getTotalSize(), position: 'relative', minWidth: grid.minWidth }}>
            {items.map((item) => {
              const row = rows.rowAt(item.index);
              return (
                <EventRow
                  key={item.key}
                  row={row}
                  index={item.index}
                  start={item.start}
                  height={ROW_HEIGHT}
                  kind={kind}
                  columns={columns}
                  grid={grid}
                  selected={row !== undefined && selected?.seq === row.seq}
                  context={context}
                  onSelect={select}
                />
              );
            })}
          </div>
          {rows.total === 0 && <div className="muted pad">{filter ? 'No rows match the filter.' : 'No rows yet.'}</div>}
        </div>
      </div>
      {selected && (
        <DetailPane sessionId={sessionId} kind={kind} seq={selected.seq} onJump={context.jump} onClose={() => setSelected(null)} />
      )}
    </div>
  );
}
