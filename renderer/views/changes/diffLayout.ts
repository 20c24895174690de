import type { FileDiff } from '../../../electron/contract/appContract.ts';

/** A line of a unified diff as the window draws it: a hunk's header, a kept, removed or added line, or a "no newline" marker. */
export interface DiffRow {
  readonly kind: 'hunk' | 'context' | 'del' | 'add' | 'eof';
  /** Line numbers in the old and new content; null on the side a line is not on (and on headers and markers). */
  readonly oldNo: number | null;
  readonly newNo: number | null;
  /** The line without its prefix; a hunk header's "@@ -a,b +c,d @@"; a marker's words. */
  readonly text: string;
}

export function hunkHeader(hunk: FileDiff['hunks'][number]): string {
  return `@@ -${hunk.oldStart},${hunk.oldLines} +${hunk.newStart},${hunk.newLines} @@`;
}

/**
 * A diff's hunks as one list of rows, numbered on both sides, for a virtualized list to draw a
 * window of. A line with a prefix a patch does not have is kept, as a context line, rather than dropped.
 */
export function diffRows(hunks: FileDiff['hunks']): DiffRow[] {
  const rows: DiffRow[] = [];
  for (const hunk of hunks) {
    rows.push({ kind: 'hunk', oldNo: null, newNo: null, text: hunkHeader(hunk) });
    let oldNo = hunk.oldStart;
    let newNo = hunk.newStart;
    for (const line of hunk.lines) {
      const prefix = line[0];
      if (prefix === '-') rows.push({ kind: 'del', oldNo: oldNo++, newNo: null, text: line.slice(1) });
      else if (prefix === '+') rows.push({ kind: 'add', oldNo: null, newNo: newNo++, text: line.slice(1) });
      else if (prefix === '\\') rows.push({ kind: 'eof', oldNo: null, newNo: null, text: line.slice(1).trim() });
      else rows.push({ kind: 'context', oldNo: oldNo++, newNo: newNo++, text: prefix === ' ' ? line.slice(1) : line });
    }
  }
  return rows;
}

/** Lines added and removed, as `git diff --stat` counts them. */
export function diffCounts(diff: Pick<FileDiff, 'hunks'>): { added: number; removed: number } {
  let added = 0;
  let removed = 0;
  for (const hunk of diff.hunks)
    for (const line of hunk.lines) {
      if (line[0] === '+') added++;
      else if (line[0] === '-') removed++;
    }
  return { added, removed };
}
