import { describe, expect, it } from 'vitest';
import { highlightLines, languageOf, splitHighlighted } from '../../../renderer/views/changes/highlight.ts';

// Syntax colour for diff lines: cut per line without losing or adding a character, whatever the text.

const textOf = (lines: { text: string }[][]) => lines.map((segments) => segments.map((s) => s.text).join(''));

describe('highlighting diff lines', () => {
  it('names a language by extension or file name, and none for what it does not know', () => {
    expect(languageOf('src/app.ts')).toBe('typescript');
    expect(languageOf('web/Index.TSX')).toBe('typescript');
    expect(languageOf('tools/build.py')).toBe('python');
    expect(languageOf('docker/Dockerfile')).toBe('dockerfile');
    expect(languageOf('notes.unknownext')).toBeNull();
    expect(languageOf('.gitignore')).toBeNull();
  });

  it('splits a comment and a template string that span lines into lines carrying their colour', () => {
    const lines = ['/* a comment', '   over two lines */', 'const s = `a', 'b ${x} <tag> & "q"`;', ''];
    const split = highlightLines(lines, 'typescript');
    expect(textOf(split)).toEqual(lines);
    expect(split[1]!.some((s) => s.text.includes('over two') && s.className.includes('hljs-comment'))).toBe(true);
    expect(split[3]!.some((s) => s.text.startsWith('b ') && s.className.includes('hljs-string'))).toBe(true);
    expect(split[4]).toEqual([]);
  });

  it('gives back every character of hostile text, as text: markup, entities, control characters, long lines', () => {
    const lines = [
      '<script>alert(1)</script> &amp; &lt;',
      '</span><span class="x">',
      'tab\there \u0000 \u001b[31m red',
      '"'.repeat(5000),
      "emoji 🙂 and ' quotes",
    ];
    for (const language of ['typescript', 'xml', 'python', 'bash', null])
      expect(textOf(highlightLines(lines, language)), String(language)).toEqual(lines);
  });

  it('draws plain where the block is too large to colour inside a frame', () => {
    const lines = Array.from({ length: 3000 }, (_, i) => `const value${i} = "${'x'.repeat(80)}";`);
    const split = highlightLines(lines, 'typescript');
    expect(textOf(split)).toEqual(lines);
    expect(split.every((segments) => segments.every((s) => s.className === ''))).toBe(true);
  });

  it("reads highlight.js's markup: nested spans close at a line's end and open again on the next", () => {
    const split = splitHighlighted('<span class="hljs-string">&quot;a\n<span class="hljs-subst">b</span>\nc&quot;</span>d');
    expect(split).toEqual([
      [{ text: '"a', className: 'hljs-string' }],
      [{ text: 'b', className: 'hljs-string hljs-subst' }],
      [
        { text: 'c"', className: 'hljs-string' },
        { text: 'd', className: '' },
      ],
    ]);
  });
});
