import { structuredPatch } from 'diff';
import type { FileDiff } from '../contract/appContract.ts';
import type { ContentStore } from './contentStore.ts';
import { KEPT_CONTENT_MAX } from './contentStore.ts';
import type { PathSpan, PathState } from './changeStates.ts';
import { gitFilePatch, isBinary, type PatchSide } from './gitPatch.ts';

// A path's change with both contents read from the content store: what the Files view shows
// (FileDiff, hunks of text lines) and what `capsem diff` prints (git's patch text). A side whose
// content the store does not keep, or the recording never read, is said, never guessed at.

/** Hunk lines the window gets per file (a 2 MiB file of short lines fits); `capsem diff` prints the whole. */
export const DIFF_LINES_SHOWN = 50_000;

const MB = KEPT_CONTENT_MAX / (1 << 20);

/** The sides of a span read from the store, or why they cannot be. */
export type ReadSpan =
  | { readonly path: string; readonly kind: 'content'; readonly before: PatchSide; readonly after: PatchSide }
  | { readonly path: string; readonly kind: 'missing'; readonly before: PathState; readonly after: PathState; readonly note: string };

function sideOf(state: PathState, store: ContentStore): PatchSide | string {
  if (state === 'absent') return null;
  if (state === 'unknown')
    return 'its content was not recorded (a session recorded before contents were kept, or a path the host could not read)';
  const content = store.get(state.hash);
  return content === null ? `its content is not kept (over ${MB} MiB, or not a file the store keeps)` : { version: state, content };
}

export function readSpan(span: PathSpan, store: ContentStore): ReadSpan {
  const before = sideOf(span.before, store);
  const after = sideOf(span.after, store);
  if (typeof before === 'string' || typeof after === 'string') {
    const note = typeof before === 'string' ? `before: ${before}` : `after: ${after as string}`;
    return { path: span.path, kind: 'missing', before: span.before, after: span.after, note };
  }
  return { path: span.path, kind: 'content', before, after };
}

const modeOf = (state: PathState): number | null => (typeof state === 'string' ? null : state.mode);

function statusOf(before: PathState, after: PathState): FileDiff['status'] {
  if (before === 'absent') return after === 'absent' ? 'unchanged' : 'added';
  if (after === 'absent') return 'deleted';
  if (typeof before === 'string' || typeof after === 'string') return 'modified';
  if (before.hash !== after.hash) return 'modified';
  return before.mode !== after.mode ? 'mode' : 'unchanged';
}

/** The window's view of a path's change. */
export function fileDiffOf(read: ReadSpan, span: PathSpan): FileDiff {
  const base = {
    path: span.path,
    status: statusOf(span.before, span.after),
    oldMode: modeOf(span.before),
    newMode: modeOf(span.after),
  };
  if (read.kind === 'missing') return { ...base, binary: true, note: read.note, hunks: [], truncated: false };
  const oldContent = read.before?.content ?? Buffer.alloc(0);
  const newContent = read.after?.content ?? Buffer.alloc(0);
  if (isBinary(oldContent) || isBinary(newContent))
    return {
      ...base,
      binary: true,
      note: `binary content (${oldContent.length} → ${newContent.length} bytes)`,
      hunks: [],
      truncated: false,
    };
  const patch = structuredPatch(span.path, span.path, oldContent.toString('utf8'), newContent.toString('utf8'), '', '', { context: 3 });
  const hunks: FileDiff['hunks'] = [];
  let shown = 0;
  let truncated = false;
  for (const h of patch.hunks) {
    // jsdiff's numbering (an empty side starts at 1, where patch text writes 0): applyPatch takes these hunks as they are.
    const room = DIFF_LINES_SHOWN - shown;
    if (h.lines.length <= room) {
      hunks.push({ oldStart: h.oldStart, oldLines: h.oldLines, newStart: h.newStart, newLines: h.newLines, lines: h.lines });
      shown += h.lines.length;
      continue;
    }
    // The hunk that crosses the limit is shown up to it, its counts those of the lines kept.
    const lines = h.lines.slice(0, room);
    if (lines.length > 0)
      hunks.push({
        oldStart: h.oldStart,
        oldLines: lines.filter((l) => l[0] === ' ' || l[0] === '-').length,
        newStart: h.newStart,
        newLines: lines.filter((l) => l[0] === ' ' || l[0] === '+').length,
        lines,
      });
    truncated = true;
    break;
  }
  return { ...base, binary: false, note: null, hunks, truncated };
}

/** The git patch text of a path's change (latin1), or null with the reason it cannot be written. */
export function patchOf(read: ReadSpan): { text: string } | { text: null; reason: string } {
  if (read.kind === 'missing') return { text: null, reason: read.note };
  return { text: gitFilePatch(read.path, read.before, read.after) };
}
