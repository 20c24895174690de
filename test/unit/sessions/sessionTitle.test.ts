import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { promptTitle, TITLE_MAX_CHARS } from '../../../electron/sessions/sessionTitle.ts';

describe('promptTitle', () => {
  it('is the prompt on one line', () => {
    expect(promptTitle('  fix the\n\n  flaky   tests\t')).toBe('fix the flaky tests');
  });

  it('takes a <user_query> over the rest, and cuts <system-reminder> blocks out, closed or not', () => {
    expect(promptTitle('<system-reminder>be terse</system-reminder>\nrename the retry budget')).toBe('rename the retry budget');
    expect(promptTitle('context here <user_query>add a cache</user_query> more')).toBe('add a cache');
    expect(promptTitle('port the parser <system-reminder>never finished')).toBe('port the parser');
    expect(promptTitle('<system-reminder>only this</system-reminder>  ')).toBeUndefined();
  });

  it('cuts at 80 characters, counting code points, never splitting one', () => {
    expect(promptTitle('é'.repeat(100))).toBe('é'.repeat(80));
    expect(promptTitle('😀'.repeat(81))).toBe('😀'.repeat(80));
  });

  it('whatever the prompt: one line, at most 80 characters, no reminder, no edge space', () => {
    const piece = fc.oneof(
      fc.string(),
      fc.constantFrom('<system-reminder>', '</system-reminder>', '<user_query>', '</user_query>', '\n', '\r\n', '\u2028'),
    );
    fc.assert(
      fc.property(
        fc.array(piece, { maxLength: 30 }).map((parts) => parts.join('')),
        (prompt) => {
          const title = promptTitle(prompt);
          if (title === undefined) return;
          expect(Array.from(title).length).toBeLessThanOrEqual(TITLE_MAX_CHARS);
          expect(title).not.toMatch(/[\n\r\u2028]/);
          expect(title).not.toContain('<system-reminder>');
          expect(title).toBe(title.trim());
          expect(title).not.toBe('');
        },
      ),
      { numRuns: 2000 },
    );
  });
});
