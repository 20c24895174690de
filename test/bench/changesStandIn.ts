import ignore, { type Ignore } from 'ignore';
import { readdirSync, readFileSync, realpathSync } from 'node:fs';
import { join } from 'node:path';
import type { ContentStore } from '../../electron/changes/contentStore.ts';
import { readWorkspaceEntry } from '../../electron/changes/workspaceEntry.ts';
import { summarisedFolder, type FileVersion, type FsChange } from '../../electron/recording/fsEventRows.ts';
import { openSessionDbForWriting } from '../../electron/store/sessionDb.ts';

// The changes bench's recording side, standing in for the app's own until it is merged: the same
// exports, signatures and work as electron/changes/workspaceBaseline.ts (recordWorkspaceBaseline)
// and electron/changes/changeContents.ts (ChangeContents), so the bench switches to them by its one
// import line, and this file goes. The work is what the app does per path: readWorkspaceEntry, a
// content store put, a workspace_files row; .gitignore files honoured, .git/ and node_modules/ left
// out, the store's puts and the manifest's rows each in one transaction.

interface Rules {
  readonly base: string;
  readonly ig: Ignore;
}

function rulesOf(root: string, folder: string, inherited: readonly Rules[]): readonly Rules[] {
  try {
    return [...inherited, { base: folder, ig: ignore().add(readFileSync(join(root, folder, '.gitignore'), 'utf8')) }];
  } catch {
    return inherited;
  }
}

/** git's precedence: the deepest .gitignore that says anything about a path decides. */
function ignored(rules: readonly Rules[], rel: string, isDir: boolean): boolean {
  for (let i = rules.length - 1; i >= 0; i--) {
    const { base, ig } = rules[i]!;
    const verdict = ig.test((base === '' ? rel : rel.slice(base.length + 1)) + (isDir ? '/' : ''));
    if (verdict.ignored) return true;
    if (verdict.unignored) return false;
  }
  return false;
}

export interface BaselineSummary {
  readonly at: string;
  readonly files: number;
  readonly bytes: number;
  readonly skipped: number;
}

export async function recordWorkspaceBaseline(dbPath: string, folder: string, store: ContentStore): Promise<BaselineSummary> {
  const root = realpathSync(folder);
  const at = new Date().toISOString();
  const rows: [string, number | null, number | null, string | null, string | null][] = [];
  let bytes = 0;
  let skipped = 0;
  const stack: { rel: string; rules: readonly Rules[] }[] = [{ rel: '', rules: rulesOf(root, '', []) }];
  store.batch(() => {
    while (stack.length > 0) {
      const dir = stack.pop()!;
      for (const dirent of readdirSync(join(root, dir.rel), { withFileTypes: true })) {
        const rel = dir.rel === '' ? dirent.name : `${dir.rel}/${dirent.name}`;
        const isDir = dirent.isDirectory();
        if ((isDir && summarisedFolder(rel, true) !== null) || ignored(dir.rules, rel, isDir)) {
          skipped++;
          continue;
        }
        if (isDir) {
          stack.push({ rel, rules: rulesOf(root, rel, dir.rules) });
          continue;
        }
        const entry = readWorkspaceEntry(root, rel);
        if (entry.kind !== 'file' && entry.kind !== 'symlink') {
          rows.push([rel, null, null, null, 'not read']);
          continue;
        }
        if (entry.content) store.put(entry.content, entry.hash);
        bytes += entry.size;
        rows.push([rel, entry.size, entry.mode, entry.hash, entry.content ? null : 'over the content cap: kept by hash only']);
      }
    }
  });
  const db = openSessionDbForWriting(dbPath);
  try {
    const insert = db.prepare('INSERT INTO workspace_files (path, size, mode, hash, note) VALUES (?, ?, ?, ?, ?)');
    db.transaction(() => {
      for (const row of rows) insert.run(...row);
    })();
  } finally {
    db.close();
  }
  return { at, files: rows.length, bytes, skipped };
}

/** What each reported change left in the workspace, read on the host and kept in the store. */
export class ChangeContents {
  constructor(
    readonly root: string,
    private readonly store: ContentStore,
  ) {}

  read(changes: readonly FsChange[]): Promise<FsChange[]> {
    return Promise.resolve(
      changes.map((change) => {
        if (change.action === 'deleted' || change.is_dir || summarisedFolder(change.path, false) !== null) return change;
        return { ...change, content: this.version(change.path) };
      }),
    );
  }

  private version(path: string): FileVersion | null {
    const entry = readWorkspaceEntry(this.root, path);
    if (entry.kind !== 'file' && entry.kind !== 'symlink') return null;
    if (entry.content) this.store.put(entry.content, entry.hash);
    return { hash: entry.hash, mode: entry.mode };
  }
}
