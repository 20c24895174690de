import { summarisedFolder } from '../changes/summarisedFolders.ts';
import type { FileVersion } from '../changes/workspaceEntry.ts';

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
  /**
   * What the host read at the path once the change arrived (the workspace is the host's folder):
   * the version now there, null when nothing readable is (gone again, not a file). Left out where
   * the host did not read it (a summarised folder, a session without a workspace baseline).
   */
  readonly content?: FileVersion | null;
  /** Why the host has no content of the path, or only its hash; left out when it kept it. */
  readonly contentNote?: string;
}

const ACTION_ORDER: readonly FsChange['action'][] = ['created', 'modified', 'deleted'];

export interface FsEventRow {
  readonly timestamp: string;
  readonly action: FsChange['action'];
  readonly path: string;
  readonly size: number | null;
  /** How many paths a summary row stands for; null on a row for one path. */
  readonly entries: number | null;
  readonly before_hash?: string | null;
  readonly after_hash?: string | null;
  readonly before_mode?: number | null;
  readonly after_mode?: number | null;
  readonly note?: string | null;
}

function sides(
  before: FileVersion | null,
  after: FileVersion | null,
): Pick<FsEventRow, 'before_hash' | 'after_hash' | 'before_mode' | 'after_mode'> {
  return {
    before_hash: before?.hash ?? null,
    after_hash: after?.hash ?? null,
    before_mode: before?.mode ?? null,
    after_mode: after?.mode ?? null,
  };
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
  /** Each file's last known version (the baseline's, then each change's), for the next change's before. */
  private readonly versions = new Map<string, FileVersion>();

  /** The versions the session starts from: its baseline, or on a resume, where its recording left off. */
  seed(versions: Iterable<readonly [string, FileVersion]>): void {
    for (const [path, version] of versions) this.versions.set(path, version);
  }

  /** A path the host wrote itself (a revert): its version from now on, or null where it removed the file. */
  wrote(path: string, version: FileVersion | null): void {
    if (version) this.versions.set(path, version);
    else this.versions.delete(path);
  }

  /** The rows to write now; summarised changes are held for `flush`. */
  take(changes: readonly FsChange[]): FsEventRow[] {
    const rows: FsEventRow[] = [];
    for (const change of changes) {
      const folder = summarisedFolder(change.path, change.is_dir);
      if (folder === null) {
        rows.push(...this.ownRows(change));
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

  /**
   * The row of a change to a path of its own, with its content before and after. A folder that
   * went (deleted, or moved out of the workspace) takes every file known under it along: the
   * agent reports the folder alone when it was moved away whole.
   */
  private ownRows(change: FsChange): FsEventRow[] {
    const timestamp = new Date(change.ts_ms).toISOString();
    const base = { timestamp, path: change.path, size: change.size, entries: null };
    if (change.action === 'deleted') {
      const gone = this.forget(change.path, change.is_dir);
      if (!change.is_dir) return [{ ...base, action: 'deleted', ...sides(gone.get(change.path) ?? null, null) }];
      return [
        { ...base, action: 'deleted' },
        ...[...gone].map(([path, before]) => ({
          timestamp,
          path,
          size: null,
          entries: null,
          action: 'deleted' as const,
          ...sides(before, null),
        })),
      ];
    }
    if (change.content === undefined || change.is_dir) return [{ ...base, action: change.action }];
    const before = this.versions.get(change.path) ?? null;
    const after = change.content;
    if (after) this.versions.set(change.path, after);
    else this.versions.delete(change.path);
    // An editor's save by rename arrives as a creation of a path that held a file: to a reader, a modification.
    const action = before && after ? 'modified' : before ? 'deleted' : 'created';
    return [{ ...base, action, ...sides(before, after), note: change.contentNote ?? null }];
  }

  /** Drops the known versions at `path` (and under it, for a folder), returning them by path. */
  private forget(path: string, isDir: boolean): Map<string, FileVersion> {
    const gone = new Map<string, FileVersion>();
    const own = this.versions.get(path);
    if (own && !isDir) gone.set(path, own);
    this.versions.delete(path);
    if (isDir) {
      const prefix = `${path}/`;
      for (const [known, version] of this.versions)
        if (known.startsWith(prefix)) {
          gone.set(known, version);
          this.versions.delete(known);
        }
    }
    return gone;
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
