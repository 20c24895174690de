import type Database from 'better-sqlite3';
import ignore, { type Ignore } from 'ignore';
import { readdirSync, readFileSync, realpathSync, type Dirent } from 'node:fs';
import { join } from 'node:path';
import { summarisedFolder } from './summarisedFolders.ts';
import type { RowOf } from '../store/sessionSchema.ts';
import { openSessionDbForWriting } from '../store/sessionDb.ts';
import type { ContentStore } from './contentStore.ts';
import { readWorkspaceEntry, type FileVersion } from './workspaceEntry.ts';

// The workspace as the session found it: every file's path, size, git mode and content hash (the
// manifest, workspace_files), and each content up to the store's cap in the content store. Walked
// on the host before the guest is given the folder, the way `git add -A` would see it: .gitignore
// files honoured (the root's and nested ones), .git/ and node_modules/ left out (the folders
// fsEventRows summarises), symlinks kept as their target and never followed.

/** session_meta's key for when the baseline was taken and what it holds (JSON of BaselineSummary). */
export const BASELINE_META_KEY = 'workspace_baseline';

export type BaselineFile = RowOf<'workspace_files'>;

export interface BaselineSummary {
  readonly at: string;
  /** Manifest rows: files and symlinks, and paths named with a note (unreadable, not a file). */
  readonly files: number;
  /** Bytes of the files read. */
  readonly bytes: number;
  /** Paths left out: ignored by a .gitignore, or inside .git/ or node_modules/ (a folder counts once). */
  readonly skipped: number;
}

export interface WorkspaceBaseline extends BaselineSummary {
  readonly manifest: readonly BaselineFile[];
}

export interface ScanOptions {
  /** Progress every so many files ("recording the workspace: 12,000 files…"). */
  readonly onStatus?: (line: string) => void;
}

/** How long the walk holds the thread before letting the rest of the process (a boot beside it) run. */
const SLICE_MS = 20;
const STATUS_EVERY_MS = 1000;
/** Contents read before they are compressed into the store, one transaction: bounds a slice's memory and its time (about 0.1 s). */
const KEEP_BATCH_BYTES = 4 << 20;

