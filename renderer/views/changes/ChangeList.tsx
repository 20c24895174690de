import { useVirtualizer } from '@tanstack/react-virtual';
import { memo, useEffect, useLayoutEffect, useRef, type KeyboardEvent } from 'react';
import type { WorkspaceChange } from '../../../electron/contract/appContract.ts';
import { formatBytes, formatCount, formatTime } from '../../app/format.ts';
import type { PagedList } from '../../session/usePagedList.ts';
import { opensGroup, sourceLabel } from './changeGroups.ts';

const ROW_PX = 24;

interface RowProps {
  readonly change: WorkspaceChange | undefined;
  readonly opens: boolean;
  readonly index: number;
  readonly start: number;
  readonly selected: boolean;
  readonly onSelect: (change: WorkspaceChange, index: number) => void;
  readonly onPath: (path: string) => void;
  readonly onTurn: (turn: number) => void;
}

/** One change: when, what, which path, its size, what made it; the first of a turn's changes is set apart and its source in bold. */
const ChangeRow = memo(function ChangeRow({ change, opens, index, start, selected, onSelect, onPath, onTurn }: RowProps) {
  const classes = ['change-row'];
  if (selected) classes.push('selected');
  if (opens) classes.push('opens-group');
  return (
    <div
      className={classes.join(' ')}
      style={{ transform: `translateY(${start}px)`, height: ROW_PX }}
      role="row"
      aria-selected={selected}
      data-testid={change ? 'file-row' : 'row-loading'}
      data-seq={change?.seq}
      data-action={change?.action}
      data-path={change?.path}
      onClick={() => change && onSelect(change, index)}
    >
      {change ? (
        <>
          <span className="cell mono muted change-at" title={change.at}>
            {formatTime(change.at)}
          </span>
          <span className="cell change-action">
            <span className={`badge action-${change.action}`}>{change.action}</span>
          </span>
          <span className="cell change-path" title={change.path}>
            <button
              type="button"
              className="link"
              tabIndex={-1}
              title={`only the changes of ${change.path}`}
              onClick={(e) => {
                e.stopPropagation();
                onPath(change.path);
              }}
            >
              {change.path}
            </button>
            {change.entries !== null && <span className="muted"> {formatCount(change.entries)} paths</span>}
          </span>
          <span className="cell num muted">{formatBytes(change.size)}</span>
          <span className="cell change-source" data-testid="change-source">
            {change.source ? (
              <button
                type="button"
                className="link"
                tabIndex={-1}
                title={`only the changes of turn ${change.source.turn + 1}`}
                onClick={(e) => {
                  e.stopPropagation();
                  onTurn(change.source!.turn);
                }}
              >
                {sourceLabel(change.source)}
              </button>
            ) : (
              <span className="muted">{sourceLabel(null)}</span>
            )}
          </span>
        </>
      ) : (
        <span className="cell muted">…</span>
      )}
    </div>
  );
});

interface Props {
  readonly pages: PagedList<WorkspaceChange>;
  readonly selectedSeq: number | null;
  readonly visible: boolean;
  readonly onSelect: (change: WorkspaceChange, index: number) => void;
  readonly onPath: (path: string) => void;
  readonly onTurn: (turn: number) => void;
  /** The selected change's row, or -1 while a jump from elsewhere is finding it. */
  readonly selectedIndex: number;
  /** A row to scroll to (a jump from elsewhere found it); `nonce` repeats a jump. */
  readonly reveal: { readonly index: number; readonly nonce: number } | null;
}

/**
 * The changes in recording order, virtualized and paged like the table views; a turn's changes
 * sit together under its name. Arrow keys move the selection.
 */
export function ChangeList({ pages, selectedSeq, selectedIndex, reveal, visible, onSelect, onPath, onTurn }: Props) {
  const scroller = useRef<HTMLDivElement>(null);
  const savedScroll = useRef(0);
  const count = pages.total ?? 0;
  const virtualizer = useVirtualizer({
    count,
    getScrollElement: () => scroller.current,
    estimateSize: () => ROW_PX,
    overscan: 12,
    useFlushSync: false,
  });
  const items = virtualizer.getVirtualItems();
  const first = items[0]?.index ?? 0;
  const last = items.at(-1)?.index ?? 0;
  const { ensure } = pages;
  useEffect(() => {
    // The row above the first drawn says whether the first opens a group.
    if (count > 0) ensure(Math.max(0, first - 1), last);
  }, [ensure, first, last, count]);

  useLayoutEffect(() => {
    if (visible && scroller.current && scroller.current.scrollTop !== savedScroll.current) scroller.current.scrollTop = savedScroll.current;
  }, [visible]);

  useEffect(() => {
    if (reveal) virtualizer.scrollToIndex(reveal.index, { align: 'center' });
    // Only a new reveal moves the list (the virtualizer is new each render).
  }, [reveal]);

  const move = (e: KeyboardEvent) => {
    if (e.key !== 'ArrowDown' && e.key !== 'ArrowUp') return;
    e.preventDefault();
    const from = selectedIndex >= 0 ? selectedIndex : e.key === 'ArrowDown' ? -1 : count;
    const index = Math.max(0, Math.min(count - 1, from + (e.key === 'ArrowDown' ? 1 : -1)));
    const change = pages.rowAt(index);
    if (!change) return;
    onSelect(change, index);
    virtualizer.scrollToIndex(index);
  };

  return (
    <div
      ref={scroller}
      className="grid-body change-list"
      data-testid="file-table"
      tabIndex={0}
      role="grid"
      aria-label="workspace changes; arrow keys choose one to show its diff"
      aria-rowcount={count}
      onKeyDown={move}
      onScroll={(e) => {
        savedScroll.current = e.currentTarget.scrollTop;
      }}
    >
      <div style={{ height: virtualizer.getTotalSize(), position: 'relative' }}>
        {items.map((item) => {
          const change = pages.rowAt(item.index);
          return (
            <ChangeRow
              key={item.key}
              change={change}
              opens={change !== undefined && opensGroup(item.index === 0 ? undefined : pages.rowAt(item.index - 1), change)}
              index={item.index}
              start={item.start}
              selected={change !== undefined && change.seq === selectedSeq}
              onSelect={onSelect}
              onPath={onPath}
              onTurn={onTurn}
            />
          );
        })}
      </div>
    </div>
  );
}
