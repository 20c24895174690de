import { lazy, Suspense, useCallback, useMemo, useState } from 'react';
import type { SessionSummary, TableKind } from '../../electron/contract/appContract.ts';
import { CostView } from '../views/CostView.tsx';
import { TimelineView } from '../views/TimelineView.tsx';
import { VIEW_COLUMNS, type CellContext } from './columns.tsx';
import { EventTable, type Focus } from './EventTable.tsx';
import { SessionActions } from './SessionActions.tsx';
import { SessionHeader } from './SessionHeader.tsx';
import { SessionSearch } from './SessionSearch.tsx';
import { useLiveVersions } from './useLiveVersions.ts';
import { VIEWS, viewOfKind, type View } from './views.ts';

// xterm.js is most of the bundle; loading it with the first terminal keeps the list's first paint quick.
const TerminalView = lazy(() => import('./TerminalView.tsx').then((m) => ({ default: m.TerminalView })));

interface Props {
  readonly id: string;
  readonly session: SessionSummary | null;
  /** The tab is the active one (it stays mounted while hidden). */
  readonly visible: boolean;
  readonly onSummary: (session: SessionSummary) => void;
}

/**
 * One session's tab. Views mount the first time they are shown and then stay mounted (hidden),
 * so each keeps its rows, selection, scroll and terminal while the person looks elsewhere.
 */
export function SessionTab({ id, session, visible, onSummary }: Props) {
  // A session that runs (or is starting) opens on its terminal; an ended one on what it recorded.
  const [view, setView] = useState<View>(session && session.status !== 'running' && session.onDisk ? 'network' : 'terminal');
  const [shown, setShown] = useState<ReadonlySet<View>>(() => new Set([view]));
  const [focus, setFocus] = useState<Partial<Record<TableKind, Focus>>>({});
  // Each resume attaches a fresh terminal (the old one showed the previous run ending).
  const [runs, setRuns] = useState(0);
  const live = useLiveVersions(id, onSummary);

  const show = useCallback((next: View) => {
    setView(next);
    setShown((s) => (s.has(next) ? s : new Set(s).add(next)));
  }, []);

  const jump = useCallback(
    (kind: TableKind, seq: number) => {
      show(viewOfKind(kind));
      setFocus((f) => ({ ...f, [kind]: { seq, nonce: (f[kind]?.nonce ?? 0) + 1 } }));
    },
    [show],
  );
  const context = useMemo<CellContext>(() => ({ jump }), [jump]);

  const resumed = useCallback(() => {
    setRuns((n) => n + 1);
    show('terminal');
  }, [show]);

  return (
    <div className="session-tab">
      <div className="toolbar session-toolbar">
        <SessionHeader id={id} session={session} />
        <span className="spacer" />
        <SessionSearch sessionId={id} onJump={jump} />
        <SessionActions sessionId={id} session={session} onResumed={resumed} onSummary={onSummary} />
      </div>
      <div className="view-switcher" role="tablist">
        {VIEWS.map((v) => (
          <button
            key={v.view}
            type="button"
            role="tab"
            aria-selected={view === v.view}
            className={view === v.view ? 'view-tab active' : 'view-tab'}
            data-testid={`view-${v.view}`}
            onClick={() => show(v.view)}
          >
            {v.label}
          </button>
        ))}
      </div>
      <div className="view-area">
        {VIEWS.filter((v) => shown.has(v.view)).map((v) => {
          const active = visible && view === v.view;
          return (
            <div key={v.view} className="view" hidden={view !== v.view} data-view={v.view}>
              {v.view === 'terminal' && (
                <Suspense fallback={<div className="muted pad">Loading terminal…</div>}>
                  <TerminalView key={runs} sessionId={id} visible={active} starting={session?.starting ?? null} />
                </Suspense>
              )}
              {v.view === 'timeline' && (
                <TimelineView
                  sessionId={id}
                  liveVersion={live.any}
                  live={session?.status === 'running'}
                  onOpenTurn={(seq, kind) => jump(kind, seq)}
                  onJump={jump}
                />
              )}
              {v.view === 'cost' && <CostView sessionId={id} liveVersion={live.model} />}
              {v.kind !== null && (
                <EventTable
                  sessionId={id}
                  kind={v.kind}
                  columns={VIEW_COLUMNS[v.kind]}
                  visible={active}
                  liveVersion={live[v.kind]}
                  focus={focus[v.kind] ?? null}
                  context={context}
                />
              )}
            </div>
          );
        })}
      </div>
    </div>
  );
}
