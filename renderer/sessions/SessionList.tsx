import { useMemo, useState, type ReactNode } from 'react';
import { NewSessionForm } from './NewSessionForm.tsx';
import { SessionFilter } from './SessionFilter.tsx';
import { SessionTable } from './SessionTable.tsx';
import type { SessionStore } from './useSessionStore.ts';

/** The home tab: filter, new session (and the app's other list actions, e.g. Import…), and the table of every session. */
export function SessionList({
  store,
  onOpen,
  actions,
}: {
  readonly store: SessionStore;
  readonly onOpen: (id: string) => void;
  readonly actions?: ReactNode;
}) {
  const [filter, setFilter] = useState('');
  const shown = useMemo(() => {
    const needle = filter.trim().toLowerCase();
    if (!needle) return store.sessions;
    return store.sessions.filter((s) => s.id.includes(needle) || (s.name ?? '').toLowerCase().includes(needle));
  }, [store.sessions, filter]);

  return (
    <div className="session-list">
      <div className="toolbar">
        <SessionFilter value={filter} onChange={setFilter} matches={shown} onOpen={onOpen} />
        <span className="muted count">
          {shown.length === store.sessions.length ? `${store.sessions.length} sessions` : `${shown.length} of ${store.sessions.length}`}
        </span>
        <span className="spacer" />
        {actions}
        <NewSessionForm onStarted={onOpen} />
      </div>
      {store.error && (
        <div className="error" role="alert">
          {store.error}
        </div>
      )}
      {!store.loaded && !store.error && <div className="muted pad">Loading sessions…</div>}
      {store.loaded && store.sessions.length === 0 && <div className="muted pad">No sessions yet. Start one with “New session”.</div>}
      {shown.length > 0 && <SessionTable sessions={shown} onOpen={onOpen} />}
    </div>
  );
}
