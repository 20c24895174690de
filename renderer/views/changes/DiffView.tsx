import { useVirtualizer } from '@tanstack/react-virtual';
import { useEffect, useMemo, useReducer, useRef, type KeyboardEvent } from 'react';
import type { FileDiff } from '../../../electron/contract/appContract.ts';
import { diffCounts, diffRows, type DiffRow } from './diffLayout.ts';
import { highlightLines, languageOf, type Segment } from './highlight.ts';

/** Fixed line height: the virtualizer never measures, so a 20,000-line diff costs a screenful to draw. */
const LINE_PX = 18;
/** Lines highlighted together: enough context for most constructs, and ~10 ms of highlight.js on a busy machine. */
const BLOCK = 50;

const SIGN: Readonly<Record<DiffRow['kind'], string>> = { hunk: '', context: ' ', del: '-', add: '+', eof: '\\' };

const modeText = (mode: number | null) => (mode === null ? 'none' : mode.toString(8).padStart(6, '0'));

/**
 * Syntax colour for the rows of one block. Each side is highlighted as its own text (the old
 * file's lines, the new file's) so a string or comment reads as it does in that file; a construct
 * open across a block's start is drawn plain.
 */
function blockSegments(rows: readonly DiffRow[], block: number, language: string | null): Segment[][] {
  const from = block * BLOCK;
  const slice = rows.slice(from, from + BLOCK);
  const oldSide = slice.filter((r) => r.kind === 'context' || r.kind === 'del');
  const newSide = slice.filter((r) => r.kind === 'context' || r.kind === 'add');
  const oldLines = highlightLines(
    oldSide.map((r) => r.text),
    language,
  );
  const newLines = highlightLines(
    newSide.map((r) => r.text),
    language,
  );
  let o = 0;
  let n = 0;
  return slice.map((row) => {
    if (row.kind === 'del') return oldLines[o++]!;
    if (row.kind === 'add') return newLines[n++]!;
    if (row.kind === 'context') {
      o++;
      return newLines[n++]!;
    }
    return [{ text: row.text, className: '' }];
  });
}

interface Props {
  readonly diff: FileDiff;
  /** Says how to see a truncated diff whole. */
  readonly wholeHint: string;
}

/**
 * One file's unified diff: a header (status, modes, lines added and removed, why there is no
 * text to show), then its hunks as a virtualized list of numbered, coloured, highlighted lines.
 * `n` and `p` move to the next and previous hunk.
 */
