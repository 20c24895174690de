import { useCallback, useEffect, useState } from 'react';
import type { RevertResult, WorkspaceChange } from '../../../electron/contract/appContract.ts';
import { formatCount, formatDateTime } from '../../app/format.ts';
import type { Focus } from '../../session/EventTable.tsx';
import { ChangeList } from './ChangeList.tsx';
import { ChangePane } from './ChangePane.tsx';
import { RevertReport } from './RevertAction.tsx';
import { SessionDiffPane } from './SessionDiffPane.tsx';
import { useChangePages, type ChangeQuery } from './useChangePages.ts';

interface Props {
  readonly sessionId: string;
  readonly sessionName: string;
  readonly visible: boolean;
  readonly liveVersion: number;
  /** A change asked for from elsewhere (a turn's file in the Conversation, a search hit). */
  readonly focus: Focus | null;
}

const ALL: ChangeQuery = { turn: null, path: null };

/**
 * The Files view: what happened to the workspace. Each change in order, grouped by the turn that
 * made it and narrowed to a turn or a file; the chosen change as a diff; the whole session as
 * `git diff` shows it; Revert for a change, a file or a turn onwards, with what it did.
 */
export function ChangesView({ sessionId, sessionName, visible, liveVersion, focus }: Props) {
  const [mode, setMode] = useState<'changes' | 'session'>('changes');
  const [query, setQuery] = useState<ChangeQuery>(ALL);
  const [turnInput, setTurnInput] = useState('');
  const [reloads, setReloads] = useState(0);
  const pages = useChangePages(sessionId, query, liveVersion, reloads);
  const [selected, setSelected] = useState<{ change: WorkspaceChange | null; seq: number; index: number } | null>(null);
  const [reveal, setReveal] = useState<{ index: number; nonce: number } | null>(null);
  const [pending, setPending] = useState<Focus | null>(null);
  const [report, setReport] = useState<{ result: RevertResult; what: string } | null>(null);

  const narrow = useCallback((next: ChangeQuery) => {
    setQuery(next);
    setTurnInput(next.turn === null ? '' : String(next.turn + 1));
    setMode('changes');
  }, []);
  const byPath = useCallback((path: string) => narrow({ turn: null, path }), [narrow]);
  const byTurn = useCallback((turn: number) => narrow({ turn, path: null }), [narrow]);
  const select = useCallback((change: WorkspaceChange, index: number) => setSelected({ change, seq: change.seq, index }), []);

  // A change asked for from elsewhere: every change shows, then the list finds it and scrolls there.
  useEffect(() => {
    if (!focus) return;
    narrow(ALL);
    setSelected({ change: null, seq: focus.seq, index: -1 });
    setPending(focus);
  }, [focus, narrow]);
  const { findOffset, rowAt } = pages;
  const everything = query.turn === null && query.path === null;
  useEffect(() => {
    if (!pending || !everything) return;
    let cancelled = false;
    void findOffset(pending.seq).then((index) => {
      if (cancelled) return;
      setPending(null);
      if (index === null) return;
      setSelected({ change: rowAt(index) ?? null, seq: pending.seq, index });
      setReveal({ index, nonce: pending.nonce });
    });
    return () => {
      cancelled = true;
    };
  }, [pending, everything, findOffset, rowAt]);
  // The chosen change's row arrives with its page.
  const shown = selected && (selected.change ?? (selected.index >= 0 ? (rowAt(selected.index) ?? null) : null));

  const reverted = useCallback((result: RevertResult, what: string) => {
    setReport({ result, what });
    setReloads((n) => n + 1);
  }, []);

  const applyTurn = (text: string) => {
    setTurnInput(text);
    const n = Number.parseInt(text, 10);
    setQuery((q) => ({ ...q, turn: Number.isInteger(n) && n >= 1 ? n - 1 : null }));
  };

  return (
    <div className="changes-view" data-testid="changes">
      <div className="toolbar">
        <div className="segmented" role="tablist" aria-label="Files view">
          <button
            type="button"
            role="tab"
            aria-selected={mode === 'changes'}
            data-testid="changes-mode-list"
            onClick={() => setMode('changes')}
          >
            Changes
          </button>
          <button
            type="button"
            role="tab"
            aria-selected={mode === 'session'}
            data-testid="changes-mode-session"
            onClick={() => setMode('session')}
          >
            Whole session
          </button>
        </div>
        {mode === 'changes' && (
          <>
            <input
              className="filter turn-filter"
              type="number"
              min={1}
              data-testid="changes-turn"
              aria-label="only the changes of turn"
              placeholder="turn"
              value={turnInput}
              onChange={(e) => applyTurn(e.target.value)}
            />
            {query.path !== null && (
              <span className="chip" data-testid="changes-path-chip">
                <code>{query.path}</code>
                <button
                  type="button"
                  className="link"
                  aria-label={`show every file, not only ${query.path}`}
                  onClick={() => setQuery((q) => ({ ...q, path: null }))}
                >
                  ×
                </button>
              </span>
            )}
            <span className="muted count" data-testid="file-count">
              {pages.total === null ? 'loading…' : `${formatCount(pages.total)} ${pages.total === 1 ? 'change' : 'changes'}`}
            </span>
          </>
        )}
        <span className="spacer" />
        {pages.baseline !== undefined && (
          <span className="muted" data-testid="changes-baseline">
            {pages.baseline
              ? `baseline: ${formatCount(pages.baseline.files)} files at ${formatDateTime(pages.baseline.at)}`
              : 'no baseline recorded'}
          </span>
        )}
        {pages.error && <span className="error">{pages.error}</span>}
      </div>
      {report && <RevertReport result={report.result} what={report.what} onClose={() => setReport(null)} />}
      {mode === 'changes' ? (
        <div className={shown ? 'split with-detail' : 'split'}>
          <div className="table-side">
            <ChangeList
              pages={pages}
              selectedSeq={selected?.seq ?? null}
              selectedIndex={selected?.index ?? -1}
              reveal={reveal}
              visible={visible}
              onSelect={select}
              onPath={byPath}
              onTurn={byTurn}
            />
            {pages.total === 0 && <div className="muted pad">{everything ? 'No workspace changes recorded.' : 'No change matches.'}</div>}
          </div>
          {shown && (
            <ChangePane
              sessionId={sessionId}
              sessionName={sessionName}
              change={shown}
              reloads={reloads}
              onReverted={reverted}
              onClose={() => setSelected(null)}
            />
          )}
        </div>
      ) : (
        <SessionDiffPane
          sessionId={sessionId}
          sessionName={sessionName}
          baseline={pages.baseline}
          reloads={reloads}
          onReverted={reverted}
        />
      )}
    </div>
  );
}
