import { useCallback, useEffect, useMemo, useState } from 'react';
import type { SessionSummary } from '../../electron/contract/appContract.ts';
import { useApi, useConnectionEpoch, useHostEvent } from '../api/ApiContext.tsx';
import { errorText } from '../api/callError.ts';

export interface SessionStore {
  readonly sessions: readonly SessionSummary[];
  readonly byId: ReadonlyMap<string, SessionSummary>;
  readonly loaded: boolean;
  readonly error: string | null;
  /** Puts a fresher summary in (from sessions.info or a call's result). */
  readonly upsert: (session: SessionSummary) => void;
}

/**
 * Every session the list knows, kept current: one sessions.list per (re)connection, then
 * `session.changed` events (subscribed with live.subscribe(null)) replace rows by id.
 */
export function useSessionStore(): SessionStore {
  const api = useApi();
  const epoch = useConnectionEpoch();
  const [byId, setById] = useState<ReadonlyMap<string, SessionSummary>>(new Map());
  const [loaded, setLoaded] = useState(false);
  const [error, setError] = useState<string | null>(null);

  const upsert = useCallback((session: SessionSummary) => {
    setById((previous) => new Map(previous).set(session.id, session));
  }, []);

  useEffect(() => {
    if (epoch === 0) return;
    let cancelled = false;
    api.call('live.subscribe', { id: null }).catch((e: unknown) => !cancelled && setError(errorText(e)));
    api.call('sessions.list', {}).then(
      (list) => {
        if (cancelled) return;
        setById(new Map(list.map((s) => [s.id, s])));
        setLoaded(true);
        setError(null);
      },
      (e: unknown) => !cancelled && setError(errorText(e)),
    );
    return () => {
      cancelled = true;
    };
  }, [api, epoch]);

  useHostEvent('session.changed', ({ session }) => upsert(session));
  // A start's progress between the list's rounds; its end comes as session.changed.
  useHostEvent('session.starting', ({ id, state, progress }) => {
    setById((previous) => {
      const session = previous.get(id);
      if (!session) return previous;
      return new Map(previous).set(id, { ...session, starting: state === 'progress' ? progress : null });
    });
  });

  const sessions = useMemo(() => [...byId.values()], [byId]);
  return { sessions, byId, loaded, error, upsert };
}