interface Folder {
  readonly rel: string;
  /** The .gitignore files in force here, deepest last, each with the folder it sits in. */
  readonly rules: readonly { readonly base: string; readonly ig: Ignore }[];
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** A name as text, or null when it is not valid UTF-8 (a path stored as text could not name it again). */
function nameOf(raw: Buffer): string | null {
  try {
    return utf8.decode(raw);
  } catch {
    return null;
  }
}

/** git's precedence: the deepest .gitignore that says anything about a path decides. */
function ignored(rules: Folder['rules'], rel: string, isDir: boolean): boolean {
  for (let i = rules.length - 1; i >= 0; i--) {
    const { base, ig } = rules[i]!;
    const sub = (base === '' ? rel : rel.slice(base.length + 1)) + (isDir ? '/' : '');
    const verdict = ig.test(sub);
    if (verdict.ignored) return true;
    if (verdict.unignored) return false;
  }
  return false;
}

function rulesOf(root: string, folder: string, inherited: Folder['rules']): Folder['rules'] {
  let text: string;
  try {
    text = readFileSync(join(root, folder, '.gitignore'), 'utf8');
  } catch {
    return inherited;
  }
  return [...inherited, { base: folder, ig: ignore().add(text) }];
}

const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/**
 * Walks `folder` and keeps what it holds in `store`. Yields to the event loop every few
 * milliseconds, so a session's boot beside it goes on; a folder or file that cannot be read is a
 * manifest row with a note, never a failure of the whole.
 */
export async function scanWorkspace(folder: string, store: ContentStore, options: ScanOptions = {}): Promise<WorkspaceBaseline> {
  const root = realpathSync(folder);
  const at = new Date().toISOString();
  const manifest: BaselineFile[] = [];
  let bytes = 0;
  let skipped = 0;
  const stack: Folder[] = [{ rel: '', rules: rulesOf(root, '', []) }];
  // Contents read and not yet in the store.
  let toKeep: { bytes: Uint8Array; hash: string }[] = [];
  let toKeepBytes = 0;
  // Files listed and not yet read, so that a folder of 100,000 files is read across many slices.
  const files: string[] = [];
  let read = 0;
  let lastStatus = performance.now();
  const note = (path: string, reason: string): void => void manifest.push({ path, size: null, mode: null, hash: null, note: reason });

  const readFile = (rel: string): void => {
    let entry: ReturnType<typeof readWorkspaceEntry>;
    try {
      entry = readWorkspaceEntry(root, rel);
    } catch (err) {
      return note(rel, `not read: ${(err as Error).message}`);
    }
    if (entry.kind === 'other') return note(rel, `not read: ${entry.reason}`);
    if (entry.kind !== 'file' && entry.kind !== 'symlink')
      return note(
        rel,
        entry.kind === 'dir' ? 'became a folder while the baseline was taken' : 'gone or unreadable when the baseline was taken',
      );
    if (entry.content) {
      toKeep.push({ bytes: entry.content, hash: entry.hash });
      toKeepBytes += entry.content.length;
    }
    bytes += entry.size;
    manifest.push({
      path: rel,
      size: entry.size,
      mode: entry.mode,
      hash: entry.hash,
      note: entry.content ? null : `${entry.size.toLocaleString('en-US')} bytes, over the content cap: kept by hash only`,
    });
  };

  const visit = (dir: Folder): void => {
    let entries: Dirent<Buffer>[];
    try {
      entries = readdirSync(join(root, dir.rel), { withFileTypes: true, encoding: 'buffer' });
    } catch (err) {
      if (dir.rel === '') throw new Error(`the workspace ${folder} cannot be read: ${(err as Error).message}`);
      return note(`${dir.rel}/`, `folder not read: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
    }
    for (const dirent of entries) {
      const name = nameOf(dirent.name);
      const shown = name ?? dirent.name.toString('utf8');
      const rel = dir.rel === '' ? shown : `${dir.rel}/${shown}`;
      if (name === null) {
        note(rel, 'its name is not valid UTF-8: not read');
        continue;
      }
      const isDir = dirent.isDirectory();
      if ((isDir && summarisedFolder(rel, true) !== null) || ignored(dir.rules, rel, isDir)) {
        skipped += 1;
        continue;
      }
      if (isDir) stack.push({ rel, rules: rulesOf(root, rel, dir.rules) });
      else files.push(rel);
    }
  };

  while (stack.length > 0 || read < files.length) {
    const sliceEnd = performance.now() + SLICE_MS;
    while (performance.now() < sliceEnd && toKeepBytes < KEEP_BATCH_BYTES) {
      if (read < files.length) readFile(files[read++]!);
      else if (stack.length > 0) visit(stack.pop()!);
      else break;
    }
    store.putMany(toKeep);
    toKeep = [];
    toKeepBytes = 0;
    if (options.onStatus && performance.now() - lastStatus >= STATUS_EVERY_MS) {
      lastStatus = performance.now();
      options.onStatus(`recording the workspace: ${manifest.length.toLocaleString('en-US')} files…`);
    }
    if (stack.length > 0 || read < files.length) await nextTurn();
  }
  manifest.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  return { at, files: manifest.length, bytes, skipped, manifest };
}

export function baselineSummary(baseline: BaselineSummary): string {
  const { at, files, bytes, skipped } = baseline;
  return JSON.stringify({ at, files, bytes, skipped });
}

/** The versions a baseline starts the session's files at: what FsEventRows.seed takes. */
export function baselineVersions(manifest: Iterable<BaselineFile>): Map<string, FileVersion> {
  const versions = new Map<string, FileVersion>();
  for (const file of manifest)
    if (file.hash && file.mode !== null && file.mode !== undefined) versions.set(file.path, { hash: file.hash, mode: file.mode });
  return versions;
}

/** Writes a baseline's manifest and summary into an open session.db, in one transaction. */
export function writeBaseline(db: Database.Database, baseline: WorkspaceBaseline): void {
  const insert = db.prepare('INSERT INTO workspace_files (path, size, mode, hash, note) VALUES (?, ?, ?, ?, ?)');
  const meta = db.prepare('INSERT INTO session_meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value');
  db.transaction(() => {
    for (const f of baseline.manifest) insert.run(f.path, f.size ?? null, f.mode ?? null, f.hash ?? null, f.note ?? null);
    meta.run(BASELINE_META_KEY, baselineSummary(baseline));
  })();
}

/**
 * Records a baseline of `folder` into the session.db at `dbPath` (made when it does not exist)
 * and its contents into `store`: what a VM session does as it starts, for a bench, a test or a
 * tool that has no VM. Refuses a session that has one already.
 */
export async function recordWorkspaceBaseline(
  dbPath: string,
  folder: string,
  store: ContentStore,
  options: ScanOptions = {},
): Promise<BaselineSummary> {
  const db = openSessionDbForWriting(dbPath);
  try {
    if (readBaselineSummary(db)) throw new Error(`${dbPath} has a workspace baseline already`);
    const baseline = await scanWorkspace(folder, store, options);
    writeBaseline(db, baseline);
    const { at, files, bytes, skipped } = baseline;
    return { at, files, bytes, skipped };
  } finally {
    db.close();
  }
}

/** The baseline a session.db records, or null (an older session, or one without a workspace). */
export function readBaselineSummary(db: Database.Database): BaselineSummary | null {
  const row = db.prepare('SELECT value FROM session_meta WHERE key = ?').get(BASELINE_META_KEY) as { value: string | null } | undefined;
  if (!row?.value) return null;
  try {
    const parsed = JSON.parse(row.value) as Partial<BaselineSummary>;
    if (typeof parsed.at !== 'string' || typeof parsed.files !== 'number') return null;
    return { at: parsed.at, files: parsed.files, bytes: Number(parsed.bytes ?? 0), skipped: Number(parsed.skipped ?? 0) };
  } catch {
    return null;
  }
}

/**
 * Where a resumed session's files stand: its baseline, then every recorded change in order (a
 * file's last after-version, or gone). Null when the session has no baseline: it resumes without
 * recording contents, as it ran.
 */
export function resumedVersions(db: Database.Database): Map<string, FileVersion> | null {
  if (!readBaselineSummary(db)) return null;
  const versions = baselineVersions(
    db.prepare('SELECT path, size, mode, hash, note FROM workspace_files ORDER BY id').all() as BaselineFile[],
  );
  const changes = db.prepare('SELECT path, after_hash, after_mode FROM fs_events WHERE entries IS NULL ORDER BY seq').all() as {
    path: string;
    after_hash: string | null;
    after_mode: number | null;
  }[];
  for (const c of changes)
    if (c.after_hash && c.after_mode !== null) versions.set(c.path, { hash: c.after_hash, mode: c.after_mode });
    else versions.delete(c.path);
  return versions;
}
