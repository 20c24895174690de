import { useEffect, useState } from 'react';
import type { ChangeTarget, FileDiff } from '../../../electron/contract/appContract.ts';
import { useApi, useConnectionEpoch } from '../../api/ApiContext.tsx';
import { errorText } from '../../api/callError.ts';

/** The diff of a target (sessions.diff), read again when `reloads` moves (a revert changed the workspace). */
export function useDiff(
  sessionId: string,
  target: ChangeTarget | null,
  reloads: number,
): { diffs: FileDiff[] | null; error: string | null } {
  const api = useApi();
  const epoch = useConnectionEpoch();
  const [diffs, setDiffs] = useState<FileDiff[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const key = JSON.stringify(target);
  useEffect(() => {
    setDiffs(null);
    setError(null);
    if (target === null || epoch === 0) return;
    let cancelled = false;
    api.call('sessions.diff', { id: sessionId, target }).then(
      (d) => !cancelled && setDiffs(d),
      (e: unknown) => !cancelled && setError(errorText(e)),
    );
    return () => {
      cancelled = true;
    };
    // The target is compared by value: callers build a new object each render.
  }, [api, sessionId, key, reloads, epoch]);
  return { diffs, error };
}
