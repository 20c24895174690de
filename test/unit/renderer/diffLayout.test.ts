import { structuredPatch } from 'diff';
import { describe, expect, it } from 'vitest';
import { diffCounts, diffRows } from '../../../renderer/views/changes/diffLayout.ts';

// The Files view's diff as rows: numbered on both sides as a patch reader counts them.

const hunksOf = (before: string, after: string) => structuredPatch('a', 'b', before, after, '', '', { context: 1 }).hunks;

describe('diff rows', () => {
  it('number removed lines on the old side, added on the new, kept lines on both, from each hunk header', () => {
    const before = ['one', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight'].join('\n') + '\n';
    const after = ['one', 'two', 'THREE', 'four', 'five', 'six', 'seven', 'eight', 'nine'].join('\n') + '\n';
    const rows = diffRows(hunksOf(before, after));
    expect(rows.map((r) => [r.kind, r.oldNo, r.newNo, r.text])).toEqual([
      ['hunk', null, null, '@@ -2,3 +2,3 @@'],
      ['context', 2, 2, 'two'],
      ['del', 3, null, 'three'],
      ['add', null, 3, 'THREE'],
      ['context', 4, 4, 'four'],
      ['hunk', null, null, '@@ -8,1 +8,2 @@'],
      ['context', 8, 8, 'eight'],
      ['add', null, 9, 'nine'],
    ]);
    expect(diffCounts({ hunks: hunksOf(before, after) })).toEqual({ added: 2, removed: 1 });
  });

  it('show the end of a file without a newline as a marker, not as a line of either side', () => {
    const rows = diffRows(hunksOf('a\nb', 'a\nc'));
    expect(rows.filter((r) => r.kind === 'eof').map((r) => r.text)).toEqual(['No newline at end of file', 'No newline at end of file']);
    expect(rows.filter((r) => r.kind === 'add').map((r) => [r.newNo, r.text])).toEqual([[2, 'c']]);
  });

  it('keep a line with a prefix a patch does not have, as a kept line with its whole text', () => {
    const rows = diffRows([{ oldStart: 1, oldLines: 1, newStart: 1, newLines: 1, lines: ['?odd'] }]);
    expect(rows[1]).toEqual({ kind: 'context', oldNo: 1, newNo: 1, text: '?odd' });
  });

  it('lay out a 20,000-line diff quickly', () => {
    const lines = Array.from({ length: 20_000 }, (_, i) => `+const line${i} = ${i};`);
    const started = performance.now();
    const rows = diffRows([{ oldStart: 0, oldLines: 0, newStart: 1, newLines: 20_000, lines }]);
    expect(rows).toHaveLength(20_001);
    expect(rows.at(-1)).toMatchObject({ kind: 'add', newNo: 20_000 });
    expect(performance.now() - started).toBeLessThan(200);
  });
});
