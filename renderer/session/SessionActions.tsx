import { useState } from 'react';
import type { SessionSummary } from '../../electron/contract/appContract.ts';
import { useApi } from '../api/ApiContext.tsx';
import { errorText } from '../api/callError.ts';
import { formatBytes } from '../app/format.ts';

type ExportFormat = 'archive' | 'har' | 'jsonl';
const EXPORT_FORMATS: readonly { readonly value: ExportFormat; readonly label: string }[] = [
  { value: 'archive', label: 'Archive (.capsem)' },
  { value: 'har', label: 'HAR 1.2' },
  { value: 'jsonl', label: 'JSONL events' },
];

/** Export (an archive to import elsewhere, HAR for devtools, or JSONL; the result names the file) and Stop for a running session. */
export function SessionActions({ session, sessionId }: { readonly session: SessionSummary | null; readonly sessionId: string }) {
  const api = useApi();
  const [exported, setExported] = useState<string | null>(null);
  const [busy, setBusy] = useState<'export' | 'stop' | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [format, setFormat] = useState<ExportFormat>('archive');

  const run = async (what: 'export' | 'stop') => {
    setBusy(what);
    setError(null);
    try {
      if (what === 'export') {
        const result = await api.call('sessions.export', { id: sessionId, format });
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
      <select data-testid="export-format" aria-label="Export format" value={format} onChange={(e) => setFormat(e.target.value as ExportFormat)}>
        {EXPORT_FORMATS.map((f) => (
          <option key={f.value} value={f.value}>
            {f.label}
          </option>
        ))}
      </select>
      <button type="button" data-testid="export" disabled={busy !== null} onClick={() => void run('export')}>
        {busy === 'export' ? 'Exporting…' : 'Export'}
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
