import type Database from 'better-sqlite3';
import type {
  ConversationPage,
  ConversationText,
  ConversationTextSource,
  ConversationTool,
  ConversationTurn,
} from '../contract/appContract.ts';
import { conversationOrder } from './conversationOrder.ts';
import { clientOfUserAgent } from './eventClient.ts';
import { EventReadError } from './eventDetail.ts';
import { requestSeqOf, rowSlotOf } from './eventSeq.ts';
import { writtenByAnotherTool } from './foreignDatabases.ts';
import type { OpenSession } from './sessionStores.ts';
import { readTimeline, type Timeline, type Turn } from './timeline.ts';

// sessions.conversation: the session as the agent's story, turn by turn, from the stored rows alone
// (never a request or response body read again): for each model call, the user text it sent that
// its agent had not sent before, the model's thinking and answer, each tool call it made with its
// arguments and the result sent back, the files changed until its agent's next turn (by time),
// and its tokens, cost and time. Which agent made each call and where a subagent's turns go come
// from the timeline (readTimeline); the order is conversationOrder's. The outline (every turn's
// place) is built once per commit and kept; a page reads only its own turns' rows, with long texts
// cut to a head that sessions.conversationText completes.

/** Characters of a model's answer sent at once; the rest on asking. */
export const TEXT_HEAD_CHARS = 8000;
/** Characters of a prompt, thinking, tool arguments or result sent at once. */
export const HEAD_CHARS = 2000;
/** Files listed per turn; `fileCount` says how many there were. */
export const FILES_SHOWN = 20;

interface OutlineTurn {
  readonly callId: number;
  readonly rowSeq: number;
  readonly seq: number;
  readonly agent: string;
  readonly depth: number;
  readonly under: string | null;
  readonly error: boolean;
  readonly retry: boolean;
  readonly newPrompt: boolean;
  /** The turn's files: fs_events from its start until its agent's next turn (null: no end yet). */
  readonly from: string;
  readonly until: string | null;
}

interface Outline {
  readonly version: number;
  readonly ended: boolean;
  readonly turns: readonly OutlineTurn[];
  readonly indexOfRowSeq: ReadonlyMap<number, number>;
  /** Turns' model call row seqs, ascending, for the turn an event falls in. */
  readonly rowSeqs: readonly number[];
  readonly agents: ConversationPage['agents'];
  /** Tool call id to the subagent it spawned. */
  readonly spawned: ReadonlyMap<string, string>;
  /** fs_events by time: their timestamps and seqs, in step. */
  readonly fileTimes: readonly string[];
  readonly fileSeqs: readonly number[];
}

type Cell = string | number | null;
type Row = Record<string, Cell>;

const num = (v: Cell | undefined): number | null => (typeof v === 'number' ? v : null);
const str = (v: Cell | undefined): string | null => (typeof v === 'string' ? v : null);
const usage = (key: string): string => `CASE WHEN json_valid(m.usage_details) THEN json_extract(m.usage_details, '$.${key}') END`;

