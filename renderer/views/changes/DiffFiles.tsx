import { useVirtualizer } from '@tanstack/react-virtual';
import { useMemo, useRef, useState, type KeyboardEvent, type ReactNode } from 'react';
import type { FileDiff } from '../../../electron/contract/appContract.ts';
import { diffCounts } from './diffLayout.ts';
import { DiffView } from './DiffView.tsx';

const ENTRY_PX = 24;

interface Props {
  readonly diffs: readonly FileDiff[];
  readonly wholeHint: string;
  /** What to offer for the file shown (its Revert button). */
  readonly actions?: (diff: FileDiff) => ReactNode;
  readonly testId: string;
}

/**
 * Several files' diffs, as `git diff` gives them: a list of the files with the lines each added
 * and removed (virtualized: a long session may touch thousands), and the chosen file's diff.
 * One file goes straight to its diff.
 */
export function DiffFiles({ diffs, wholeHint, actions, testId }: Props) {
  const [chosen, setChosen] = useState(0);
  const counts = useMemo(() => diffs.map((d) => diffCounts(d)), [diffs]);
  const scroller = useRef<HTMLDivElement>(null);
  const virtualizer = useVirtualizer({
    count: diffs.length,
    getScrollElement: () => scroller.current,
    estimateSize: () => ENTRY_PX,
    overscan: 10,
    useFlushSync: false,
  });
  const index = Math.min(chosen, Math.max(0, diffs.length - 1));
  const shown = diffs[index];

  const move = (e: KeyboardEvent) => {
    if (e.key !== 'ArrowDown' && e.key !== 'ArrowUp') return;
    e.preventDefault();
    const next = Math.max(0, Math.min(diffs.length - 1, index + (e.key === 'ArrowDown' ? 1 : -1)));
    setChosen(next);
    virtualizer.scrollToIndex(next);
  };

  const totals = counts.reduce((t, c) => ({ added: t.added + c.added, removed: t.removed + c.removed }), { added: 0, removed: 0 });
  return (
    <div className="diff-files" data-testid={testId}>
      {diffs.length === 0 && <div className="muted pad">No file differs.</div>}
      {diffs.length > 1 && (
        <>
          <div className="muted diff-files-summary" data-testid="diff-files-summary">
            {diffs.length} files changed, <span className="diff-added">+{totals.added}</span>{' '}
            <span className="diff-removed">-{totals.removed}</span>
          </div>
          <div
            ref={scroller}
            className="diff-file-list"
            tabIndex={0}
            role="listbox"
            aria-label="files that differ"
            aria-activedescendant={`${testId}-file-${index}`}
            onKeyDown={move}
          >
            <div style={{ height: virtualizer.getTotalSize(), position: 'relative' }}>
              {virtualizer.getVirtualItems().map((item) => {
                const diff = diffs[item.index]!;
                const count = counts[item.index]!;
                return (
                  <div
                    key={item.key}
                    id={`${testId}-file-${item.index}`}
                    role="option"
                    aria-selected={item.index === index}
                    className={item.index === index ? 'diff-file selected' : 'diff-file'}
                    data-testid="diff-file"
                    data-path={diff.path}
                    style={{ transform: `translateY(${item.start}px)`, height: ENTRY_PX }}
                    onClick={() => setChosen(item.index)}
                  >
                    <span className={`badge status-${diff.status}`}>{diff.status}</span>
                    <span className="diff-file-path" title={diff.path}>
                      {diff.path}
                    </span>
                    <span className="diff-added">+{count.added}</span>
                    <span className="diff-removed">-{count.removed}</span>
                  </div>
                );
              })}
            </div>
          </div>
        </>
      )}
      {shown && (
        <>
          {actions && <div className="diff-actions">{actions(shown)}</div>}
          <DiffView key={`${index}:${shown.path}`} diff={shown} wholeHint={wholeHint} />
        </>
      )}
    </div>
  );
}
