import type { SessionSummary } from '../../electron/contract/appContract.ts';
import { tabTitles } from './tabTitles.ts';

interface Props {
  readonly tabs: readonly string[];
  readonly active: string | null;
  readonly byId: ReadonlyMap<string, SessionSummary>;
  readonly onSelect: (id: string | null) => void;
  readonly onClose: (id: string) => void;
}

/** The list tab (fixed, first) and one closable tab per open session id. */
export function TabBar({ tabs, active, byId, onSelect, onClose }: Props) {
  const titles = tabTitles(tabs, byId);
  return (
    <nav className="tabs" role="tablist">
      <button type="button" role="tab" aria-selected={active === null} className={active === null ? 'tab active' : 'tab'} data-testid="tab-list" onClick={() => onSelect(null)}>
        Sessions
      </button>
      {tabs.map((id) => {
        const session = byId.get(id);
        return (
          <div
            key={id}
            role="tab"
            tabIndex={0}
            aria-selected={active === id}
            className={active === id ? 'tab active' : 'tab'}
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
    </nav>
  );
}
