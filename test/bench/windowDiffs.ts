import { ContentStore } from '../../electron/changes/contentStore.ts';
import type { FileDiff } from '../../electron/contract/appContract.ts';
import type { SessionId } from '../../electron/contract/ids.ts';
import { LiveWatch } from '../../electron/app/liveWatch.ts';
import { ChangeFeed } from '../../electron/sessions/changeFeed.ts';
import { Conversations } from '../../electron/sessions/conversation.ts';
import { EventTables } from '../../electron/sessions/eventTable.ts';
import { SessionStores } from '../../electron/sessions/sessionStores.ts';
import { WorkspaceChanges } from '../../electron/sessions/workspaceChanges.ts';
import type { CapsemHome } from '../../electron/store/paths.ts';

// A new workspace change's diff, reached the way the window reaches it: the live watch (a commit by
// a writer of this process at once, another process's on its next round) sends session.events with
// 'file'; the Files view reads sessions.changes and then sessions.diff of the change, both through
// WorkspaceChanges over a read-only SessionStores connection of its own, as appCore.ts's handlers do.

/** The app's round for writers it cannot hear commit (AppCore's liveIntervalMs). */
const LIVE_INTERVAL_MS = 500;
/** Rows a Files view page asks for. */
const PAGE = 200;

export interface ShownDiff {
  readonly seq: number;
  readonly diffs: FileDiff[];
}

interface Waiting {
  readonly path: string;
  readonly after: number;
  readonly resolve: (shown: ShownDiff) => void;
  readonly reject: (err: Error) => void;
}

export class WindowDiffs {
  private readonly stores: SessionStores;
  private readonly changes = new WorkspaceChanges(new Conversations());
  private readonly contents: ContentStore;
  private readonly watch: LiveWatch;
  private waiting: Waiting | null = null;

  constructor(
    home: CapsemHome,
    private readonly id: SessionId,
  ) {
    this.stores = new SessionStores(home);
    this.contents = ContentStore.open(home);
    this.watch = new LiveWatch(
      { list: () => [], stores: this.stores, tables: new EventTables() },
      { changed: () => {}, events: (_id, kinds) => kinds.includes('file') && this.look() },
      new ChangeFeed(home, LIVE_INTERVAL_MS),
    );
    this.watch.start();
    this.watch.follow(id);
  }

  /** The diff of the first change of `path` after change `after`, once the window has it to show. */
  next(path: string, after: number, timeoutMs: number): Promise<ShownDiff> {
    if (this.waiting) throw new Error('one diff is awaited at a time');
    return new Promise<ShownDiff>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiting = null;
        reject(new Error(`no change of ${path} after change ${after} reached the window in ${timeoutMs} ms`));
      }, timeoutMs);
      const settled = (): void => clearTimeout(timer);
      this.waiting = {
        path,
        after,
        resolve: (shown) => (settled(), resolve(shown)),
        reject: (err) => (settled(), reject(err)),
      };
      this.look();
    });
  }

  close(): void {
    this.watch.stop();
    this.waiting?.reject(new Error('the window was closed'));
    this.waiting = null;
    this.stores.close();
    this.contents.close();
  }

  private look(): void {
    const waiting = this.waiting;
    if (!waiting) return;
    try {
      const session = this.stores.get(this.id);
      const page = this.changes.page(session, false, this.contents, { offset: 0, limit: PAGE, turn: null, path: waiting.path });
      const change = page.changes.find((c) => c.seq > waiting.after && c.path === waiting.path);
      if (!change) {
        if (page.nextOffset !== null) throw new Error(`more than ${PAGE} changes of ${waiting.path}: the bench reads one page`);
        return;
      }
      const diffs = this.changes.diff(session, false, this.contents, { kind: 'change', seq: change.seq });
      this.waiting = null;
      waiting.resolve({ seq: change.seq, diffs });
    } catch (err) {
      this.waiting = null;
      waiting.reject(err as Error);
    }
  }
}
