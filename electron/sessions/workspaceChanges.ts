import type Database from 'better-sqlite3';
import type { ChangeTarget, FileDiff, WorkspaceChange, WorkspaceChangePage } from '../contract/appContract.ts';
import {
  afterOf,
  beforeOf,
  revertSteps,
  sameState,
  spansOf,
  underPath,
  type ChangeRow,
  type PathSpan,
  type PathState,
  type RevertStep,
} from '../changes/changeStates.ts';
import { KEPT_CONTENT_MAX, type ContentStore } from '../changes/contentStore.ts';
import { fileDiffOf, readSpan } from '../changes/fileDiff.ts';
import { attribute, namedPath, type ToolWindow } from './changeSource.ts';
import type { Conversations } from './conversation.ts';
import type { OpenSession } from './sessionStores.ts';
import { readTimeline } from './timeline.ts';
import { columnsOf } from '../store/tableColumns.ts';

// sessions.changes, sessions.diff and what `capsem diff` and `capsem revert` work from: the
// session's workspace changes (fs_events) in order, each with the tool call that made it (the
// timeline's tool spans, changeSource.ts's rule) and its Conversation turn, and the paths a target
// (a change, a turn, some paths, the whole session) moved from one content to another. Built once
// per commit and kept, as the Conversation's outline is.

export class ChangeTargetError extends Error {
  override name = 'ChangeTargetError';
}

export interface AttributedChange {
  readonly row: ChangeRow;
  readonly source: WorkspaceChange['source'];
}

interface Changes {
  readonly version: number;
  readonly ended: boolean;
  readonly list: readonly AttributedChange[];
}

/** The change rows; a session.db from before v8 has no content columns, and its changes read as not kept. */
function rowsQuery(columns: ReadonlySet<string>): string {
  const column = (name: string, as: string): string => `${columns.has(name) ? name : 'NULL'} AS ${as}`;
  return `SELECT seq, timestamp AS at, action, path, entries, size, ${column('before_hash', 'beforeHash')}, ${column('after_hash', 'afterHash')},
    ${column('before_mode', 'beforeMode')}, ${column('after_mode', 'afterMode')}, ${column('note', 'note')} FROM fs_events ORDER BY seq`;
}

const TOOL_CALLS = 'SELECT call_id AS callId, arguments, model_call_id AS modelCall FROM tool_calls ORDER BY seq';

const MB = KEPT_CONTENT_MAX / (1 << 20);

export class WorkspaceChanges {
  private readonly kept = new WeakMap<Database.Database, Changes>();

  constructor(private readonly conversations: Conversations) {}

  /** Every change of the session, in order, with its source. */
  all(session: OpenSession, ended: boolean): readonly AttributedChange[] {
    const db = session.store.db;
    const version = session.store.dataVersion();
    const kept = this.kept.get(db);
    if (kept && kept.version === version && kept.ended === ended) return kept.list;
    const list = this.read(session, ended);
    this.kept.set(db, { version, ended, list });
    return list;
  }

  page(
    session: OpenSession,
    ended: boolean,
    store: ContentStore,
    query: { offset: number; limit: number; turn: number | null; path: string | null },
  ): WorkspaceChangePage {
    const chosen = this.all(session, ended).filter(
      (c) => (query.turn === null || c.source?.turn === query.turn) && (query.path === null || underPath(c.row.path, query.path)),
    );
    const slice = chosen.slice(query.offset, query.offset + query.limit);
    const end = query.offset + slice.length;
    return {
      changes: slice.map((c) => described(c, store)),
      total: chosen.length,
      nextOffset: end < chosen.length ? end : null,
      baseline: baselineOf(session),
    };
  }

  /** The paths `target` changed, each from its state before it to after it; unchanged ones left out. */
  spans(session: OpenSession, ended: boolean, target: ChangeTarget): PathSpan[] {
    return spansOf(this.rowsOf(session, ended, target)).filter((s) => !sameEnds(s.before, s.after));
  }

  diff(session: OpenSession, ended: boolean, store: ContentStore, target: ChangeTarget): FileDiff[] {
    return this.spans(session, ended, target).map((span) => fileDiffOf(readSpan(span, store), span));
  }

  /**
   * What undoing `target` puts back: a change alone; a turn with every change after its first (the
   * tree as it was before the turn); some paths, or the whole session, back to before the session.
   */
  revertSteps(session: OpenSession, ended: boolean, target: ChangeTarget): RevertStep[] {
    if (target.kind !== 'turn') return revertSteps(this.rowsOf(session, ended, target));
    const all = this.all(session, ended);
    const first = all.find((c) => c.source?.turn === target.turn);
    if (!first) throw new ChangeTargetError(`turn ${target.turn} changed no file in the workspace`);
    return revertSteps(all.filter((c) => c.row.seq >= first.row.seq).map((c) => c.row));
  }

