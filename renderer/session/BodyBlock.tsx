import { useState } from 'react';
import type { Body } from '../../electron/contract/appContract.ts';
import { useApi } from '../api/ApiContext.tsx';
import { errorText } from '../api/callError.ts';
import { formatBytes, formatCount } from '../app/format.ts';

/** How much more of a large body one "load more" reads. */
const CHUNK = 256 * 1024;

interface Props {
  readonly sessionId: string;
  readonly eventId: string;
  readonly body: Body;
}

/**
 * One request or response body: the decoded preview the detail carried, and for a body larger
 * than that, the rest read with events.body a chunk at a time when asked (a 50 MB download must
 * not arrive with the click that opened the row).
 */
export function BodyBlock({ sessionId, eventId, body }: Props) {
  const api = useApi();
  // The preview is the start of the same text events.body serves (decoded, JSON already
  // pretty-printed by the host), so reading on from its length continues it.
  const [loaded, setLoaded] = useState<{ text: string; total: number } | null>(null);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const text = loaded?.text ?? body.preview;

  const loadMore = async () => {
    if (text === null) return;
    setBusy(true);
    setError(null);
    try {
      const part = await api.call('events.body', { id: sessionId, eventId, direction: body.direction, offset: text.length, length: CHUNK });
      setLoaded({ text: text.slice(0, part.offset) + part.text, total: part.total });
    } catch (e) {
      setError(errorText(e));
    } finally {
      setBusy(false);
    }
  };

  const complete = loaded ? loaded.text.length >= loaded.total : body.complete;
  return (
    <section className="body-block" data-testid={`body-${body.direction}`}>
      <h4>
        {body.direction} body
        <span className="muted">
          {' '}
          {body.contentType ?? 'no content-type'}
          {body.contentEncoding ? `, ${body.contentEncoding}` : ''}, {formatBytes(body.originalBytes)}
          {body.storedBytes !== body.originalBytes ? ` (${formatBytes(body.storedBytes)} stored)` : ''}
          {body.truncated ? ', truncated at capture' : ''}
        </span>
      </h4>
      {text === null ? <div className="muted">binary body (not shown as text)</div> : <pre className="body-text">{text}</pre>}
      {!complete && text !== null && (
        <div className="load-more">
          <button type="button" onClick={() => void loadMore()} disabled={busy} data-testid={`body-${body.direction}-more`}>
            {busy ? 'Loading…' : 'Load more'}
          </button>
          <span className="muted">
            {loaded
              ? `${formatCount(loaded.text.length)} of ${formatCount(loaded.total)} characters`
              : `first ${formatCount(text.length)} characters`}
          </span>
          {error && <span className="error">{error}</span>}
        </div>
      )}
    </section>
  );
}
