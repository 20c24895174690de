import { createHash } from 'node:crypto';
import { deflateSync } from 'node:zlib';
import { structuredPatch } from 'diff';
import type { FileVersion } from './workspaceEntry.ts';
import { MODE_SYMLINK } from './workspaceEntry.ts';

// A path's change as git writes it in `git diff`, byte for byte what `git apply` and `patch -p1`
// read: the `diff --git` header with git's C-style quoting of names, the mode lines, `---`/`+++`,
// unified hunks with `\ No newline at end of file`, and a binary content as a `GIT binary patch`
// literal (what `git diff --binary` writes). Contents are handled as bytes (latin1 strings), never
// decoded, so any encoding goes through unchanged.

/** One side of a change: a version and its bytes, or no file. */
export type PatchSide = { readonly version: FileVersion; readonly content: Buffer } | null;

/** git treats a content holding a NUL in its first 8000 bytes as binary. */
export const isBinary = (content: Buffer): boolean => content.subarray(0, 8000).includes(0);

const ESCAPES: Record<number, string> = { 7: '\\a', 8: '\\b', 9: '\\t', 10: '\\n', 11: '\\v', 12: '\\f', 13: '\\r', 34: '\\"', 92: '\\\\' };

/** `name` as git writes a path in a header: as is, or in double quotes with C escapes and non-ASCII bytes in octal (core.quotePath). */
export function gitQuoted(name: string): string {
  const bytes = Buffer.from(name, 'utf8');
  if (!bytes.some((b) => b < 0x20 || b >= 0x7f || b === 34 || b === 92)) return name;
  let out = '"';
  for (const b of bytes) out += ESCAPES[b] ?? (b < 0x20 || b >= 0x7f ? `\\${b.toString(8).padStart(3, '0')}` : String.fromCharCode(b));
  return `${out}"`;
}

/** git's name of a content: the sha1 of its blob. */
export function blobId(content: Buffer | null): string {
  if (content === null) return '0'.repeat(40);
  return createHash('sha1').update(`blob ${content.length}\0`).update(content).digest('hex');
}

const mode = (m: number): string => m.toString(8).padStart(6, '0');

const BASE85 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz!#$%&()*+-;<=>?@^_`{|}~';

/** A `GIT binary patch` literal of `content`: zlib-deflated, in lines of up to 52 bytes in git's base85. */
function binaryLiteral(content: Buffer): string {
  const packed = deflateSync(content);
  let out = `GIT binary patch\nliteral ${content.length}\n`;
  for (let at = 0; at < packed.length; at += 52) {
    const line = packed.subarray(at, at + 52);
    out += line.length <= 26 ? String.fromCharCode(64 + line.length) : String.fromCharCode(96 + line.length - 26);
    for (let i = 0; i < line.length; i += 4) {
      let word = 0;
      for (let k = 0; k < 4; k++) word = word * 256 + (line[i + k] ?? 0);
      let chars = '';
      for (let k = 0; k < 5; k++) {
        chars = BASE85[word % 85]! + chars;
        word = Math.floor(word / 85);
      }
      out += chars;
    }
    out += '\n';
  }
  return `${out}\n`;
}

/** `@@ -a,b +c,d @@` as git writes it: a side of no lines starts at the line before. */
const range = (start: number, lines: number): string => (lines === 0 ? `${start - 1},0` : lines === 1 ? `${start}` : `${start},${lines}`);

function textHunks(before: Buffer, after: Buffer): string {
  const patch = structuredPatch('', '', before.toString('latin1'), after.toString('latin1'), '', '', { context: 3 });
  let out = '';
  for (const h of patch.hunks) {
    out += `@@ -${range(h.oldStart, h.oldLines)} +${range(h.newStart, h.newLines)} @@\n`;
    for (const line of h.lines) out += `${line}\n`;
  }
  return out;
}

const isLink = (side: PatchSide): boolean => side !== null && side.version.mode === MODE_SYMLINK;

/**
 * The patch of `path` from `before` to `after` as a latin1 string (write it with
 * Buffer.from(text, 'latin1')); '' when nothing changed. A file that became a symlink, or the
 * reverse, is a deletion and a creation, as git writes it.
 */
export function gitFilePatch(path: string, before: PatchSide, after: PatchSide): string {
  if (before && after && isLink(before) !== isLink(after)) return gitFilePatch(path, before, null) + gitFilePatch(path, null, after);
  if (!before && !after) return '';
  if (before && after && before.version.hash === after.version.hash && before.version.mode === after.version.mode) return '';
  const a = gitQuoted(`a/${path}`);
  const b = gitQuoted(`b/${path}`);
  let out = `diff --git ${a} ${b}\n`;
  if (!before) out += `new file mode ${mode(after!.version.mode)}\n`;
  else if (!after) out += `deleted file mode ${mode(before.version.mode)}\n`;
  else if (before.version.mode !== after.version.mode)
    out += `old mode ${mode(before.version.mode)}\nnew mode ${mode(after.version.mode)}\n`;
  const oldContent = before?.content ?? Buffer.alloc(0);
  const newContent = after?.content ?? Buffer.alloc(0);
  if (oldContent.equals(newContent)) return out;
  const sameMode = before && after && before.version.mode === after.version.mode ? ` ${mode(before.version.mode)}` : '';
  if (isBinary(oldContent) || isBinary(newContent))
    return `${out}index ${blobId(before?.content ?? null)}..${blobId(after?.content ?? null)}${sameMode}\n${binaryLiteral(newContent)}`;
  out += `index ${blobId(before?.content ?? null).slice(0, 7)}..${blobId(after?.content ?? null).slice(0, 7)}${sameMode}\n`;
  // git ends a name holding a space with a tab on these lines, so that patch(1) reads it whole.
  const tab = path.includes(' ') ? '\t' : '';
  out += `--- ${before ? a + tab : '/dev/null'}\n+++ ${after ? b + tab : '/dev/null'}\n`;
  return out + textHunks(oldContent, newContent);
}
