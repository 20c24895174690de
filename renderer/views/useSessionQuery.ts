import { useEffect, useState } from 'react';
import { useConnectionEpoch } from '../api/ApiContext.tsx';
import { errorText } from '../api/callError.ts';

/**
 * A per-session figure (timeline, cost) loaded once and again when new events land; the old
 * value stays on screen while the new one loads, so a live chart does not blink.
 */
export function useSessionQuery<T>(load: () => Promise<T>, deps: readonly unknown[]): { value: T | null; error: string | null } {
  const epoch = useConnectionEpoch();
  const [value, setValue] = useState<T | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    if (epoch === 0) return;
    let cancelled = false;
    load().then(
      (v) => {
        if (cancelled) return;
        setValue(v);
        setError(null);
      },
      (e: unknown) => !cancelled && setError(errorText(e)),
    );
    return () => {
      cancelled = true;
    };
    // `load` is a fresh closure each render; `deps` says what it depends on.
  }, [epoch, ...deps]);
  return { value, error };
}
