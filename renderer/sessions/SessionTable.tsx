import { useMemo, useState } from 'react';
import type { SessionSummary } from '../../electron/contract/appContract.ts';
import { CopyId } from '../app/CopyId.tsx';
import { StartingNote } from '../app/StartingNote.tsx';
import { StatusBadge } from '../app/StatusBadge.tsx';
import { formatCost, formatCount, formatDateTime, formatDuration } from '../app/format.ts';
import { useNow } from '../app/useNow.ts';

interface Column {
  readonly key: string;
  readonly label: string;
  readonly numeric: boolean;
  readonly sortValue: (s: SessionSummary, now: number) => string | number;
}

/** A running session's duration grows while it is on screen; an ended one is what the host says. */
function durationOf(s: SessionSummary, now: number): number {
  if (s.status !== 'running') return s.durationMs;
  const created = Date.parse(s.createdAt);
  return Number.isNaN(created) ? s.durationMs : Math.max(s.durationMs, now - created);
}

const COLUMNS: readonly Column[] = [
  { key: 'id', label: 'id', numeric: false, sortValue: (s) => s.id },
  { key: 'name', label: 'name', numeric: false, sortValue: (s) => s.name ?? '' },
  { key: 'status', label: 'status', numeric: false, sortValue: (s) => s.status },
  { key: 'created', label: 'created', numeric: false, sortValue: (s) => s.createdAt },
  { key: 'duration', label: 'duration', numeric: true, sortValue: durationOf },
  { key: 'cost', label: 'cost', numeric: true, sortValue: (s) => s.costUsd },
  { key: 'tokens', label: 'tokens (in+out)', numeric: true, sortValue: (s) => s.inputTokens + s.outputTokens },
  { key: 'requests', label: 'requests', numeric: true, sortValue: (s) => s.requests },
  { key: 'tools', label: 'tool calls', numeric: true, sortValue: (s) => s.toolCalls },
  { key: 'files', label: 'fs events', numeric: true, sortValue: (s) => s.fileEvents },
];

interface Sort {
  readonly key: string;
  readonly descending: boolean;
}

/** The session list itself: sortable by any column (click a header; click again to reverse). */
export function SessionTable({
  sessions,
  onOpen,
}: {
  readonly sessions: readonly SessionSummary[];
  readonly onOpen: (id: string) => void;
}) {
  const [sort, setSort] = useState<Sort>({ key: 'created', descending: true });
  const now = useNow(
    1000,
    sessions.some((s) => s.status === 'running'),
  );

  const sorted = useMemo(() => {
    const column = COLUMNS.find((c) => c.key === sort.key) ?? COLUMNS[3]!;
    const direction = sort.descending ? -1 : 1;
    return [...sessions].sort((a, b) => {
      const x = column.sortValue(a, now);
      const y = column.sortValue(b, now);
      return (x < y ? -1 : x > y ? 1 : a.id.localeCompare(b.id)) * direction;
    });
  }, [sessions, sort, now]);

  return (
    <div className="table-scroll">
      <table className="sessions" data-testid="session-table">
        <thead>
          <tr>
            {COLUMNS.map((c) => (
              <th
                key={c.key}
                className={c.numeric ? 'num sortable' : 'sortable'}
                aria-sort={sort.key === c.key ? (sort.descending ? 'descending' : 'ascending') : 'none'}
                data-testid={`sort-${c.key}`}
                onClick={() => setSort((s) => ({ key: c.key, descending: s.key === c.key ? !s.descending : c.numeric }))}
              >
                {c.label}
                {sort.key === c.key && <span className="sort-mark">{sort.descending ? '▾' : '▴'}</span>}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {sorted.map((s) => (
            <tr
              key={s.id}
              data-testid="session-row"
              data-session-id={s.id}
              tabIndex={0}
              onClick={() => onOpen(s.id)}
              onKeyDown={(e) => e.key === 'Enter' && onOpen(s.id)}
            >
              <td>
                <CopyId id={s.id} />
              </td>
              <td className="name">{s.name ?? <span className="muted">(unnamed)</span>}</td>
              <td data-testid="session-status">
                {s.starting ? <StartingNote progress={s.starting} /> : <StatusBadge status={s.status} reason={s.statusReason} />}
                {s.status === 'crashed' && s.statusReason && (
                  <span className="status-reason" data-testid="status-reason" title={s.statusReason}>
                    {s.statusReason.split('\n')[0]}
                  </span>
                )}
              </td>
              <td className="mono">{formatDateTime(s.createdAt)}</td>
              <td className="num">{formatDuration(durationOf(s, now))}</td>
              <td className="num">{formatCost(s.costUsd)}</td>
              <td className="num" title={`${s.inputTokens} in + ${s.outputTokens} out`}>
                {formatCount(s.inputTokens)} + {formatCount(s.outputTokens)}
              </td>
              <td className="num" title={s.deniedRequests ? `${s.deniedRequests} denied` : undefined}>
                {formatCount(s.requests)}
                {s.deniedRequests > 0 && <span className="denied"> ({s.deniedRequests} denied)</span>}
              </td>
              <td className="num">{formatCount(s.toolCalls)}</td>
              <td className="num">{formatCount(s.fileEvents)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
