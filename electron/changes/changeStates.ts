import type { FileVersion } from './workspaceEntry.ts';

// What a path held before and after a stretch of recorded changes, from fs_events rows alone (their
// before/after hashes): the sides of a diff and the targets of a revert. Pure: rows in, states out.

/** What a path held: a version, nothing at all, or something the recording does not know (no content kept on its row). */
export type PathState = FileVersion | 'absent' | 'unknown';

/** One fs_events row as the changes read it. */
export interface ChangeRow {
  readonly seq: number;
  readonly at: string;
  readonly action: 'created' | 'modified' | 'deleted' | 'restored';
  readonly path: string;
  readonly entries: number | null;
  readonly size: number | null;
  readonly beforeHash: string | null;
  readonly afterHash: string | null;
  readonly beforeMode: number | null;
  readonly afterMode: number | null;
  /** Why the host kept no content after the change (fs_events.note). */
  readonly note: string | null;
}

const version = (hash: string | null, mode: number | null): FileVersion | null => (hash !== null ? { hash, mode: mode ?? 0o100644 } : null);

/**
 * The row's path before it. A missing hash means no file on a creation or a restore into an empty
 * place; on any other row the recording did not read the content (a session recorded before
 * contents were, a folder's own row).
 */
export function beforeOf(row: ChangeRow): PathState {
  return version(row.beforeHash, row.beforeMode) ?? (row.action === 'created' || row.action === 'restored' ? 'absent' : 'unknown');
}

/** The row's path after it; a missing hash is no file after a deletion or a restore that removed one. */
export function afterOf(row: ChangeRow): PathState {
  return version(row.afterHash, row.afterMode) ?? (row.action === 'deleted' || row.action === 'restored' ? 'absent' : 'unknown');
}

/** Rows that say something of one path's content: not a summary of a folder's insides, not a folder's own deletion. */
export function isPathRow(row: ChangeRow): boolean {
  return row.entries === null && !(row.action === 'deleted' && row.beforeHash === null);
}

export const sameState = (a: PathState, b: PathState): boolean =>
  typeof a === 'string' || typeof b === 'string' ? a === b : a.hash === b.hash && a.mode === b.mode;

/** One path from its state before a stretch of rows to its state after it. */
export interface PathSpan {
  readonly path: string;
  readonly before: PathState;
  readonly after: PathState;
  /** The stretch's rows of this path, in order. */
  readonly seqs: readonly number[];
}

/** Per path (in order of first change), its state before the first of `rows` and after the last. */
export function spansOf(rows: readonly ChangeRow[]): PathSpan[] {
  const spans = new Map<string, { path: string; before: PathState; after: PathState; seqs: number[] }>();
  for (const row of rows) {
    if (!isPathRow(row)) continue;
    const span = spans.get(row.path);
    if (span) {
      span.after = afterOf(row);
      span.seqs.push(row.seq);
    } else spans.set(row.path, { path: row.path, before: beforeOf(row), after: afterOf(row), seqs: [row.seq] });
  }
  return [...spans.values()];
}

/** `path` names this path itself or a folder holding it. */
export const underPath = (path: string, named: string): boolean => {
  const folder = named.replace(/\/+$/, '');
  return path === folder || path.startsWith(`${folder}/`);
};

/** What a revert puts back at one path. */
export interface RevertStep {
  readonly path: string;
  readonly restore: PathState;
}

/** Undoing `undone` (rows in order): each path they touched goes back to its state before the first of them. */
export function revertSteps(undone: readonly ChangeRow[]): RevertStep[] {
  return spansOf(undone).map((span) => ({ path: span.path, restore: span.before }));
}
