import { useCallback, useEffect, useState } from 'react';
import type { CallParams, CallResult } from '../../electron/contract/appContract.ts';
import { useApi } from '../api/ApiContext.tsx';
import { errorText } from '../api/callError.ts';

type Export = CallResult<'otel.get'>;
type Status = NonNullable<Export['status']>;

/** How often the status lines are read again while Settings is open: spans leave the queue as they are sent. */
const STATUS_REFRESH_MS = 5_000;

const spans = (n: number): string => `${n} span${n === 1 ? '' : 's'}`;
const requests = (n: number): string => `${n} request${n === 1 ? '' : 's'}`;

function StatusLines({ url, status }: { url: string; status: Status }) {
  return (
    <div className="export-status" data-testid="export-status">
      <p data-testid="export-url">Sending to {url}</p>
      <p data-testid="export-sent">
        Sent: {spans(status.sentSpans)} in {requests(status.sentRequests)}
      </p>
      <p data-testid="export-queued">
        Queued: {spans(status.queuedSpans)} in {requests(status.queuedRequests)}
      </p>
      <p data-testid="export-dropped">Dropped: {spans(status.droppedSpans)}</p>
      {status.lastDrops.length > 0 && (
        <ul data-testid="export-drops">
          {status.lastDrops.map((d, i) => (
            <li key={i}>
              {d.at}: {spans(d.spans)} of {d.sessionId}, {d.reason}
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}

/**
 * Settings → Export (OpenTelemetry): where sessions go as traces, the headers sent with them (an
 * API key: typed once, then shown by name only, like provider keys), and whether message contents
 * go too; under it, what was sent, is queued and was dropped. CAPSEM_OTLP_ENDPOINT in the app's
 * environment overrides all of it for the run, and the fields are then read-only.
 */
export function ExportSettings() {
  const api = useApi();
  const [saved, setSaved] = useState<Export | null>(null);
  const [endpoint, setEndpoint] = useState('');
  const [content, setContent] = useState(false);
  const [headerLines, setHeaderLines] = useState('');
  const [problem, setProblem] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  const fill = useCallback((s: Export) => {
    setSaved(s);
    setEndpoint(s.endpoint ?? '');
    setContent(s.content);
  }, []);

  useEffect(() => {
    api.call('otel.get', {}).then(fill, (e: unknown) => setProblem(errorText(e)));
    // Only the status lines follow the core while open (spans leave the queue); the fields keep what is typed.
    const timer = setInterval(() => {
      api.call('otel.get', {}).then(
        (s) => setSaved((before) => (before ? { ...before, status: s.status, url: s.url, problem: s.problem } : before)),
        () => undefined,
      );
    }, STATUS_REFRESH_MS);
    return () => clearInterval(timer);
  }, [api, fill]);

  const set = (change: CallParams<'otel.set'>) => {
    setBusy(true);
    return api
      .call('otel.set', change)
      .then(
        (s) => {
          setProblem(null);
          return s;
        },
        (e: unknown) => {
          setProblem(errorText(e));
          return null;
        },
      )
      .finally(() => setBusy(false));
  };
  const save = () =>
    set({ endpoint, content, ...(headerLines.trim() ? { headers: headerLines } : {}) }).then((s) => {
      if (!s) return;
      fill(s);
      setHeaderLines('');
    });
  const removeHeader = (name: string) =>
    set({ removeHeaders: [name] }).then((s) => {
      if (s) setSaved(s);
    });

  const readOnly = saved === null || saved.fromEnv !== null;
  return (
    <div className="settings-export" data-testid="settings-export">
      <h2>Export (OpenTelemetry)</h2>
      <p>
        Sends each session to an OpenTelemetry backend as a trace (OTLP/HTTP): model calls with their tokens and cost, tool calls, commands,
        and file changes. Keys are redacted.
      </p>
      {saved?.fromEnv && <p data-testid="export-from-env">The export is {saved.fromEnv}.</p>}
      {/* The core says what is wrong with a URL, in the form; the browser's own check would only show a bubble. */}
      <form
        noValidate
        onSubmit={(e) => {
          e.preventDefault();
          void save();
        }}
      >
        <label>
          Endpoint{' '}
          <input
            type="url"
            data-testid="export-endpoint"
            placeholder="http://localhost:4318 (empty: no export)"
            autoComplete="off"
            readOnly={readOnly}
            value={endpoint}
            onChange={(e) => setEndpoint(e.target.value)}
          />
        </label>
        <div className="export-headers">
          Headers sent with every request:
          {saved && saved.headerNames.length === 0 && <span data-testid="export-no-headers"> none</span>}
          <ul>
            {saved?.headerNames.map((name) => (
              <li key={name} data-testid="export-header" data-name={name}>
                {name}: <span className="export-masked">••••••••</span>{' '}
                {!readOnly && (
                  <button type="button" data-testid="export-header-remove" disabled={busy} onClick={() => void removeHeader(name)}>
                    Remove
                  </button>
                )}
              </li>
            ))}
          </ul>
          {!readOnly && (
            <label>
              Add or replace headers, one key=value a line (values are kept on this machine and not shown again)
              <textarea
                data-testid="export-headers"
                rows={3}
                spellCheck={false}
                autoComplete="off"
                placeholder="authorization=Bearer …"
                value={headerLines}
                onChange={(e) => setHeaderLines(e.target.value)}
              />
            </label>
          )}
        </div>
        <label>
          <input
            type="checkbox"
            data-testid="export-content"
            disabled={readOnly}
            checked={content}
            onChange={(e) => setContent(e.target.checked)}
          />{' '}
          Include message contents: prompts, answers, tool arguments and results go to the backend too (off, the spans carry models, token
          counts, cost and tool names, not what was said)
        </label>
        <div>
          <button type="submit" data-testid="export-save" disabled={readOnly || busy}>
            Save
          </button>
        </div>
      </form>
      {problem && (
        <p role="alert" className="export-problem" data-testid="export-problem">
          {problem}
        </p>
      )}
      {saved?.problem && (
        <p role="alert" className="export-problem" data-testid="export-status-problem">
          {saved.problem}
        </p>
      )}
      {saved?.url && saved.status && <StatusLines url={saved.url} status={saved.status} />}
      {saved && saved.url === null && saved.problem === null && <p data-testid="export-off">No endpoint: nothing is exported.</p>}
    </div>
  );
}
