import { useState } from 'react';
import type { SearchHit, TableKind } from '../../electron/contract/appContract.ts';
import { useApi } from '../api/ApiContext.tsx';
import { errorText } from '../api/callError.ts';
import { formatTime } from '../app/format.ts';

/** Search across the whole session (sessions.search); a hit jumps to its row in its view. */
export function SessionSearch({
  sessionId,
  onJump,
}: {
  readonly sessionId: string;
  readonly onJump: (kind: TableKind, seq: number) => void;
}) {
  const api = useApi();
  const [query, setQuery] = useState('');
  const [hits, setHits] = useState<readonly SearchHit[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  const search = async () => {
    const q = query.trim();
    if (!q) return;
    setBusy(true);
    setError(null);
    setHidden(false);
    try {
      setHits(await api.call('sessions.search', { id: sessionId, query: q }));
    } catch (e) {
      setHits(null);
      setError(errorText(e));
    } finally {
      setBusy(false);
    }
  };

  const [hidden, setHidden] = useState(false);
  const open = !hidden && (hits !== null || error !== null);
  return (
    <div className="search">
      <input
        type="search"
        className="filter"
        data-testid="session-search"
        placeholder="Search this session (Enter)"
        spellCheck={false}
        value={query}
        onChange={(e) => setQuery(e.target.value)}
        onFocus={() => setHidden(false)}
        onKeyDown={(e) => {
          if (e.key === 'Enter') void search();
          if (e.key === 'Escape') {
            setHits(null);
            setError(null);
          }
        }}
      />
      {open && (
        <div className="search-results" data-testid="search-results">
          <div className="search-head muted">
            {busy ? 'searching…' : error ? <span className="error">{error}</span> : `${hits?.length ?? 0} hits`}
            <span className="spacer" />
            <button
              type="button"
              className="link"
              onClick={() => {
                setHits(null);
                setError(null);
              }}
            >
              close
            </button>
          </div>
          {hits?.map((hit) => (
            <button
              key={`${hit.kind}-${hit.seq}`}
              type="button"
              className="search-hit"
              data-testid="search-hit"
              data-kind={hit.kind}
              data-seq={hit.seq}
              onClick={() => {
                // The row is the answer: get the list out of its way (focusing the box brings it back).
                setHidden(true);
                onJump(hit.kind, hit.seq);
              }}
            >
              <span className="badge">{hit.kind}</span>
              <span className="muted mono">{formatTime(hit.at)}</span>
              <span className="snippet">{hit.snippet}</span>
            </button>
          ))}
        </div>
      )}
    </div>
  );
}
