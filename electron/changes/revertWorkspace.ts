import { randomBytes } from 'node:crypto';
import {
  chmodSync,
  closeSync,
  constants,
  lstatSync,
  mkdirSync,
  openSync,
  realpathSync,
  renameSync,
  rmSync,
  symlinkSync,
  unlinkSync,
  writeSync,
} from 'node:fs';
import { dirname, join } from 'node:path';
import type { RevertResult } from '../contract/appContract.ts';
import type { RowOf } from '../store/sessionSchema.ts';
import { sameState, type PathState, type RevertStep } from './changeStates.ts';
import { KEPT_CONTENT_MAX, type ContentStore } from './contentStore.ts';
import { checkedRelativePath, HostilePathError, MODE_EXECUTABLE, MODE_SYMLINK, readWorkspaceEntry } from './workspaceEntry.ts';

// Puts paths of the workspace folder back to recorded contents. What each path holds now is kept
// in the content store first and each write becomes a 'restored' change (before: what was there,
// after: what was put back), so a revert is itself a change that can be reverted. A path is left
// alone, with the reason, where what is there could not be kept (over the store's cap), where the
// content to put back was never kept, or where getting to it would go through a symlink or a
// non-folder: nothing is written outside the folder.

export interface RevertOutcome extends RevertResult {
  /** The 'restored' rows to record, one per path written. */
  readonly rows: RowOf<'fs_events'>[];
}

class Refusal extends Error {}

const MB = KEPT_CONTENT_MAX / (1 << 20);

/** Makes the folders above `path` under `root`, each a real folder (never through a symlink). */
function parentsOf(root: string, path: string): void {
  const parts = path.split('/').slice(0, -1);
  let at = root;
  for (const part of parts) {
    at = join(at, part);
    let stats;
    try {
      stats = lstatSync(at);
    } catch {
      mkdirSync(at, { mode: 0o755 });
      continue;
    }
    if (!stats.isDirectory())
      throw new Refusal(`${at.slice(root.length + 1)} is ${stats.isSymbolicLink() ? 'a symlink' : 'not a folder'} now`);
  }
}

/** Writes `content` at `full` as one rename over whatever is there (a symlink is replaced, never followed). */
function writeAt(full: string, mode: number, content: Buffer): void {
  const temp = join(dirname(full), `.capsem-revert-${randomBytes(6).toString('hex')}`);
  try {
    if (mode === MODE_SYMLINK) symlinkSync(content, temp);
    else {
      const perms = mode === MODE_EXECUTABLE ? 0o755 : 0o644;
      const fd = openSync(temp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, perms);
      try {
        for (let at = 0; at < content.length;) at += writeSync(fd, content, at);
      } finally {
        closeSync(fd);
      }
      chmodSync(temp, perms);
    }
    renameSync(temp, full);
  } catch (err) {
    rmSync(temp, { force: true });
    throw err;
  }
}

/** The folder's path for the session, as a real path; an Error naming it when it is gone. */
export function workspaceRoot(folder: string): string {
  try {
    return realpathSync(folder);
  } catch {
    throw new Error(`the session's workspace folder ${folder} is gone; nothing was written`);
  }
}

function restoreOne(
  root: string,
  store: ContentStore,
  step: RevertStep,
  rows: RowOf<'fs_events'>[],
): RevertResult['restored'][number] | null {
  let path: string;
  try {
    path = checkedRelativePath(step.path);
  } catch (err) {
    if (err instanceof HostilePathError) throw new Refusal(err.message);
    throw err;
  }
  const { restore } = step;
  if (restore === 'unknown') throw new Refusal('its content before was not recorded');
  const wanted = restore === 'absent' ? null : store.get(restore.hash);
  if (restore !== 'absent' && wanted === null) throw new Refusal(`its content before is not kept (binary, over ${MB} MiB, or unreadable)`);
  const now = readWorkspaceEntry(root, path);
  if (now.kind === 'other') throw new Refusal(`the folder holds something else there now: ${now.reason}`);
  if (now.kind === 'dir') throw new Refusal('a folder is there now; move it away to put the file back');
  let there: PathState = 'absent';
  if (now.kind === 'file' || now.kind === 'symlink') {
    if (now.content === null && !store.has(now.hash))
      throw new Refusal(`what is there now is over ${MB} MiB and cannot be kept to undo this; move it away first`);
    if (now.content !== null) store.put(now.content, now.hash);
    there = { hash: now.hash, mode: now.mode };
  }
  if (sameState(there, restore)) return null;
  const full = join(root, path);
  if (restore === 'absent') unlinkSync(full);
  else {
    parentsOf(root, path);
    writeAt(full, restore.mode, wanted!);
  }
  rows.push({
    timestamp: new Date().toISOString(),
    action: 'restored',
    path,
    size: wanted?.length ?? null,
    entries: null,
    before_hash: there === 'absent' ? null : there.hash,
    before_mode: there === 'absent' ? null : there.mode,
    after_hash: restore === 'absent' ? null : restore.hash,
    after_mode: restore === 'absent' ? null : restore.mode,
  });
  return { path, action: restore === 'absent' ? 'removed' : 'restored' };
}

/** Puts each step's path back under `root` (a real path); paths already as wanted are left out of the result. */
export function revertWorkspace(root: string, store: ContentStore, steps: readonly RevertStep[]): RevertOutcome {
  const outcome: RevertOutcome = { restored: [], refused: [], rows: [] };
  for (const step of steps) {
    try {
      const done = restoreOne(root, store, step, outcome.rows);
      if (done) outcome.restored.push(done);
    } catch (err) {
      const reason = err instanceof Refusal ? err.message : `it could not be written: ${(err as Error).message}`;
      outcome.refused.push({ path: step.path, reason });
    }
  }
  return outcome;
}
