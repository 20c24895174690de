import type { RevertResult, WorkspaceChange } from '../../../electron/contract/appContract.ts';
import { formatTime } from '../../app/format.ts';
import { revertQuestion, sourceLabel } from './changeGroups.ts';
import { DiffFiles } from './DiffFiles.tsx';
import { RevertAction } from './RevertAction.tsx';
import { useDiff } from './useDiff.ts';

interface Props {
  readonly sessionId: string;
  readonly sessionName: string;
  readonly change: WorkspaceChange;
  readonly reloads: number;
  readonly onReverted: (result: RevertResult, what: string) => void;
  readonly onClose: () => void;
}

/** One change: what made it and when, its diff, and Revert for the change, its file, or its turn onwards. */
export function ChangePane({ sessionId, sessionName, change, reloads, onReverted, onClose }: Props) {
  const { diffs, error } = useDiff(sessionId, { kind: 'change', seq: change.seq }, reloads);
  const summary = change.entries !== null;
  return (
    <aside
      className="detail change-pane"
      data-testid="change-pane"
      data-seq={change.seq}
      aria-label={`change #${change.seq}: ${change.path}`}
    >
      <header className="detail-head">
        <strong>change #{change.seq}</strong>
        <span className={`badge action-${change.action}`}>{change.action}</span>
        <span className="muted mono">{formatTime(change.at)}</span>
        <span className="muted" data-testid="change-pane-source">
          {sourceLabel(change.source)}
        </span>
        <span className="spacer" />
        <button type="button" className="link" onClick={onClose} aria-label="close the diff" data-testid="detail-close">
          close
        </button>
      </header>
      <div className="change-actions">
        {!summary && change.diffable && (
          <RevertAction
            sessionId={sessionId}
            target={{ kind: 'change', seq: change.seq }}
            label="Revert change"
            question={revertQuestion({ kind: 'change', seq: change.seq, path: change.path })}
            testId="revert-change"
            onReverted={onReverted}
          />
        )}
        {!summary && (
          <RevertAction
            sessionId={sessionId}
            target={{ kind: 'paths', paths: [change.path] }}
            label="Revert file"
            question={revertQuestion({ kind: 'paths', path: change.path })}
            testId="revert-file"
            onReverted={onReverted}
          />
        )}
        {change.source && (
          <RevertAction
            sessionId={sessionId}
            target={{ kind: 'turn', turn: change.source.turn }}
            label={`Revert turn ${change.source.turn + 1} onwards`}
            question={revertQuestion({ kind: 'turn', turn: change.source.turn })}
            testId="revert-turn"
            onReverted={onReverted}
          />
        )}
      </div>
      {change.note && (
        <div className="muted diff-note" data-testid="change-note">
          {change.note}
        </div>
      )}
      {summary && <div className="muted diff-note">A summary of a folder's insides: its files are counted, not kept.</div>}
      {error && <div className="error pad">{error}</div>}
      {!summary && !diffs && !error && <div className="muted pad">Loading the diff…</div>}
      {!summary && diffs && (
        <DiffFiles
          diffs={diffs}
          testId="change-diff"
          wholeHint={`capsem diff ${sessionName} '${change.path}' prints the file's whole diff.`}
        />
      )}
    </aside>
  );
}
