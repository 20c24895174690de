// The guest's file changes as fs_events rows. Paths stay as the agent reports them, relative to
// /workspace. git and package managers write hundreds of files at a time under .git/ and
// node_modules/ (a commit's objects, an install's packages); one row each would bury the user's
// own changes, so what happens below those folders is summarised: one row per batch, folder and
// action, its path the folder ('node_modules/', 'web/.git/'), `entries` the number of paths it
// stands for and `size` their bytes. Summarised on the host, not in the agent: the rule is cheap to
// change here, and the agent's frames already carry every path.

/** A file change as the guest agent reports it in an fs event. */
export interface FsChange {
  readonly action: 'created' | 'modified' | 'deleted';
  readonly path: string;
  readonly size: number | null;
  readonly is_dir: boolean;
  readonly ts_ms: number;
}

/** Folders whose insides are summarised wherever they sit in the workspace. */
const SUMMARISED = new Set(['.git', 'node_modules']);
const ACTION_ORDER: readonly FsChange['action'][] = ['created', 'modified', 'deleted'];

export interface FsEventRow {
  readonly timestamp: string;
  readonly action: FsChange['action'];
  readonly path: string;
  readonly size: number | null;
  /** How many paths a summary row stands for; null on a row for one path. */
  readonly entries: number | null;
}

/** The summarised folder a change lies in ('node_modules/', 'web/.git/'), or null for a path of its own. */
export function summarisedFolder(path: string, isDir: boolean): string | null {
  const parts = path.split('/');
  const at = parts.findIndex((part) => SUMMARISED.has(part));
  if (at < 0) return null;
  // A file named .git is a worktree's or submodule's pointer: the user's own, one row.
  if (at === parts.length - 1 && !isDir) return null;
  return `${parts.slice(0, at + 1).join('/')}/`;
}

interface Summary {
  readonly folder: string;
  readonly action: FsChange['action'];
  entries: number;
  bytes: number | null;
  firstMs: number;
}

/**
 * Turns the agent's batches into rows: a change to a path of its own is a row at once; changes
 * inside a summarised folder are counted until `flush`, which the session calls once the batch's
 * frames have stopped coming (a batch of thousands spans several frames).
 */
export class FsEventRows {
  private readonly pending = new Map<string, Summary>();

  /** The rows to write now; summarised changes are held for `flush`. */
  take(changes: readonly FsChange[]): FsEventRow[] {
    const rows: FsEventRow[] = [];
    for (const change of changes) {
      const folder = summarisedFolder(change.path, change.is_dir);
      if (folder === null) {
        rows.push({
          timestamp: new Date(change.ts_ms).toISOString(),
          action: change.action,
          path: change.path,
          size: change.size,
          entries: null,
        });
        continue;
      }
      const key = `${change.action}\0${folder}`;
      const summary = this.pending.get(key) ?? { folder, action: change.action, entries: 0, bytes: null, firstMs: change.ts_ms };
      summary.entries += 1;
      summary.firstMs = Math.min(summary.firstMs, change.ts_ms);
      if (!change.is_dir && change.size !== null) summary.bytes = (summary.bytes ?? 0) + change.size;
      this.pending.set(key, summary);
    }
    return rows;
  }

  /** Changes are being held for a summary. */
  get holding(): boolean {
    return this.pending.size > 0;
  }

  /** One row per folder and action for what has been held, by folder, then created, modified, deleted. */
  flush(): FsEventRow[] {
    const summaries = [...this.pending.values()].sort(
      (a, b) => (a.folder < b.folder ? -1 : a.folder > b.folder ? 1 : 0) || ACTION_ORDER.indexOf(a.action) - ACTION_ORDER.indexOf(b.action),
    );
    this.pending.clear();
    return summaries.map((s) => ({
      timestamp: new Date(s.firstMs).toISOString(),
      action: s.action,
      path: s.folder,
      size: s.bytes,
      entries: s.entries,
    }));
  }
}
