import type Database from 'better-sqlite3';
import { requestViewByPath } from './foreignDatabases.ts';
import type { SessionEventStore } from './sessionEventStore.ts';
import { promptTitle } from './sessionTitle.ts';

// What GET /v1/sessions says about a session beyond main.db's totals, read from its session.db:
// the title of its first prompt (the prompt the recorder kept in model_items), its tokens with cache tokens counted, the processes that made
// requests, its last request and how full its conversation got. Each is absent when the session
// has nothing to say it from.

/** How full the conversation got: the turn with a tool manifest that sent the most messages (the latest on a tie). */
export interface PromptContext {
  readonly tokens: number;
  /**
   * Whether the client stated the turn's agent role. Ours never does, so the turn is ranked by
   * messages (the spec's rule for an unstated role), not by time.
   */
  readonly stated: false;
  readonly at: string;
  readonly msgs: number;
}

export interface SessionListFacts {
  /** The events the API serves for the session, as a page's totalEvents counts them (an exchange is two). */
  readonly events?: number;
  readonly totalTokens?: number;
  readonly lastRequestAt?: string;
  /** Pids of the guest processes that made requests, in the order they first did; we record no start time. */
  readonly procs?: string[];
  readonly promptContext?: PromptContext;
}

// Each model call's total as its event states it: input, cache read, cache write and output.
const CACHE = (key: string): string => `coalesce(CASE WHEN json_valid(usage_details) THEN json_extract(usage_details, '$.${key}') END, 0)`;
const PROMPT_TOKENS = `coalesce(input_tokens, 0) + ${CACHE('cache_read')} + ${CACHE('cache_write')}`;
const HAS_TOKENS = 'input_tokens IS NOT NULL OR output_tokens IS NOT NULL';
/** The first model calls read for a prompt: a client's own side calls (a quota probe, a titler) can come first. */
const PROMPT_SEARCH_CALLS = 8;

function scalar<T>(db: Database.Database, tables: ReadonlySet<string>, table: string, sql: string): T | undefined {
  if (!tables.has(table)) return undefined;
  return (db.prepare(sql).get() as { v: T | null } | undefined)?.v ?? undefined;
}

export function readListFacts(store: SessionEventStore, tables: ReadonlySet<string>): SessionListFacts {
  const { db } = store;
  const totalTokens = scalar<number>(
    db,
    tables,
    'model_calls',
    `SELECT sum(${PROMPT_TOKENS} + coalesce(output_tokens, 0)) AS v FROM model_calls WHERE ${HAS_TOKENS}`,
  );
  const lastRequestAt = scalar<string>(db, tables, 'net_events', 'SELECT max(timestamp) AS v FROM net_events');
  const procs = tables.has('net_events')
    ? (db.prepare('SELECT pid FROM net_events WHERE pid IS NOT NULL GROUP BY pid ORDER BY min(seq)').all() as { pid: number }[]).map((r) =>
        String(r.pid),
      )
    : [];
  const context = tables.has('model_calls')
    ? (db
        .prepare(
          `SELECT timestamp AS at, messages_count AS msgs, ${PROMPT_TOKENS} AS tokens FROM model_calls WHERE tools_count > 0 AND messages_count > 0 AND ${HAS_TOKENS} ORDER BY messages_count DESC, seq DESC LIMIT 1`,
        )
        .get() as { at: string; msgs: number; tokens: number } | undefined)
    : undefined;
  return {
    events: store.bounds().total,
    ...(totalTokens === undefined ? {} : { totalTokens }),
    ...(lastRequestAt === undefined ? {} : { lastRequestAt }),
    ...(procs.length === 0 ? {} : { procs }),
    ...(context ? { promptContext: { tokens: context.tokens, stated: false, at: context.at, msgs: context.msgs } } : {}),
  };
}

/** The title of the session's first user prompt that has words of its own; undefined while it has none. */
export function firstPromptTitle(store: SessionEventStore, tables: ReadonlySet<string>): string | undefined {
  if (!tables.has('model_calls')) return undefined;
  const calls = store.db
    .prepare(
      `SELECT id, wire, provider, path, coalesce(net_event_id, event_id) AS exchange FROM model_calls ORDER BY seq LIMIT ${PROMPT_SEARCH_CALLS}`,
    )
    .all() as { id: number; wire: string | null; provider: string; path: string; exchange: string }[];
  const recorded = tables.has('model_items')
    ? store.db.prepare("SELECT content FROM model_items WHERE model_call_id = ? AND kind = 'request' ORDER BY item_index").pluck()
    : undefined;
  for (const call of calls) {
    // A call another tool wrote has no prompt of ours: its body's user messages are read instead.
    const prompts =
      call.wire === null
        ? requestViewByPath(call.provider, call.path, store.requestBody(call.exchange))
            .messages.filter((m) => m.role === 'user')
            .map((m) => m.content)
        : ((recorded?.all(call.id) ?? []) as (string | null)[]);
    for (const prompt of prompts) {
      const title = prompt === null ? undefined : promptTitle(prompt);
      if (title !== undefined) return title;
    }
  }
  return undefined;
}
