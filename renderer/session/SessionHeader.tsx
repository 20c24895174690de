import type { SessionSummary } from '../../electron/contract/appContract.ts';
import { CopyId } from '../app/CopyId.tsx';
import { StatusBadge } from '../app/StatusBadge.tsx';
import { formatCost, formatCount } from '../app/format.ts';

/** The tab's title line: who the session is and its running totals (kept live by session.changed). */
export function SessionHeader({ id, session }: { readonly id: string; readonly session: SessionSummary | null }) {
  return (
    <div className="session-head">
      <strong className="session-name">{session?.name ?? '(unnamed)'}</strong>
      <CopyId id={id} />
      {session && <StatusBadge status={session.status} reason={session.statusReason} />}
      {session && (
        <span className="figures muted" data-testid="session-figures">
          <span title="cost">{formatCost(session.costUsd)}</span>
          <span title="tokens in + out">
            {formatCount(session.inputTokens)} + {formatCount(session.outputTokens)} tok
          </span>
          <span>{formatCount(session.requests)} req</span>
          <span>{formatCount(session.modelCalls)} model</span>
          <span>{formatCount(session.toolCalls)} tools</span>
          <span>{formatCount(session.fileEvents)} fs</span>
        </span>
      )}
    </div>
  );
}
