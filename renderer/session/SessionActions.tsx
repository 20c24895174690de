import { useState } from 'react';
import type { SessionSummary } from '../../electron/contract/appContract.ts';
import { useApi } from '../api/ApiContext.tsx';
import { errorText } from '../api/callError.ts';
import { formatBytes } from '../app/format.ts';

/** Export (JSONL for now; the result names the written file) and Stop for a running session. */
export function SessionActions({ session, sessionId }: { readonly session: SessionSummary | null; readonly sessionId: string }) {
  const api = useApi();
  const [exported, setExported] = useState<string | null>(null);
  const [busy, setBusy] = useState<'export' | 'stop' | null>(null);
  const [error, setError] = useState<string | null>(null);

  const run = async (what: 'export' | 'stop') => {
    setBusy(what);
    setError(null);
    try {
      if (what === 'export') {
        const result = await api.call('sessions.export', { id: sessionId, format: 'jsonl' });
        setExported(`${result.path} (${formatBytes(result.bytes)})`);
      } else await api.call('sessions.stop', { id: sessionId });
    } catch (e) {
      setError(errorText(e));
    } finally {
      setBusy(null);
    }
  };

  return (
    <div className="actions">
      {session?.status === 'running' && (
        <button type="button" className="danger" data-testid="stop" disabled={busy !== null} onClick={() => void run('stop')}>
          {busy === 'stop' ? 'Stopping…' : 'Stop'}
        </button>
      )}
      <button type="button" data-testid="export" disabled={busy !== null} onClick={() => void run('export')}>
        {busy === 'export' ? 'Exporting…' : 'Export JSONL'}
      </button>
      {exported && (
        <span className="export-result" data-testid="export-result" title={exported}>
          wrote <code>{exported}</code>
        </span>
      )}
      {error && <span className="error" role="alert">{error}</span>}
    </div>
  );
}
