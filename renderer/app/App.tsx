import { useCallback, useState } from 'react';
import { SessionTab } from '../session/SessionTab.tsx';
import { SessionList } from '../sessions/SessionList.tsx';
import { useSessionStore } from '../sessions/useSessionStore.ts';
import { ConnectionBanner } from './ConnectionBanner.tsx';
import { TabBar } from './TabBar.tsx';

/**
 * Tabs keyed by session id. Every open tab stays mounted (hidden when not active) so its view,
 * selection, scroll and terminal survive switching tabs.
 */
export function App() {
  const store = useSessionStore();
  const [tabs, setTabs] = useState<readonly string[]>([]);
  const [active, setActive] = useState<string | null>(null);

  const open = useCallback((id: string) => {
    setTabs((current) => (current.includes(id) ? current : [...current, id]));
    setActive(id);
  }, []);

  const close = useCallback((id: string) => {
    setTabs((current) => {
      const index = current.indexOf(id);
      const next = current.filter((t) => t !== id);
      // Closing the active tab moves to its neighbour, as editors do.
      setActive((was) => (was === id ? (next[Math.min(index, next.length - 1)] ?? null) : was));
      return next;
    });
  }, []);

  return (
    <div className="app">
      <ConnectionBanner />
      <TabBar tabs={tabs} active={active} byId={store.byId} onSelect={setActive} onClose={close} />
      <main className="panes">
        <section className="pane" hidden={active !== null}>
          <SessionList store={store} onOpen={open} />
        </section>
        {tabs.map((id) => (
          <section key={id} className="pane" hidden={active !== id} data-testid="session-pane" data-session-id={id}>
            <SessionTab id={id} session={store.byId.get(id) ?? null} visible={active === id} onSummary={store.upsert} />
          </section>
        ))}
      </main>
    </div>
  );
}
