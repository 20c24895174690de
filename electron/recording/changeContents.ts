import { existsSync } from 'node:fs';
import type { ContentStore } from '../changes/contentStore.ts';
import { summarisedFolder } from '../changes/summarisedFolders.ts';
import { readWorkspaceEntry, type FileVersion } from '../changes/workspaceEntry.ts';
import type { FsChange } from './fsEventRows.ts';

// What a reported change left in the workspace, read on the host as the change arrives: the
// workspace is the host's folder (shared with the guest), so the host reads what the guest wrote
// and keeps it in the content store; the change row names it by hash. The guest only says which
// path changed, never what it holds.

/** Contents being compressed at once: the host's cores kept busy, memory bounded (each at most the cap). */
const PUTS_IN_FLIGHT = 4;

const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** A change the host reads: a file or symlink of its own that was created or modified. */
const readable = (c: FsChange): boolean => c.action !== 'deleted' && !c.is_dir && summarisedFolder(c.path, false) === null;

/** What the host read at a path: its version (null when nothing readable is there), and why it kept no content, if it did not. */
interface Read {
  readonly version: FileVersion | null;
  readonly note: string | null;
}

export class ChangeContents {
  private goneSaid = false;

  /**
   * @param root the workspace's real path (realpathSync), as readWorkspaceEntry wants it
   * @param onStatus told once when the workspace itself has gone (deleted on the host while the session runs)
   */
  constructor(
    readonly root: string,
    private readonly store: ContentStore,
    private readonly onStatus: (line: string) => void = () => {},
  ) {}

  /**
   * `changes` with what each path now holds: its version ({hash, mode}, the content kept when
   * under the cap), or null when nothing readable is there (gone again, not a file, a path through
   * a symlink out of the workspace, a hostile name). A path named twice in a batch is read once.
   */
  async read(changes: readonly FsChange[]): Promise<FsChange[]> {
    const read = new Map<string, Read>();
    const puts: Promise<unknown>[] = [];
    let failure: unknown = null;
    for (const change of changes) {
      if (!readable(change) || read.has(change.path)) continue;
      read.set(
        change.path,
        this.version(change.path, (put) => puts.push(put.catch((err: unknown) => (failure ??= err)))),
      );
      // A file at a time on this thread (read and hash); compression runs beside it.
      if (puts.length >= PUTS_IN_FLIGHT) await puts.shift();
      else await nextTurn();
    }
    await Promise.all(puts);
    if (failure !== null) throw failure;
    return changes.map((change) => {
      if (!readable(change)) return change;
      const { version, note } = read.get(change.path) ?? { version: null, note: null };
      return { ...change, content: version, ...(note === null ? {} : { contentNote: note }) };
    });
  }

  private version(path: string, keeping: (put: Promise<unknown>) => void): Read {
    let entry: ReturnType<typeof readWorkspaceEntry>;
    try {
      entry = readWorkspaceEntry(this.root, path);
    } catch (err) {
      // A name the host refuses to join to the folder: its row is written, without content.
      return { version: null, note: `not read: ${(err as Error).message}` };
    }
    if (entry.kind === 'file' || entry.kind === 'symlink') {
      if (entry.content) keeping(this.store.putAsync(entry.content, entry.hash));
      const note = entry.content ? null : `${entry.size.toLocaleString('en-US')} bytes, over the content cap: kept by hash only`;
      return { version: { hash: entry.hash, mode: entry.mode }, note };
    }
    if (entry.kind === 'other') return { version: null, note: `not read: ${entry.reason}` };
    if (entry.kind === 'missing' && !this.goneSaid && !existsSync(this.root)) {
      this.goneSaid = true;
      this.onStatus(`the workspace ${this.root} is gone: its changes are still recorded, without their content`);
    }
    return { version: null, note: null };
  }
}
