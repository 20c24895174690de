import { memo } from 'react';
import type { ConversationTool, ConversationTurn as Turn, RowLink, TableKind } from '../../electron/contract/appContract.ts';
import { formatBytes, formatCost, formatCount, formatDuration, formatTime } from '../app/format.ts';
import { ConversationText } from './ConversationText.tsx';

interface Props {
  readonly sessionId: string;
  readonly turn: Turn;
  /** Agent ids to what to call them (main is the main agent). */
  readonly agentLabel: (id: string) => string;
  readonly focused: boolean;
  readonly onJump: (kind: TableKind, seq: number) => void;
}

const INDENT_PX = 22;

/** A link to an item's raw row in its table view (Model calls, Network, Tools), where its detail opens, or to a file change's diff in Files. */
function RawLink({ link, label, testId, onJump }: { link: RowLink; label: string; testId: string; onJump: Props['onJump'] }) {
  return (
    <button
      type="button"
      className="link raw-link"
      data-testid={testId}
      data-kind={link.kind}
      data-seq={link.seq}
      title={link.kind === 'file' ? `open the diff of change #${link.seq} in Files` : `open ${link.kind} #${link.seq}`}
      onClick={() => onJump(link.kind, link.seq)}
    >
      {label}
    </button>
  );
}

function tokens(turn: Turn): string {
  const parts = [`${formatCount(turn.inputTokens ?? 0)} in`, `${formatCount(turn.outputTokens ?? 0)} out`];
  if (turn.cacheReadTokens) parts.push(`${formatCount(turn.cacheReadTokens)} cache read`);
  if (turn.cacheWriteTokens) parts.push(`${formatCount(turn.cacheWriteTokens)} cache write`);
  return parts.join(' · ');
}

function Tool({
  sessionId,
  tool,
  agentLabel,
  onJump,
}: { sessionId: string; tool: ConversationTool } & Pick<Props, 'agentLabel' | 'onJump'>) {
  return (
    <div className="tool-call" data-testid="tool-call" data-call-id={tool.callId} data-status={tool.status}>
      <div className="tool-head">
        <span className="badge">tool</span>
        <strong>{tool.name}</strong>
        {tool.status === 'error' && <span className="badge bad">failed</span>}
        {tool.result === null && <span className="badge">no result</span>}
        <span className="spacer" />
        <RawLink link={tool.link} label="tool call" testId="tool-link" onJump={onJump} />
      </div>
      {tool.arguments && <ConversationText sessionId={sessionId} text={tool.arguments} as="json" collapse="preview" testId="tool-args" />}
      {tool.result && (
        <div
          className={tool.result.isError ? 'tool-result is-error' : 'tool-result'}
          data-testid="tool-result"
          data-error={tool.result.isError}
        >
          <div className="tool-head">
            <span className="muted">{tool.result.isError ? 'error result' : 'result'}</span>
            <span className="spacer" />
            <RawLink link={tool.result.link} label="sent back in model call" testId="result-link" onJump={onJump} />
          </div>
          {tool.result.text ? (
            <ConversationText sessionId={sessionId} text={tool.result.text} as="plain" collapse="preview" testId="result-text" />
          ) : (
            <div className="muted">empty</div>
          )}
        </div>
      )}
      {tool.spawned && (
        <div className="muted spawned" data-testid="tool-spawned">
          spawned {agentLabel(tool.spawned)}: its turns follow
        </div>
      )}
    </div>
  );
}

/** One turn of the story: who, when, what it cost; what it was told, thought, said and did; the files it changed. */
export const ConversationTurn = memo(function ConversationTurn({ sessionId, turn, agentLabel, focused, onJump }: Props) {
  const classes = ['turn'];
  if (focused) classes.push('focused');
  if (turn.error) classes.push('is-error');
  return (
    <article
      className={classes.join(' ')}
      style={{ marginLeft: turn.depth * INDENT_PX }}
      data-testid="conversation-turn"
      data-index={turn.index}
      data-seq={turn.seq}
      data-agent={turn.agent}
      data-depth={turn.depth}
    >
      <header className="turn-head">
        <strong className="turn-number">#{turn.index + 1}</strong>
        {turn.agent !== 'main' && <span className="badge agent">{agentLabel(turn.agent)}</span>}
        <span className="mono muted">{formatTime(turn.at)}</span>
        <span className="muted">{turn.model ?? turn.provider}</span>
        {turn.error && (
          <span className="badge bad" data-testid="turn-error">
            error{turn.status !== null && turn.status >= 400 ? ` ${turn.status}` : ''}
          </span>
        )}
        {turn.retry && (
          <span className="badge warn" data-testid="turn-retry">
            retry
          </span>
        )}
        <span className="spacer" />
        <span className="muted figures" data-testid="turn-figures">
          {tokens(turn)} · {formatCost(turn.costUsd)} · {formatDuration(turn.durationMs)}
        </span>
        <RawLink link={turn.link} label="model call" testId="turn-link" onJump={onJump} />
        {turn.netLink && <RawLink link={turn.netLink} label="exchange" testId="turn-net-link" onJump={onJump} />}
      </header>
      {turn.prompt && (
        <section className="turn-prompt" data-testid="turn-prompt">
          <span className="badge">prompt</span>
          <ConversationText sessionId={sessionId} text={turn.prompt} as="plain" collapse="preview" testId="prompt-text" />
        </section>
      )}
      {turn.thinking && (
        <ConversationText sessionId={sessionId} text={turn.thinking} as="plain" collapse="hidden" label="thinking" testId="turn-thinking" />
      )}
      {turn.text && (
        <section className="turn-text" data-testid="turn-text">
          <ConversationText sessionId={sessionId} text={turn.text} as="markdown" collapse="preview" testId="answer-text" />
        </section>
      )}
      {turn.tools.map((tool) => (
        <Tool key={tool.callId} sessionId={sessionId} tool={tool} agentLabel={agentLabel} onJump={onJump} />
      ))}
      {turn.fileCount > 0 && (
        <section className="turn-files" data-testid="turn-files">
          <span className="muted">
            {turn.fileCount === 1 ? '1 file changed' : `${formatCount(turn.fileCount)} file changes`}
            {turn.fileCount > turn.files.length ? ` (first ${turn.files.length})` : ''}
          </span>
          <ul>
            {turn.files.map((file) => (
              <li key={file.link.seq} data-testid="turn-file">
                <span className={`badge action-${file.action}`}>{file.action}</span>{' '}
                <RawLink link={file.link} label={file.path} testId="file-link" onJump={onJump} />
                <span className="muted">
                  {file.entries !== null ? ` ${formatCount(file.entries)} paths` : ''}
                  {file.size !== null ? ` ${formatBytes(file.size)}` : ''}
                </span>
              </li>
            ))}
          </ul>
        </section>
      )}
    </article>
  );
});
