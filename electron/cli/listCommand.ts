import { sessionFigures } from '../sessions/sessionSummary.ts';
import { openMainDb } from '../store/mainDb.ts';
import type { CapsemHome } from '../store/paths.ts';
import { allSessions, type SessionRecord, type SessionTotals } from '../store/registry.ts';
import { parseAmount, parseCommandArgs, parseCount, type Command } from './context.ts';
import { formatCost, formatCreated, formatDuration, formatTable } from './table.ts';

export interface ListedSession {
  readonly id: string;
  readonly name: string | null;
  readonly status: string;
  /** Why it ended as it did (a crash's cause), when main.db says. */
  readonly statusReason: string | null;
  readonly createdAt: string;
  readonly stoppedAt: string | null;
  readonly durationMs: number;
  readonly onDisk: boolean;
  readonly totals: SessionTotals;
}

function toListed(home: CapsemHome, record: SessionRecord): ListedSession {
  const { onDisk, totals, durationMs } = sessionFigures(home, record);
  return {
    id: record.id,
    name: record.name,
    status: record.status,
    statusReason: record.statusReason,
    createdAt: record.createdAt,
    stoppedAt: record.stoppedAt,
    durationMs,
    onDisk,
    totals,
  };
}

export const listCommand: Command = {
  name: 'list',
  summary: 'list sessions with their figures from main.db',
  usage: `capsem list [-n N] [--all] [--with-model] [--with-db] [--with-net] [--with-mcp] [--min-cost X] [--json]

Newest first. A * after the ID means its session.db is still on disk (queryable with
capsem check / capsem sql). Figures come from the main.db rollup, so they survive vacuuming.

  -n N          show at most N sessions (default 10; 0 for all)
  --all         include vacuumed and erased sessions
  --with-model  only sessions with model calls
  --with-db     only sessions whose session.db is on disk
  --with-net    only sessions with network events
  --with-mcp    only sessions with MCP tool calls
  --min-cost X  only sessions that cost at least X US dollars
  --json        print a JSON array (every entry has id and name)`,
  run(ctx, argv) {
    const { values } = parseCommandArgs(this, argv, {
      n: { type: 'string', short: 'n' },
      all: { type: 'boolean' },
      'with-model': { type: 'boolean' },
      'with-db': { type: 'boolean' },
      'with-net': { type: 'boolean' },
      'with-mcp': { type: 'boolean' },
      'min-cost': { type: 'string' },
      json: { type: 'boolean' },
    });
    const limit = parseCount(values.n as string | undefined, '-n', 10);
    const minCost = parseAmount(values['min-cost'] as string | undefined, '--min-cost');
    const db = openMainDb(ctx.home);
    let sessions: ListedSession[];
    try {
      sessions = allSessions(db)
        .filter((r) => values.all || (r.status !== 'vacuumed' && r.status !== 'erased' && r.vacuumedAt === null))
        .map((r) => toListed(ctx.home, r))
        .filter((s) => !values['with-model'] || s.totals.modelCalls > 0)
        .filter((s) => !values['with-db'] || s.onDisk)
        .filter((s) => !values['with-net'] || s.totals.requests > 0)
        .filter((s) => !values['with-mcp'] || s.totals.mcpCalls > 0)
        .filter((s) => minCost === undefined || s.totals.costUsd >= minCost);
    } finally {
      db.close();
    }
    if (limit > 0) sessions = sessions.slice(0, limit);
    if (values.json) {
      ctx.out(JSON.stringify(sessions, null, 2));
      return 0;
    }
    if (sessions.length === 0) {
      ctx.out('No sessions match. Start one, or run `capsem dev seed` for sample data.');
      return 0;
    }
    const rows = sessions.map((s) => [
      `${s.id}${s.onDisk ? '*' : ''}`,
      s.name ?? '-',
      s.status,
      formatCreated(s.createdAt),
      formatDuration(s.durationMs),
      formatCost(s.totals.costUsd),
      String(s.totals.requests),
      `${s.totals.inputTokens}+${s.totals.outputTokens}`,
      String(s.totals.toolCalls),
      String(s.totals.mcpCalls),
      String(s.totals.fileEvents),
    ]);
    ctx.out(
      formatTable(
        ['ID', 'NAME', 'STATUS', 'CREATED', 'DURATION', 'COST', 'NET', 'TOKENS(in+out)', 'TOOLS', 'MCP', 'FS'],
        rows,
        [4, 5, 6, 7, 8, 9, 10],
      ),
    );
    return 0;
  },
};
