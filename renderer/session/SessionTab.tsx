import { lazy, Suspense, useCallback, useMemo, useState } from 'react';
import type { SessionSummary, TableKind } from '../../electron/contract/appContract.ts';
import { ConversationView, type TurnFocus } from '../views/ConversationView.tsx';
import { CostView } from '../views/CostView.tsx';
import { ChangesView } from '../views/changes/ChangesView.tsx';
import { TimelineView } from '../views/TimelineView.tsx';
import { VIEW_COLUMNS, type CellContext } from './columns.tsx';
import { EventTable, type Focus } from './EventTable.tsx';
import { SessionActions } from './SessionActions.tsx';
import { SessionHeader } from './SessionHeader.tsx';
import { SessionSearch } from './SessionSearch.tsx';
import { useLiveVersions } from './useLiveVersions.ts';
import { firstView, VIEWS, viewOfKind, type View } from './views.ts';

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
  const [view, setView] = useState<View>(() => firstView(session));
  const [shown, setShown] = useState<ReadonlySet<View>>(() => new Set([view]));
  const [focus, setFocus] = useState<Partial<Record<TableKind, Focus>>>({});
  const [turnFocus, setTurnFocus] = useState<TurnFocus | null>(null);
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

  /** Opens the Conversation at the turn holding an event: a timeline seq (kind null), or a model or tool row's seq. */
  const openTurn = useCallback(
    (seq: number, kind: TurnFocus['kind'] = null) => {
      show('conversation');
      setTurnFocus((f) => ({ seq, kind, nonce: (f?.nonce ?? 0) + 1 }));
    },
    [show],
  );
  // A search hit in a model call or a tool call is a moment of the story: its turn shows it.
  const searchJump = useCallback(
    (kind: TableKind, seq: number) => (kind === 'model' || kind === 'tool' ? openTurn(seq, kind) : jump(kind, seq)),
    [openTurn, jump],
  );

  const resumed = useCallback(() => {
    setRuns((n) => n + 1);
    show('terminal');
  }, [show]);

  return (
    <div className="session-tab">
      <div className="toolbar session-toolbar">
        <SessionHeader id={id} session={session} />
        <span className="spacer" />
        <SessionSearch sessionId={id} onJump={searchJump} />
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
              {v.view === 'conversation' && (
                <ConversationView
                  sessionId={id}
                  visible={active}
                  liveVersion={live.model + live.tool + live.file}
                  focus={turnFocus}
                  onJump={jump}
                />
              )}
              {v.view === 'timeline' && (
                <TimelineView
                  sessionId={id}
                  liveVersion={live.any}
                  live={session?.status === 'running'}
                  onOpenTurn={(seq) => openTurn(seq)}
                  onJump={jump}
                />
              )}
              {v.view === 'cost' && <CostView sessionId={id} liveVersion={live.model} />}
              {v.view === 'files' && (
                <ChangesView
                  sessionId={id}
                  sessionName={session?.name ?? id}
                  visible={active}
                  liveVersion={live.file}
                  focus={focus.file ?? null}
                />
              )}
              {v.kind !== null && v.view !== 'files' && (
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
