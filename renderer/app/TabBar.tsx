import type { SessionSummary } from '../../electron/contract/appContract.ts';
import { tabTitles } from './tabTitles.ts';

interface Props {
  readonly tabs: readonly string[];
  readonly active: string | null;
  readonly byId: ReadonlyMap<string, SessionSummary>;
  readonly onSelect: (id: string | null) => void;
  readonly onClose: (id: string) => void;
  /** Settings is shown in place of every tab while open. */
  readonly settingsOpen: boolean;
  readonly onSettings: () => void;
}

/** The list tab (fixed, first), one closable tab per open session id, and Settings (last). */
export function TabBar({ tabs, active, byId, onSelect, onClose, settingsOpen, onSettings }: Props) {
  const titles = tabTitles(tabs, byId);
  return (
    <nav className="tabs" role="tablist">
      <button
        type="button"
        role="tab"
        aria-selected={!settingsOpen && active === null}
        className={!settingsOpen && active === null ? 'tab active' : 'tab'}
        data-testid="tab-list"
        onClick={() => onSelect(null)}
      >
        Sessions
      </button>
      {tabs.map((id) => {
        const session = byId.get(id);
        return (
          <div
            key={id}
            role="tab"
            tabIndex={0}
            aria-selected={!settingsOpen && active === id}
            className={!settingsOpen && active === id ? 'tab active' : 'tab'}
            data-testid="tab"
            data-session-id={id}
            title={id}
            onClick={() => onSelect(id)}
            onKeyDown={(e) => e.key === 'Enter' && onSelect(id)}
            onAuxClick={(e) => e.button === 1 && onClose(id)}
          >
            {session && <span className={`dot status-${session.status}`} />}
            <span className="tab-title">{titles.get(id)}</span>
            <button
              type="button"
              className="tab-close"
              aria-label="close tab"
              data-testid="tab-close"
              onClick={(e) => {
                e.stopPropagation();
                onClose(id);
              }}
            >
              ×
            </button>
          </div>
        );
      })}
      <button
        type="button"
        role="tab"
        aria-selected={settingsOpen}
        className={settingsOpen ? 'tab active tab-settings' : 'tab tab-settings'}
        data-testid="tab-settings"
        onClick={onSettings}
      >
        Settings
      </button>
    </nav>
  );
}
