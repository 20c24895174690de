import type { SessionSummary, TableKind } from '../contract/appContract.ts';
import type { SessionId } from '../contract/ids.ts';
import type { EventTables } from '../sessions/eventTable.ts';
import type { ChangeFeed } from '../sessions/changeFeed.ts';
import type { SessionStores } from '../sessions/sessionStores.ts';

// What live.subscribe starts: on each round of the change feed the list is recomputed and the
// sessions whose row changed are sent as `session.changed`; the subscribed sessions' session.db
// files are probed with data_version (a counter SQLite bumps on another connection's commit, so an
// idle probe is one pragma) and the views that got rows are sent as `session.events`. A commit by
// a writer in this process is followed at once, without waiting for the round. Nothing is sent
// when nothing moved.

/** Where the watch sends what moved: the window's `session.changed` and `session.events`. */
export interface WindowSink {
  changed(session: SessionSummary): void;
  events(id: SessionId, kinds: TableKind[], lastSeq: number): void;
}

export interface LiveSources {
  list(): SessionSummary[];
  readonly stores: SessionStores;
  readonly tables: EventTables;
}

/** Sessions a window follows at once; the oldest subscription is dropped past it. */
const MAX_FOLLOWED = 32;

interface Followed {
  version: number;
  newest: Partial<Record<TableKind, number>>;
}

/** A row's identity for change detection: a running session's duration moves every tick and is not a change. */
function fingerprint(s: SessionSummary): string {
  return JSON.stringify({ ...s, durationMs: s.status === 'running' ? 0 : s.durationMs });
}

export class LiveWatch {
  private unlisten: (() => void) | null = null;
  private seen: Map<string, string> | null = null;
  private readonly followed = new Map<SessionId, Followed | null>();
  private busy = false;
  /** The last error a tick hit (a tick never throws: one bad file must not stop the list). */
  lastError: string | null = null;

  constructor(
    private readonly sources: LiveSources,
    private readonly sink: WindowSink,
    private readonly changes: ChangeFeed,
  ) {}

  start(): void {
    if (this.unlisten) return;
    this.seen = new Map(this.sources.list().map((s) => [s.id, fingerprint(s)]));
    this.unlisten = this.changes.listen((committed) => (committed === null ? this.tick() : this.committed(committed)));
  }

  stop(): void {
    this.unlisten?.();
    this.unlisten = null;
    this.seen = null;
  }

  follow(id: SessionId): void {
    this.followed.delete(id);
    this.followed.set(id, null);
    for (const old of this.followed.keys()) {
      if (this.followed.size <= MAX_FOLLOWED) break;
      this.followed.delete(old);
    }
    // The baseline is taken now, as the window loads its pages: the next commit is news, even one
    // announced before the feed's next round.
    this.committed(id);
  }

  /** One round; exposed so tests and a "refresh now" need not wait for the feed. */
  tick(): void {
    if (this.busy) return;
    this.busy = true;
    try {
      this.listTick();
      for (const id of this.followed.keys()) this.eventsTick(id);
      this.lastError = null;
    } catch (err) {
      this.lastError = err instanceof Error ? err.message : String(err);
    } finally {
      this.busy = false;
    }
  }

  /** A writer of this process committed to the session: its views are looked at now, the list at the next round. */
  private committed(id: SessionId): void {
    if (this.busy || !this.followed.has(id)) return;
    this.busy = true;
    try {
      this.eventsTick(id);
    } catch (err) {
      this.lastError = err instanceof Error ? err.message : String(err);
    } finally {
      this.busy = false;
    }
  }

  private listTick(): void {
    const seen = (this.seen ??= new Map());
    for (const s of this.sources.list()) {
      const print = fingerprint(s);
      if (seen.get(s.id) === print) continue;
      seen.set(s.id, print);
      this.sink.changed(s);
    }
  }

  private eventsTick(id: SessionId): void {
    let session;
    try {
      session = this.sources.stores.get(id);
    } catch {
      return; // not on disk (yet): looked at again next tick
    }
    const version = session.store.dataVersion();
    const known = this.followed.get(id);
    if (known && known.version === version) return;
    const newest = this.sources.tables.newest(session);
    this.followed.set(id, { version, newest });
    // The first look at a session is its baseline: the window has just loaded its pages.
    if (!known) return;
    const kinds = (Object.keys(newest) as TableKind[]).filter((k) => (newest[k] ?? 0) > (known.newest[k] ?? 0));
    if (kinds.length === 0) return;
    const lastSeq = Math.max(0, ...kinds.filter((k) => k !== 'exec').map((k) => newest[k] ?? 0), session.store.newestSeq());
    this.sink.events(id, kinds, lastSeq);
  }
}
