import { useEffect, useRef, useState } from 'react';
import type { ChangeTarget, RevertResult } from '../../../electron/contract/appContract.ts';
import { useApi } from '../../api/ApiContext.tsx';
import { errorText } from '../../api/callError.ts';

interface Props {
  readonly sessionId: string;
  readonly target: ChangeTarget;
  readonly label: string;
  /** Said before the revert runs, for the person to confirm. */
  readonly question: string;
  readonly testId: string;
  readonly onReverted: (result: RevertResult, what: string) => void;
}

/**
 * A Revert button that asks first: the question and Revert / Cancel in place of the button
 * (Escape cancels), then sessions.revert. What it restored and refused is the caller's to show.
 */
export function RevertAction({ sessionId, target, label, question, testId, onReverted }: Props) {
  const api = useApi();
  const [state, setState] = useState<'idle' | 'asking' | 'busy'>('idle');
  const [error, setError] = useState<string | null>(null);
  const cancel = useRef<HTMLButtonElement>(null);

  useEffect(() => {
    if (state === 'asking') cancel.current?.focus();
  }, [state]);

  const run = async () => {
    setState('busy');
    setError(null);
    try {
      onReverted(await api.call('sessions.revert', { id: sessionId, target }), label);
    } catch (e) {
      setError(errorText(e));
    } finally {
      setState('idle');
    }
  };

  if (state === 'idle')
    return (
      <span className="revert-action">
        <button type="button" data-testid={testId} onClick={() => setState('asking')}>
          {label}
        </button>
        {error && (
          <span className="error" role="alert" data-testid="revert-error">
            {error}
          </span>
        )}
      </span>
    );
  return (
    <div
      className="revert-confirm"
      role="alertdialog"
      aria-label={label}
      data-testid="revert-confirm"
      onKeyDown={(e) => e.key === 'Escape' && state === 'asking' && setState('idle')}
    >
      <span>{question}</span>
      <button type="button" className="danger" data-testid="revert-confirm-yes" disabled={state === 'busy'} onClick={() => void run()}>
        {state === 'busy' ? 'Reverting…' : 'Revert'}
      </button>
      <button type="button" ref={cancel} data-testid="revert-confirm-no" disabled={state === 'busy'} onClick={() => setState('idle')}>
        Cancel
      </button>
    </div>
  );
}

/** What a revert did: the paths written back and the ones left alone, with why. */
export function RevertReport({ result, what, onClose }: { result: RevertResult; what: string; onClose: () => void }) {
  return (
    <section className="revert-report" data-testid="revert-report" role="status" aria-label={`${what}: result`}>
      <header>
        <strong>{what}</strong>
        <span className="muted">
          {result.restored.length} restored, {result.refused.length} refused
        </span>
        <span className="spacer" />
        <button type="button" className="link" onClick={onClose} aria-label="close the revert result">
          close
        </button>
      </header>
      <ul>
        {result.restored.map((r) => (
          <li key={`r:${r.path}`} data-testid="revert-restored" data-path={r.path}>
            <span className="badge ok">{r.action}</span> <code>{r.path}</code>
          </li>
        ))}
        {result.refused.map((r) => (
          <li key={`x:${r.path}`} data-testid="revert-refused" data-path={r.path}>
            <span className="badge bad">refused</span> <code>{r.path}</code> <span className="muted">{r.reason}</span>
          </li>
        ))}
      </ul>
    </section>
  );
}