export function DiffView({ diff, wholeHint }: Props) {
  const rows = useMemo(() => diffRows(diff.hunks), [diff]);
  const counts = useMemo(() => diffCounts(diff), [diff]);
  const language = useMemo(() => languageOf(diff.path), [diff.path]);
  // Highlighted blocks, kept while this diff shows.
  const blocks = useMemo(() => new Map<number, Segment[][]>(), [rows, language]);
  const hunkRows = useMemo(() => rows.flatMap((r, i) => (r.kind === 'hunk' ? [i] : [])), [rows]);
  const width = useMemo(() => rows.reduce((w, r) => Math.max(w, r.text.length), 0), [rows]);
  const digits = useMemo(() => String(rows.reduce((m, r) => Math.max(m, r.oldNo ?? 0, r.newNo ?? 0), 0)).length, [rows]);
  const scroller = useRef<HTMLDivElement>(null);
  const virtualizer = useVirtualizer({
    count: rows.length,
    getScrollElement: () => scroller.current,
    estimateSize: () => LINE_PX,
    overscan: 30,
    useFlushSync: false,
  });

  // Lines show plain at once and take their colour a block per task once in view: scrolling a
  // long diff never waits on the highlighter, however fast it moves.
  const [, coloured] = useReducer((n: number) => n + 1, 0);
  const items = virtualizer.getVirtualItems();
  const firstBlock = Math.floor((items[0]?.index ?? 0) / BLOCK);
  const lastBlock = Math.floor((items.at(-1)?.index ?? 0) / BLOCK);
  useEffect(() => {
    let block = firstBlock;
    while (block <= lastBlock && blocks.has(block)) block++;
    if (block > lastBlock || rows.length === 0) return;
    const task = setTimeout(() => {
      blocks.set(block, blockSegments(rows, block, language));
      coloured();
    }, 0);
    return () => clearTimeout(task);
  });

  const segmentsAt = (index: number): Segment[] => {
    const row = rows[index]!;
    return blocks.get(Math.floor(index / BLOCK))?.[index % BLOCK] ?? [{ text: row.text, className: '' }];
  };

  const moveHunk = (e: KeyboardEvent) => {
    if (e.key !== 'n' && e.key !== 'p') return;
    const top = virtualizer.getVirtualItems().find((item) => item.start >= virtualizer.scrollOffset!)?.index ?? 0;
    const next = e.key === 'n' ? hunkRows.find((i) => i > top) : hunkRows.findLast((i) => i < top);
    if (next === undefined) return;
    e.preventDefault();
    virtualizer.scrollToIndex(next, { align: 'start' });
  };

  const gutter = `${digits + 1}ch`;
  return (
    <div className="file-diff" data-testid="file-diff" data-path={diff.path} data-status={diff.status}>
      <div className="file-diff-head">
        <span className={`badge status-${diff.status}`}>{diff.status}</span>
        <code className="file-diff-path" title={diff.path}>
          {diff.path}
        </code>
        <span className="diff-counts" data-testid="diff-counts">
          <span className="diff-added">+{counts.added}</span> <span className="diff-removed">-{counts.removed}</span>
        </span>
        {diff.oldMode !== diff.newMode && diff.oldMode !== null && diff.newMode !== null && (
          <span className="muted" data-testid="diff-mode">
            mode {modeText(diff.oldMode)} → {modeText(diff.newMode)}
          </span>
        )}
      </div>
      {(diff.binary || diff.note) && (
        <div className="muted diff-note" data-testid="diff-note">
          {diff.note ?? 'Binary content: not shown line by line.'}
        </div>
      )}
      {rows.length === 0 && !diff.binary && !diff.note && !diff.truncated && <div className="muted diff-note">No line changed.</div>}
      {rows.length > 0 && (
        <div
          ref={scroller}
          className="diff-scroll"
          data-testid="diff-scroll"
          tabIndex={0}
          role="region"
          aria-label={`diff of ${diff.path}: ${counts.added} lines added, ${counts.removed} removed; n and p move between hunks`}
          onKeyDown={moveHunk}
        >
          <div style={{ height: virtualizer.getTotalSize(), position: 'relative', minWidth: `calc(${width + 4}ch + 2 * ${gutter})` }}>
            {items.map((item) => {
              const row = rows[item.index]!;
              return (
                <div
                  key={item.key}
                  className={`diff-line diff-${row.kind}`}
                  data-testid="diff-line"
                  data-kind={row.kind}
                  style={{ transform: `translateY(${item.start}px)`, height: LINE_PX }}
                >
                  <span className="diff-no" style={{ width: gutter }}>
                    {row.oldNo ?? ''}
                  </span>
                  <span className="diff-no" style={{ width: gutter }}>
                    {row.newNo ?? ''}
                  </span>
                  <span className="diff-sign">{SIGN[row.kind]}</span>
                  <span className="diff-text" data-testid="diff-text">
                    {row.kind === 'hunk' || row.kind === 'eof'
                      ? row.text
                      : segmentsAt(item.index).map((s, i) =>
                          s.className ? (
                            <span key={i} className={s.className}>
                              {s.text}
                            </span>
                          ) : (
                            s.text
                          ),
                        )}
                  </span>
                </div>
              );
            })}
          </div>
        </div>
      )}
      {diff.truncated && (
        <div className="muted diff-note" data-testid="diff-truncated">
          The diff stops here: it is longer than the window shows. {wholeHint}
        </div>
      )}
    </div>
  );
}
