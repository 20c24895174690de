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

interface Props {
  readonly session: SessionSummary | null;
  readonly sessionId: string;
  /** The session runs again (after Resume): the tab reattaches its terminal and shows it. */
  readonly onResumed: () => void;
  readonly onSummary: (session: SessionSummary) => void;
}

/**
 * Export (an archive to import elsewhere, HAR for devtools, or JSONL; the result names the file),
 * Stop for a running session, and Resume for an ended one that was kept for resuming (a named VM
 * session): it boots again under the same id, in this same tab.
 */
export function SessionActions({ session, sessionId, onResumed, onSummary }: Props) {
  const api = useApi();
  const [exported, setExported] = useState<string | null>(null);
  const [busy, setBusy] = useState<'export' | 'stop' | 'resume' | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [format, setFormat] = useState<ExportFormat>('archive');

  const run = async (what: 'export' | 'stop' | 'resume') => {
    setBusy(what);
    setError(null);
    try {
      if (what === 'export') {
        const result = await api.call('sessions.export', { id: sessionId, format });
        setExported(`${result.path} (${formatBytes(result.bytes)})`);
      } else if (what === 'resume') {
        await api.call('sessions.resume', { id: sessionId });
        // The header and list show it running now, not at the live watch's next round.
        const summary = await api.call('sessions.info', { id: sessionId }).catch(() => null);
        if (summary) onSummary(summary);
        onResumed();
      } else await api.call('sessions.stop', { id: sessionId });
    } catch (e) {
      setError(errorText(e));
    } finally {
      setBusy(null);
    }
  };

  const resumable = session !== null && session.resumable && !session.live && session.status !== 'running';
  return (
    <div className="actions">
      {resumable && (
        <button
          type="button"
          className="primary"
          data-testid="resume"
          disabled={busy !== null}
          title="Boot this session again on its own disk and session.db"
          onClick={() => void run('resume')}
        >
          {busy === 'resume' ? 'Resuming…' : 'Resume'}
        </button>
      )}
      {session?.status === 'running' && (
        <button type="button" className="danger" data-testid="stop" disabled={busy !== null} onClick={() => void run('stop')}>
          {busy === 'stop' ? 'Stopping…' : 'Stop'}
        </button>
      )}
      <select
        data-testid="export-format"
        aria-label="Export format"
        value={format}
        onChange={(e) => setFormat(e.target.value as ExportFormat)}
      >
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
      {error && (
        <span className="error" role="alert" data-testid="action-error">
          {error}
        </span>
      )}
    </div>
  );
}