  private rowsOf(session: OpenSession, ended: boolean, target: ChangeTarget): ChangeRow[] {
    const all = this.all(session, ended);
    switch (target.kind) {
      case 'change': {
        const found = all.find((c) => c.row.seq === target.seq);
        if (!found) throw new ChangeTargetError(`the session has no change ${target.seq} (capsem diff lists none by that id)`);
        if (found.row.entries !== null)
          throw new ChangeTargetError(
            `change ${target.seq} sums up ${found.row.entries} changes inside ${found.row.path}; their contents are not kept`,
          );
        return [found.row];
      }
      case 'turn':
        return all.filter((c) => c.source?.turn === target.turn).map((c) => c.row);
      case 'paths':
        return all.filter((c) => target.paths.some((p) => underPath(c.row.path, p))).map((c) => c.row);
      case 'session':
        return all.map((c) => c.row);
    }
  }

  private read(session: OpenSession, ended: boolean): AttributedChange[] {
    const tables = session.tables();
    if (!tables.has('fs_events')) return [];
    const db = session.store.db;
    const rows = db.prepare(rowsQuery(columnsOf(db, 'fs_events'))).all() as ChangeRow[];
    const tools = this.toolWindows(session, ended);
    const sources = attribute(
      rows.map((r) => ({ path: r.path, t: Date.parse(r.at) })),
      tools,
    );
    return rows.map((row, i) => {
      const tool = row.action === 'restored' ? null : sources[i]!;
      return {
        row,
        source: tool && { callId: tool.callId, toolName: tool.name, preview: tool.preview, turn: tool.turn, agent: tool.agent },
      };
    });
  }

  /** The timeline's tool spans that a Conversation turn asked for, with the path each names. */
  private toolWindows(session: OpenSession, ended: boolean): ToolWindow[] {
    const tables = session.tables();
    if (!['tool_calls', 'tool_responses', 'net_events', 'model_calls'].every((t) => tables.has(t))) return [];
    const calls = new Map<string, { arguments: string | null; modelCall: number | null }>();
    for (const c of session.store.db.prepare(TOOL_CALLS).all() as { callId: string; arguments: string | null; modelCall: number | null }[])
      if (!calls.has(c.callId)) calls.set(c.callId, c);
    const turns = this.conversations.turnIndexes(session, ended);
    const windows: ToolWindow[] = [];
    for (const span of readTimeline(session.store, ended).tools) {
      const call = calls.get(span.id);
      const turn = call?.modelCall != null ? turns.get(call.modelCall) : undefined;
      if (turn === undefined) continue;
      windows.push({
        callId: span.id,
        name: span.name,
        preview: span.preview ?? null,
        agent: span.agent,
        turn,
        start: Date.parse(span.start),
        end: span.end === undefined ? Infinity : Date.parse(span.end),
        path: namedPath(call?.arguments ?? null),
      });
    }
    return windows;
  }
}

/** A path the stretch left as it found it; two unknown sides may still differ, so they show. */
const sameEnds = (a: PathState, b: PathState): boolean => a !== 'unknown' && sameState(a, b);

/** Why a side of a change cannot be shown, or null when it can. */
function sideNote(state: PathState, size: number | null, store: ContentStore, side: 'before' | 'after'): string | null {
  if (state === 'absent') return null;
  if (state === 'unknown') return `its content ${side} was not recorded`;
  if (store.has(state.hash)) return null;
  return size !== null && size > KEPT_CONTENT_MAX
    ? `its content ${side} is over ${MB} MiB and kept by hash only`
    : `its content ${side} is not kept (binary, over ${MB} MiB, or unreadable)`;
}

function described({ row, source }: AttributedChange, store: ContentStore): WorkspaceChange {
  const base = {
    seq: row.seq,
    at: row.at,
    action: row.action,
    path: row.path,
    entries: row.entries,
    size: row.size,
    beforeHash: row.beforeHash,
    afterHash: row.afterHash,
    source,
  };
  if (row.entries !== null)
    return { ...base, diffable: false, note: `${row.entries} changes inside ${row.path}, summed up; their contents are not kept` };
  if (row.action === 'deleted' && row.beforeHash === null)
    return {
      ...base,
      diffable: false,
      note: 'a folder, or a file whose content was not recorded; files known inside it have rows of their own',
    };
  const after = sideNote(afterOf(row), row.size, store, 'after');
  // What the host said when it read the path after the change says why better than a guess from the store.
  const note = sideNote(beforeOf(row), row.size, store, 'before') ?? (after === null ? null : (row.note ?? after));
  return { ...base, diffable: note === null, note };
}

function baselineOf(session: OpenSession): WorkspaceChangePage['baseline'] {
  if (!session.tables().has('workspace_files')) return null;
  const db = session.store.db;
  const files = (db.prepare('SELECT count(*) FROM workspace_files').pluck().get() as number) ?? 0;
  if (files === 0) return null;
  const at =
    (db.prepare("SELECT value FROM session_meta WHERE key = 'created_at'").pluck().get() as string | undefined) ??
    new Date(0).toISOString();
  return { at, files };
}
