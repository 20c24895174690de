import { basename, dirname } from 'node:path';
import { isSessionId, type SessionId } from '../contract/ids.ts';
import type { CapsemHome } from '../store/paths.ts';
import { sessionCommits } from '../store/sessionCommits.ts';

// When to look at sessions again, for every live reader (the window's watch, the API's SSE tail).
// A commit by a writer in this process names its session the moment it lands; a writer in another
// process is only seen through SQLite's data_version, so every `intervalMs` listeners are told to
// probe it (one pragma per session when nothing moved). However many listen, there is one timer and
// one subscription to the commits, and they run only while someone listens.

/** A session a writer of this process just committed to, or null: probe every session you follow. */
export type ChangeListener = (committed: SessionId | null) => void;

export class ChangeFeed {
  private readonly listeners = new Set<ChangeListener>();
  private timer: NodeJS.Timeout | null = null;
  /** Sessions committed to since the last announcement: a burst of commits is announced once per turn. */
  private readonly committed = new Set<SessionId>();
  private announcing: NodeJS.Immediate | null = null;

  constructor(
    private readonly home: CapsemHome,
    readonly intervalMs: number,
  ) {}

  listen(listener: ChangeListener): () => void {
    this.listeners.add(listener);
    if (this.listeners.size === 1) this.start();
    return () => {
      if (this.listeners.delete(listener) && this.listeners.size === 0) this.stop();
    };
  }

  private start(): void {
    this.timer = setInterval(() => this.announce(null), this.intervalMs);
    this.timer.unref();
    sessionCommits.on('commit', this.onCommit);
  }

  private stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    sessionCommits.off('commit', this.onCommit);
    if (this.announcing) clearImmediate(this.announcing);
    this.announcing = null;
    this.committed.clear();
  }

  /** Called inside the writer's message handler: it only notes the session, and never throws. */
  private readonly onCommit = (dbPath: string): void => {
    const dir = dirname(dbPath);
    const id = basename(dir);
    if (dirname(dir) !== this.home.sessionsRunDir || !isSessionId(id)) return;
    this.committed.add(id);
    this.announcing ??= setImmediate(() => {
      this.announcing = null;
      const ids = [...this.committed];
      this.committed.clear();
      for (const committed of ids) this.announce(committed);
    });
  };

  private announce(committed: SessionId | null): void {
    for (const listener of [...this.listeners]) {
      try {
        listener(committed);
      } catch {
        // One reader's failure must not keep the news from the others.
      }
    }
  }
}
