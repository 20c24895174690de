import type Database from 'better-sqlite3';
import { existsSync } from 'node:fs';
import type { SessionEvent } from '../contract/sessionEvent.ts';
import type { SessionId } from '../contract/ids.ts';
import { sessionPaths, type CapsemHome } from '../store/paths.ts';
import type { ChangeFeed } from '../sessions/changeFeed.ts';
import { SessionEventStore } from '../sessions/sessionEventStore.ts';

// The live tail behind GET /v1/events. The feed notices commits to running sessions (announced by
// a writer in this process, else SQLite's data_version on the change feed's rounds), reads each
// new event once, and the hub fans it out. The feed reads the database at the pace its subscribers
// take events, so nothing piles up in memory; a subscriber that stops taking them is dropped and
// counted. The writer and the proxy never wait on any of this: the feed is just another reader of
// a WAL database.

export interface LiveSink {
  write(frame: string): void;
  /** Bytes written but not yet taken by the client. */
  buffered(): number;
  close(): void;
}

interface Subscriber {
  readonly sessionId: string | undefined;
  readonly sink: LiveSink;
  /** The frames sent to this connection: a frame's `id:` counts per connection, it is not the seq. */
  sent: number;
  /** The lowest buffered count seen while waiting on it, and when it last went down. */
  mark: number;
  markAt: number;
}

export interface HubLimits {
  /** A subscriber holding more than this unread is waited on before more is published. */
  readonly maxBufferedBytes: number;
  /** A subscriber waited on that takes nothing for this long is dropped and counted. */
  readonly stallMs: number;
}

export class LiveEventHub {
  private readonly subscribers = new Set<Subscriber>();
  private readonly limits: HubLimits;
  dropped = 0;
  published = 0;

  constructor(limits: Partial<HubLimits> = {}) {
    this.limits = { maxBufferedBytes: 1 << 20, stallMs: 2000, ...limits };
  }

  get size(): number {
    return this.subscribers.size;
  }

  subscribe(sessionId: string | undefined, sink: LiveSink): () => void {
    const sub: Subscriber = { sessionId, sink, sent: 0, mark: 0, markAt: Date.now() };
    this.subscribers.add(sub);
    return () => this.subscribers.delete(sub);
  }

  private drop(sub: Subscriber): void {
    this.subscribers.delete(sub);
    this.dropped += 1;
    sub.sink.close();
  }

  publish(event: SessionEvent): void {
    this.published += 1;
    let data: string | null = null;
    for (const sub of this.subscribers) {
      if (sub.sessionId !== undefined && sub.sessionId !== event.sessionId) continue;
      data ??= JSON.stringify(event);
      sub.sent += 1;
      sub.sink.write(`event: session-event\nid: ${sub.sent}\ndata: ${data}\n\n`);
    }
  }

  /**
   * Resolves once every subscriber has taken its backlog down to the limit. One that takes
   * nothing for `stallMs` is dropped, so it never holds the others back for longer than that.
   */
  async settle(): Promise<void> {
    const started = Date.now();
    for (const sub of this.subscribers) {
      sub.mark = sub.sink.buffered();
      sub.markAt = started;
    }
    for (;;) {
      const behind = [...this.subscribers].filter((sub) => sub.sink.buffered() > this.limits.maxBufferedBytes);
      if (behind.length === 0) return;
      await new Promise((resolve) => setTimeout(resolve, 10));
      const now = Date.now();
      for (const sub of behind) {
        const buffered = sub.sink.buffered();
        if (buffered < sub.mark) {
          sub.mark = buffered;
          sub.markAt = now;
        } else if (now - sub.markAt > this.limits.stallMs) this.drop(sub);
      }
    }
  }
}

const DRAIN_SLICE = 100;

interface Watched {
  store: SessionEventStore;
  lastSeq: number;
  version: number;
}

export class LiveEventFeed {
  private readonly watched = new Map<SessionId, Watched>();
  private unlisten: (() => void) | null = null;
  /** Sessions created after the feed started are followed from their first event, not their newest. */
  private readonly followSince = Date.now();

  constructor(
    private readonly home: CapsemHome,
    private readonly mainDb: Database.Database,
    private readonly hub: LiveEventHub,
    private readonly changes: ChangeFeed,
  ) {}

  start(): void {
    this.unlisten ??= this.changes.listen(() => this.tick());
  }

  stop(): void {
    this.unlisten?.();
    this.unlisten = null;
    for (const w of this.watched.values()) w.store.close();
    this.watched.clear();
  }

  /** Starts following a session: from its first event if it began after the feed did, else from its newest. */
  private watch(sessionId: SessionId, createdAt: string): Watched | undefined {
    const seen = this.watched.get(sessionId);
    if (seen) return seen;
    const { dbPath } = sessionPaths(this.home, sessionId);
    if (!existsSync(dbPath)) return undefined;
    const store = SessionEventStore.open(sessionId, dbPath);
    // A writer that has created the file but not yet its schema: look again on the next tick.
    if (store.db.pragma('user_version', { simple: true }) === 0) {
      store.close();
      return undefined;
    }
    const fresh = Date.parse(createdAt) >= this.followSince - 1000;
    const w = { store, lastSeq: fresh ? 0 : store.newestEventSeq(), version: -1 };
    this.watched.set(sessionId, w);
    return w;
  }

  /**
   * Publishes what is new, a slice at a time with a turn of the event loop between slices, so
   * sockets flush as it goes and a burst does not pile up in every subscriber's buffer at once.
   */
  private async drain(w: Watched): Promise<void> {
    for (;;) {
      const refs = w.store.after(w.lastSeq, DRAIN_SLICE);
      for (const ref of refs) {
        this.hub.publish(w.store.event(ref, { full: true }));
        w.lastSeq = ref.seq;
      }
      await this.hub.settle();
      if (refs.length < DRAIN_SLICE) break;
    }
    w.version = w.store.dataVersion();
  }

  private busy = false;
  /** A change announced while a round ran: one more round follows it, so a commit is never left for the next poll. */
  private again = false;
  errors = 0;
  lastError: string | null = null;

  tick(): void {
    if (this.busy) {
      this.again = true;
      return;
    }
    this.busy = true;
    this.again = false;
    this.follow()
      .catch((err: unknown) => {
        // A session db that vanished or is mid-migration must not stop the tail for the others.
        for (const w of this.watched.values()) w.store.close();
        this.watched.clear();
        this.errors += 1;
        this.lastError = (err as Error).message;
      })
      .finally(() => {
        this.busy = false;
        if (this.again && this.unlisten) this.tick();
      });
  }

  private async follow(): Promise<void> {
    const rows = this.mainDb.prepare("SELECT id, created_at AS createdAt FROM sessions WHERE status = 'running'").all() as {
      id: SessionId;
      createdAt: string;
    }[];
    const running = new Set(rows.map((r) => r.id));
    for (const { id, createdAt } of rows) {
      const w = this.watch(id, createdAt);
      if (!w || w.store.dataVersion() === w.version) continue;
      // With nobody listening there is nothing to build: just move past what was committed.
      if (this.hub.size === 0) {
        w.lastSeq = w.store.newestEventSeq();
        w.version = w.store.dataVersion();
      } else await this.drain(w);
    }
    for (const [id, w] of this.watched) {
      if (running.has(id)) continue;
      await this.drain(w);
      w.store.close();
      this.watched.delete(id);
    }
  }
}
