import { useEffect, useRef, useState } from 'react';
import type { SessionSummary, TableKind } from '../../electron/contract/appContract.ts';
import { useApi, useConnectionEpoch, useHostEvent } from '../api/ApiContext.tsx';

export type LiveVersions = Readonly<Record<TableKind | 'any', number>>;

const ZERO: LiveVersions = { net: 0, model: 0, tool: 0, file: 0, exec: 0, any: 0 };
/** Live sessions can emit hundreds of events a second; re-read totals at most this often. */
const TOTALS_EVERY_MS = 1000;

/**
 * Subscribes to one session's live events and turns them into counters per table kind: a view
 * re-reads its tail when its counter moves. Totals (sessions.info) are re-read, throttled, and
 * handed to the session store so the header and the list agree.
 */
export function useLiveVersions(sessionId: string, onSummary: (s: SessionSummary) => void): LiveVersions {
  const api = useApi();
  const epoch = useConnectionEpoch();
  const [versions, setVersions] = useState<LiveVersions>(ZERO);
  const totalsTimer = useRef<ReturnType<typeof setTimeout> | null>(null);
  const latestSummary = useRef(onSummary);
  useEffect(() => {
    latestSummary.current = onSummary;
  });

  useEffect(() => {
    if (epoch === 0) return;
    // Ended sessions have nothing to stream; the host may refuse, which is fine.
    api.call('live.subscribe', { id: sessionId }).catch(() => undefined);
  }, [api, sessionId, epoch]);

  useEffect(
    () => () => {
      if (totalsTimer.current) clearTimeout(totalsTimer.current);
    },
    [],
  );

  useHostEvent('session.events', (event) => {
    if (event.id !== sessionId) return;
    setVersions((v) => {
      const next = { ...v, any: v.any + 1 };
      for (const kind of event.kinds) next[kind] += 1;
      return next;
    });
    if (totalsTimer.current) return;
    totalsTimer.current = setTimeout(() => {
      totalsTimer.current = null;
      api.call('sessions.info', { id: sessionId }).then(
        (s) => latestSummary.current(s),
        () => undefined,
      );
    }, TOTALS_EVERY_MS);
  });

  return versions;
}
