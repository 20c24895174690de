import type { CallError } from '../../electron/contract/appContract.ts';
import { shortId } from '../app/format.ts';

interface Props {
  readonly problem: CallError;
  readonly onOpen: (id: string) => void;
  /** Prefix of the test ids: `<prefix>-error` on the block, `<prefix>-candidate` on each choice. */
  readonly testIdPrefix?: string;
  readonly onDismiss?: () => void;
}

/** Why a typed name did not resolve to one session, with the sessions it may have meant to pick from. */
export function ResolveProblem({ problem, onOpen, testIdPrefix = 'resolve', onDismiss }: Props) {
  return (
    <div className="resolve-error" data-testid={`${testIdPrefix}-error`} role="alert">
      <span>{problem.message}</span>
      {problem.candidates && problem.candidates.length > 0 && (
        <span className="candidates">
          {problem.candidates.map((c) => (
            <button
              key={c.id}
              type="button"
              className="link"
              data-testid={`${testIdPrefix}-candidate`}
              data-session-id={c.id}
              onClick={() => onOpen(c.id)}
            >
              {c.name ?? '(unnamed)'} <code>{shortId(c.id)}</code>
            </button>
          ))}
        </span>
      )}
      {onDismiss && (
        <button type="button" className="link" data-testid={`${testIdPrefix}-dismiss`} onClick={onDismiss}>
          dismiss
        </button>
      )}
    </div>
  );
}
