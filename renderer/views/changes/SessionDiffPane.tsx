import type { RevertResult } from '../../../electron/contract/appContract.ts';
import { revertQuestion } from './changeGroups.ts';
import { DiffFiles } from './DiffFiles.tsx';
import { RevertAction } from './RevertAction.tsx';
import { useDiff } from './useDiff.ts';

interface Props {
  readonly sessionId: string;
  readonly sessionName: string;
  readonly baseline: { at: string; files: number } | null | undefined;
  readonly reloads: number;
  readonly onReverted: (result: RevertResult, what: string) => void;
}

/** The whole session as `git diff` shows it: the workspace as it started against as it is now, file by file. */
export function SessionDiffPane({ sessionId, sessionName, baseline, reloads, onReverted }: Props) {
  const { diffs, error } = useDiff(sessionId, { kind: 'session' }, reloads);
  return (
    <div className="session-diff" data-testid="session-diff">
      {baseline === null && (
        <div className="muted pad">This session recorded no baseline of its folder: only changes whose contents were kept show.</div>
      )}
      {error && <div className="error pad">{error}</div>}
      {!diffs && !error && <div className="muted pad">Loading the session's diff…</div>}
      {diffs && (
        <DiffFiles
          diffs={diffs}
          testId="session-diff-files"
          wholeHint={`capsem diff ${sessionName} prints the whole session's patch.`}
          actions={(diff) => (
            <RevertAction
              key={diff.path}
              sessionId={sessionId}
              target={{ kind: 'paths', paths: [diff.path] }}
              label="Revert file"
              question={revertQuestion({ kind: 'paths', path: diff.path })}
              testId="revert-file"
              onReverted={onReverted}
            />
          )}
        />
      )}
    </div>
  );
}