/** The first index in sorted `values` not below `key`. */
function lowerBound(values: readonly string[], key: string): number {
  let lo = 0;
  let hi = values.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (values[mid]! < key) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

function textOf(source: ConversationTextSource, rowId: Cell | undefined, head: Cell | undefined, total: Cell | undefined, limit: number) {
  if (typeof rowId !== 'number' || typeof head !== 'string' || head === '' || typeof total !== 'number') return null;
  return { head, total, complete: total <= limit, source, rowId } satisfies ConversationText;
}

/** SQL for a text column's head and length, under `alias`_head and `alias`_total. */
const headOf = (column: string, alias: string, limit: number): string =>
  `substr(${column}, 1, ${limit}) AS ${alias}_head, length(${column}) AS ${alias}_total`;

const TEXT_COLUMNS: Record<ConversationTextSource, { table: string; column: string }> = {
  item: { table: 'model_items', column: 'coalesce(content, arguments)' },
  text: { table: 'model_calls', column: 'text_content' },
  thinking: { table: 'model_calls', column: 'thinking_content' },
  arguments: { table: 'tool_calls', column: 'arguments' },
  result: { table: 'tool_responses', column: 'content_preview' },
};

export class Conversations {
  private readonly outlines = new WeakMap<Database.Database, Outline>();

  page(session: OpenSession, ended: boolean, offset: number, limit: number): ConversationPage {
    const outline = this.outline(session, ended);
    const slice = outline.turns.slice(offset, offset + limit);
    return { total: outline.turns.length, offset, turns: this.turns(session, outline, slice, offset), agents: outline.agents };
  }

  /** The index of the turn holding an event: `seq` a timeline (wire) seq with kind null, else a model or tool row's seq. */
  find(session: OpenSession, ended: boolean, seq: number, kind: 'model' | 'tool' | null): number | null {
    const outline = this.outline(session, ended);
    if (outline.turns.length === 0) return null;
    const db = session.store.db;
    const tables = session.tables();
    const rowSeq = kind === null ? rowSlotOf(seq).rowSeq : seq;
    const callOf = (sql: string): number | undefined => {
      const found = db.prepare(sql).get(rowSeq) as { seq: number | null } | undefined;
      return found?.seq ?? undefined;
    };
    const exact = outline.indexOfRowSeq.get(rowSeq);
    if (kind === 'model') return exact ?? null;
    if (kind === null && exact !== undefined) return exact;
    // A tool call is told in the turn that asked for it; a result beside that call; an exchange
    // that carried a model call (written just before its model_calls row) in that call's turn.
    const emitter =
      (tables.has('tool_calls')
        ? callOf('SELECT m.seq FROM tool_calls c JOIN model_calls m ON m.id = c.model_call_id WHERE c.seq = ?')
        : undefined) ??
      (kind === null && tables.has('tool_responses') && tables.has('tool_calls')
        ? callOf(
            'SELECT m.seq FROM tool_responses r JOIN tool_calls c ON c.call_id = r.call_id JOIN model_calls m ON m.id = c.model_call_id WHERE r.seq = ? ORDER BY c.seq LIMIT 1',
          )
        : undefined) ??
      (kind === null && tables.has('net_events')
        ? callOf('SELECT m.seq FROM net_events n JOIN model_calls m ON m.seq = n.seq + 1 AND m.net_event_id = n.event_id WHERE n.seq = ?')
        : undefined);
    const held = emitter === undefined ? undefined : outline.indexOfRowSeq.get(emitter);
    if (held !== undefined) return held;
    // Anything else happened during the last turn before it.
    let lo = 0;
    let hi = outline.rowSeqs.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (outline.rowSeqs[mid]! <= rowSeq) lo = mid + 1;
      else hi = mid;
    }
    return lo === 0 ? null : outline.indexOfRowSeq.get(outline.rowSeqs[lo - 1]!)!;
  }

  /** Each model call's turn index (model_calls.id to its place in the Conversation), as a page numbers them. */
  turnIndexes(session: OpenSession, ended: boolean): ReadonlyMap<number, number> {
    return new Map(this.outline(session, ended).turns.map((t, i) => [t.callId, i]));
  }

  /** A stretch of a text a page cut short, in characters. */
  text(
    session: OpenSession,
    source: ConversationTextSource,
    rowId: number,
    offset: number,
    length: number,
  ): { text: string; offset: number; total: number } {
    const { table, column } = TEXT_COLUMNS[source];
    const row = session.tables().has(table)
      ? (session.store.db
          .prepare(`SELECT substr(${column}, ?, ?) AS text, length(${column}) AS total FROM ${table} WHERE id = ?`)
          .get(offset + 1, length, rowId) as { text: string | null; total: number | null } | undefined)
      : undefined;
    if (!row || row.total === null)
      throw new EventReadError('unknown_event', `session ${session.store.sessionId} has no ${source} text in ${table} row ${rowId}`);
    return { text: row.text ?? '', offset: Math.min(offset, row.total), total: row.total };
  }

  private outline(session: OpenSession, ended: boolean): Outline {
    const db = session.store.db;
    const version = session.store.dataVersion();
    const kept = this.outlines.get(db);
    if (kept && kept.version === version && kept.ended === ended) return kept;
    const outline = this.buildOutline(session, ended, version);
    this.outlines.set(db, outline);
    return outline;
  }

  private buildOutline(session: OpenSession, ended: boolean, version: number): Outline {
    const tables = session.tables();
    const db = session.store.db;
    const empty: Outline = {
      version,
      ended,
      turns: [],
      indexOfRowSeq: new Map(),
      rowSeqs: [],
      agents: [],
      spawned: new Map(),
      fileTimes: [],
      fileSeqs: [],
    };
    if (!tables.has('model_calls')) return empty;
    const calls = db
      .prepare('SELECT id, seq, timestamp, duration_ms, status_code, stop_reason, model FROM model_calls ORDER BY seq')
      .all() as Row[];
    const callOfSeq = new Map(calls.map((c) => [requestSeqOf(Number(c.seq)), c]));
    const story = this.storyTurns(session, ended, calls);
    const agents = story.agents;
    // The timeline is read after the calls: a call committed in between waits for the next outline.
    const turns = story.turns.filter((t) => callOfSeq.has(t.seq));

    const emitters = new Map<string, number>();
    const spawnTools = agents.flatMap((a) => (a.spawnTool ? [a.spawnTool] : []));
    if (spawnTools.length > 0 && tables.has('tool_calls')) {
      const rows = db
        .prepare(
          'SELECT c.call_id AS tool, m.seq AS seq FROM tool_calls c JOIN model_calls m ON m.id = c.model_call_id WHERE c.call_id IN (SELECT value FROM json_each(?)) ORDER BY c.seq',
        )
        .all(JSON.stringify(spawnTools)) as { tool: string; seq: number }[];
      for (const r of rows) if (!emitters.has(r.tool)) emitters.set(r.tool, requestSeqOf(r.seq));
    }
    const order = conversationOrder(agents, turns, (tool) => emitters.get(tool));

    // Prompts are new when they differ from the agent's previous turn's (an agent re-sends its whole conversation each call).
    const prompts = new Map<number, string | null>();
    if (tables.has('model_items'))
      for (const r of db
        .prepare(
          "SELECT model_call_id AS call, CASE WHEN coalesce(content, '') = '' THEN NULL ELSE content_hash END AS hash FROM model_items WHERE kind = 'request'",
        )
        .all() as { call: number; hash: string | null }[])
        prompts.set(r.call, r.hash);
    const flags = new Map(turns.map((t) => [t.seq, t]));
    const returned = new Map(agents.map((a) => [a.id, a.returnedAt]));
    const newPrompt = new Map<number, boolean>();
    const until = new Map<number, string | null>();
    const lastOf = new Map<string, { seq: number; hash: string | null }>();
    for (const t of [...turns].sort((a, b) => a.seq - b.seq)) {
      const call = callOfSeq.get(t.seq)!;
      const hash = prompts.get(Number(call.id)) ?? null;
      const before = lastOf.get(t.agent);
      newPrompt.set(t.seq, hash !== null && hash !== before?.hash);
      if (before) until.set(before.seq, String(call.timestamp));
      lastOf.set(t.agent, { seq: t.seq, hash });
    }
    for (const [agent, last] of lastOf) until.set(last.seq, returned.get(agent) ?? null);

    const outlineTurns = order.map((o): OutlineTurn => {
      const call = callOfSeq.get(o.seq)!;
      const turn = flags.get(o.seq);
      return {
        callId: Number(call.id),
        rowSeq: Number(call.seq),
        seq: o.seq,
        agent: o.agent,
        depth: o.depth,
        under: o.under,
        error: turn?.error === true,
        retry: turn?.resent === true,
        newPrompt: newPrompt.get(o.seq) ?? false,
        from: String(call.timestamp),
        until: until.get(o.seq) ?? null,
      };
    });
    const files = tables.has('fs_events')
      ? (db.prepare('SELECT seq, timestamp FROM fs_events ORDER BY timestamp, seq').all() as { seq: number; timestamp: string }[])
      : [];
    return {
      version,
      ended,
      turns: outlineTurns,
      indexOfRowSeq: new Map(outlineTurns.map((t, i) => [t.rowSeq, i])),
      rowSeqs: outlineTurns.map((t) => t.rowSeq).sort((a, b) => a - b),
      agents: agents.map((a) => ({ id: a.id, label: a.label, type: a.type ?? null })),
      spawned: new Map(agents.flatMap((a) => (a.spawnTool ? [[a.spawnTool, a.id] as const] : []))),
      fileTimes: files.map((f) => f.timestamp),
      fileSeqs: files.map((f) => f.seq),
    };
  }

  /**
   * The story's agents and turns: the timeline's; and, on the main agent, the model calls it has
   * no turn for because it never read them (older than the newest events it reads, or in a file
   * another tool wrote) or does not know their client (it tells only known clients' turns). A
   * call of a known client it left out (a side call: a progress label, a title) is left out here
   * too. A turn told here failed when its status or a missing finish says so.
   */
  private storyTurns(session: OpenSession, ended: boolean, calls: readonly Row[]): Pick<Timeline, 'agents' | 'turns'> {
    const store = session.store;
    const tables = session.tables();
    const timeline = ['tool_calls', 'tool_responses', 'net_events'].every((t) => tables.has(t)) ? readTimeline(store, ended) : null;
    const told = new Set(timeline?.turns.map((t) => t.seq));
    const untold = calls.filter((c) => !told.has(requestSeqOf(Number(c.seq))));
    if (untold.length === 0 && timeline) return timeline;
    // Every exchange read is a host row: a call before all of them was not read.
    const floor = timeline?.truncated ? timeline.hosts.reduce((min, h) => Math.min(min, h.seq), Infinity) : -Infinity;
    const unread = !timeline || writtenByAnotherTool(store.db, tables);
    const agents = new Map<number, string | null>();
    if (!unread)
      for (const r of store.db
        .prepare(
          `SELECT m.id AS call, CASE WHEN json_valid(n.request_headers) THEN json_extract(n.request_headers, '$."user-agent"') END AS agent
          FROM model_calls m JOIN net_events n ON n.seq = m.seq - 1 AND n.event_id = m.net_event_id WHERE m.id IN (SELECT value FROM json_each(?))`,
        )
        .all(JSON.stringify(untold.map((c) => c.id))) as { call: number; agent: string | null }[])
        agents.set(r.call, r.agent);
    const plain = untold
      .filter((c) => {
        if (unread || requestSeqOf(Number(c.seq)) < floor) return true;
        return clientOfUserAgent(agents.get(Number(c.id)) ?? undefined)?.name === undefined;
      })
      .map((c): Turn => {
        const status = num(c.status_code);
        return {
          agent: 'main',
          seq: requestSeqOf(Number(c.seq)),
          start: String(c.timestamp),
          ...((status !== null && status >= 400) || c.stop_reason === null ? { error: true as const } : {}),
        };
      });
    return { agents: timeline?.agents ?? [{ id: 'main', label: 'main agent' }], turns: [...(timeline?.turns ?? []), ...plain] };
  }

  private turns(session: OpenSession, outline: Outline, slice: readonly OutlineTurn[], offset: number): ConversationTurn[] {
    if (slice.length === 0) return [];
    const db = session.store.db;
    const tables = session.tables();
    const ids = JSON.stringify(slice.map((t) => t.callId));
    const calls = new Map(
      (
        db
          .prepare(
            `SELECT m.id, m.seq, m.timestamp, m.duration_ms, m.provider, m.model, m.status_code, m.stop_reason, m.input_tokens, m.output_tokens,
              ${usage('cache_read')} AS cache_read, ${usage('cache_write')} AS cache_write, m.estimated_cost_usd,
              ${tables.has('net_events') ? '(SELECT n.seq FROM net_events n WHERE n.seq = m.seq - 1 AND n.event_id = m.net_event_id)' : 'NULL'} AS net_seq,
              ${headOf('m.text_content', 'text', TEXT_HEAD_CHARS)}, ${headOf('m.thinking_content', 'thinking', HEAD_CHARS)}
            FROM model_calls m WHERE m.id IN (SELECT value FROM json_each(?))`,
          )
          .all(ids) as Row[]
      ).map((r) => [Number(r.id), r]),
    );
    const prompts = new Map<number, Row>();
    const wanted = slice.filter((t) => t.newPrompt).map((t) => t.callId);
    if (wanted.length > 0 && tables.has('model_items'))
      for (const r of db
        .prepare(
          `SELECT id, model_call_id, ${headOf('content', 'prompt', HEAD_CHARS)} FROM model_items WHERE kind = 'request' AND model_call_id IN (SELECT value FROM json_each(?))`,
        )
        .all(JSON.stringify(wanted)) as Row[])
        prompts.set(Number(r.model_call_id), r);
    const tools = this.tools(session, outline, ids);
    return slice.map((t, i): ConversationTurn => {
      const c = calls.get(t.callId) ?? ({} as Row);
      const prompt = prompts.get(t.callId);
      const files = this.files(session, outline, t);
      return {
        index: offset + i,
        seq: t.seq,
        link: { kind: 'model', seq: t.rowSeq },
        netLink: typeof c.net_seq === 'number' ? { kind: 'net', seq: c.net_seq } : null,
        agent: t.agent,
        depth: t.depth,
        under: t.under,
        at: t.from,
        durationMs: num(c.duration_ms) ?? 0,
        provider: str(c.provider) ?? '',
        model: str(c.model),
        status: num(c.status_code),
        finish: str(c.stop_reason),
        error: t.error,
        retry: t.retry,
        inputTokens: num(c.input_tokens),
        outputTokens: num(c.output_tokens),
        cacheReadTokens: num(c.cache_read),
        cacheWriteTokens: num(c.cache_write),
        costUsd: num(c.estimated_cost_usd) ?? 0,
        prompt: prompt ? textOf('item', prompt.id, prompt.prompt_head, prompt.prompt_total, HEAD_CHARS) : null,
        thinking: textOf('thinking', t.callId, c.thinking_head, c.thinking_total, HEAD_CHARS),
        text: textOf('text', t.callId, c.text_head, c.text_total, TEXT_HEAD_CHARS),
        tools: tools.get(t.callId) ?? [],
        ...files,
      };
    });
  }

  /** The tool calls each of the page's model calls made, each with the first result sent back for it. */
  private tools(session: OpenSession, outline: Outline, ids: string): Map<number, ConversationTool[]> {
    const out = new Map<number, ConversationTool[]>();
    const tables = session.tables();
    if (!tables.has('tool_calls')) return out;
    const db = session.store.db;
    const calls = db
      .prepare(
        `SELECT id, seq, model_call_id, call_id, tool_name, status, ${headOf('arguments', 'args', HEAD_CHARS)}
        FROM tool_calls WHERE model_call_id IN (SELECT value FROM json_each(?)) ORDER BY model_call_id, call_index, id`,
      )
      .all(ids) as Row[];
    const results = new Map<string, Row>();
    if (calls.length > 0 && tables.has('tool_responses')) {
      const items = tables.has('model_items');
      for (const r of db
        .prepare(
          `SELECT r.id, r.call_id, r.is_error, m.seq AS carried_seq, ${headOf('r.content_preview', 'preview', HEAD_CHARS)}
            ${items ? `, i.id AS item_id, ${headOf('i.content', 'item', HEAD_CHARS)}` : ''}
          FROM tool_responses r JOIN model_calls m ON m.id = r.model_call_id
          ${items ? "LEFT JOIN model_items i ON i.model_call_id = r.model_call_id AND i.kind = 'tool_response' AND i.call_id = r.call_id" : ''}
          WHERE r.call_id IN (SELECT value FROM json_each(?)) ORDER BY r.seq`,
        )
        .all(JSON.stringify(calls.map((c) => c.call_id))) as Row[])
        if (!results.has(String(r.call_id))) results.set(String(r.call_id), r);
    }
    for (const c of calls) {
      const r = results.get(String(c.call_id));
      const tool: ConversationTool = {
        callId: String(c.call_id),
        name: String(c.tool_name),
        status: String(c.status),
        arguments: textOf('arguments', c.id, c.args_head, c.args_total, HEAD_CHARS),
        link: { kind: 'tool', seq: Number(c.seq) },
        result: r
          ? {
              text:
                typeof r.item_id === 'number'
                  ? textOf('item', r.item_id, r.item_head, r.item_total, HEAD_CHARS)
                  : textOf('result', r.id, r.preview_head, r.preview_total, HEAD_CHARS),
              isError: r.is_error === 1,
              link: { kind: 'model', seq: Number(r.carried_seq) },
            }
          : null,
        spawned: outline.spawned.get(String(c.call_id)) ?? null,
      };
      const list = out.get(Number(c.model_call_id));
      if (list) list.push(tool);
      else out.set(Number(c.model_call_id), [tool]);
    }
    return out;
  }

  /** The workspace changes from the turn's start until its agent's next turn. */
  private files(session: OpenSession, outline: Outline, turn: OutlineTurn): Pick<ConversationTurn, 'files' | 'fileCount'> {
    const lo = lowerBound(outline.fileTimes, turn.from);
    const hi = turn.until === null ? outline.fileTimes.length : lowerBound(outline.fileTimes, turn.until);
    if (hi <= lo) return { files: [], fileCount: 0 };
    const seqs = outline.fileSeqs.slice(lo, Math.min(hi, lo + FILES_SHOWN));
    const rows = session.store.db
      .prepare(
        'SELECT seq, timestamp, action, path, size, entries FROM fs_events WHERE seq IN (SELECT value FROM json_each(?)) ORDER BY timestamp, seq',
      )
      .all(JSON.stringify(seqs)) as Row[];
    return {
      files: rows.map((f) => ({
        at: String(f.timestamp),
        action: String(f.action),
        path: String(f.path),
        size: num(f.size),
        entries: num(f.entries),
        link: { kind: 'file', seq: Number(f.seq) },
      })),
      fileCount: hi - lo,
    };
  }
}
