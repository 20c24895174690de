import { useCallback, useRef, useState } from 'react';
import type { CallError } from '../../electron/contract/appContract.ts';
import { useApi, useHostEvent } from '../api/ApiContext.tsx';
import { toCallError } from '../api/callError.ts';
import { SessionTab } from '../session/SessionTab.tsx';
import { ResolveProblem } from '../sessions/ResolveProblem.tsx';
import { SessionList } from '../sessions/SessionList.tsx';
import { useSessionStore } from '../sessions/useSessionStore.ts';
import { ConnectionBanner } from './ConnectionBanner.tsx';
import { DropOverlay, ImportBar, ImportButton, useFileImport } from './ImportDrop.tsx';
import { ExportSettings } from '../settings/ExportSettings.tsx';
import { KeysSettings } from '../settings/KeysSettings.tsx';
import { StartSettings } from '../settings/StartSettings.tsx';
import { TabBar } from './TabBar.tsx';

/**
 * Tabs keyed by session id. Every open tab stays mounted (hidden when not active) so its view,
 * selection, scroll and terminal survive switching tabs.
 */
export function App() {
  const api = useApi();
  const store = useSessionStore();
  const [tabs, setTabs] = useState<readonly string[]>([]);
  const [active, setActiveTab] = useState<string | null>(null);
  const [settingsOpen, setSettingsOpen] = useState(false);
  const setActive = useCallback((id: string | null | ((was: string | null) => string | null)) => {
    setSettingsOpen(false);
    setActiveTab(id);
  }, []);

  const open = useCallback(
    (id: string) => {
      setTabs((current) => (current.includes(id) ? current : [...current, id]));
      setActive(id);
    },
    [setActive],
  );

  const close = useCallback((id: string) => {
    setTabs((current) => {
      const index = current.indexOf(id);
      const next = current.filter((t) => t !== id);
      // Closing the active tab moves to its neighbour, as editors do.
      setActiveTab((was) => (was === id ? (next[Math.min(index, next.length - 1)] ?? null) : was));
      return next;
    });
  }, []);

  // A launch asked to show a session (`capsem open <name>`, a capsem://session/ link): the query is
  // resolved by the host's one resolver; a name it cannot pin to one session shows why, with the
  // candidates to pick from. Only the latest request counts if several arrive at once.
  const [openProblem, setOpenProblem] = useState<{ readonly query: string; readonly error: CallError } | null>(null);
  const latestOpen = useRef(0);
  useHostEvent('app.open', ({ query }) => {
    const request = ++latestOpen.current;
    api.call('sessions.resolve', { query }).then(
      ({ id }) => {
        if (request !== latestOpen.current) return;
        setOpenProblem(null);
        open(id);
      },
      (e: unknown) => {
        if (request !== latestOpen.current) return;
        setOpenProblem({ query, error: toCallError(e) });
      },
    );
  });
  const openCandidate = useCallback(
    (id: string) => {
      setOpenProblem(null);
      open(id);
    },
    [open],
  );

  // A dropped or picked file becomes a new read-only session, opened in its tab.
  const imports = useFileImport(open, store.upsert);

  return (
    <div className="app">
      <ConnectionBanner />
      <DropOverlay onFiles={imports.importFiles} />
      <ImportBar state={imports} />
      {openProblem && (
        <div className="open-problem" data-testid="open-problem" data-query={openProblem.query}>
          <strong>Could not open “{openProblem.query}”:</strong>
          <ResolveProblem problem={openProblem.error} onOpen={openCandidate} testIdPrefix="open" onDismiss={() => setOpenProblem(null)} />
        </div>
      )}
      <TabBar
        tabs={tabs}
        active={active}
        byId={store.byId}
        onSelect={setActive}
        onClose={close}
        settingsOpen={settingsOpen}
        onSettings={() => setSettingsOpen(true)}
      />
      <main className="panes">
        <section className="pane settings-pane" hidden={!settingsOpen} data-testid="settings-pane">
          {settingsOpen && (
            <>
              <StartSettings />
              <KeysSettings />
              <ExportSettings />
            </>
          )}
        </section>
        <section className="pane" hidden={settingsOpen || active !== null}>
          <SessionList store={store} onOpen={open} actions={<ImportButton busy={imports.busy !== null} onFiles={imports.importFiles} />} />
        </section>
        {tabs.map((id) => (
          <section key={id} className="pane" hidden={settingsOpen || active !== id} data-testid="session-pane" data-session-id={id}>
            <SessionTab id={id} session={store.byId.get(id) ?? null} visible={active === id} onSummary={store.upsert} />
          </section>
        ))}
      </main>
    </div>
  );
}
