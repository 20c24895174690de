import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { nestsDeeperThan } from '../../../electron/owner/jsonNesting.ts';

// The scan must agree with JSON.parse on every valid text: what it lets through nests no deeper
// than the limit, and what it refuses does. Strings full of brackets, quotes and backslashes are
// where a scan that does not track strings and escapes would disagree.

const LIMIT = 8;
const bytes = (text: string): Uint8Array => new TextEncoder().encode(text);

/** Nesting of a parsed value, the reference the scan is held to (values here are shallow enough to recurse). */
function depthOf(value: unknown): number {
  if (Array.isArray(value)) return 1 + Math.max(0, ...value.map(depthOf));
  if (value !== null && typeof value === 'object') return 1 + Math.max(0, ...Object.values(value).map(depthOf));
  return 0;
}

/** Strings made mostly of the characters that matter to the scan, plus some that take several UTF-8 bytes. */
const trickyString = fc.string({
  unit: fc.constantFrom('[', ']', '{', '}', '"', '\\', ',', ':', 'a', ' ', '\n', 'é', '😀'),
  maxLength: 12,
});

const trickyJson = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.constantFrom(null, true, false, 0, -1.5e300),
    trickyString,
    fc.array(tie('value'), { maxLength: 4 }),
    fc.dictionary(trickyString, tie('value'), { maxKeys: 4 }),
  ),
})).value;

/** `value` wrapped in `levels` arrays or objects, written out by hand so no recursion builds it. */
function wrapped(inner: string, shells: readonly ('array' | 'object')[]): string {
  return (
    shells.map((s) => (s === 'array' ? '[' : '{"k":')).join('') +
    inner +
    shells
      .map((s) => (s === 'array' ? ']' : '}'))
      .reverse()
      .join('')
  );
}

describe('nestsDeeperThan', () => {
  it('agrees with JSON.parse on valid JSON, whatever the strings hold and however it is spaced', () => {
    fc.assert(
      fc.property(trickyJson, fc.constantFrom(undefined, 0, 2, '\t'), (value, space) => {
        const text = JSON.stringify(value, null, space);
        expect(nestsDeeperThan(bytes(text), LIMIT)).toBe(depthOf(JSON.parse(text)) > LIMIT);
      }),
      { numRuns: 2000 },
    );
  });

  it('refuses exactly the texts nested one level past the limit, with any mix of arrays and objects', () => {
    fc.assert(
      fc.property(fc.array(fc.constantFrom('array', 'object'), { maxLength: 3 * LIMIT }), trickyString, (shells, text) => {
        const json = wrapped(JSON.stringify(text), shells);
        expect(nestsDeeperThan(bytes(json), LIMIT)).toBe(depthOf(JSON.parse(json)) > LIMIT);
      }),
    );
  });

  it('agrees with JSON.parse on arbitrary text that happens to parse', () => {
    fc.assert(
      fc.property(fc.string({ unit: fc.constantFrom('[', ']', '{', '}', '"', '\\', ',', ':', '1', 'n', ' '), maxLength: 40 }), (text) => {
        let parsed: unknown;
        try {
          parsed = JSON.parse(text);
        } catch {
          return;
        }
        expect(nestsDeeperThan(bytes(text), LIMIT)).toBe(depthOf(parsed) > LIMIT);
      }),
      { numRuns: 5000 },
    );
  });

  it('refuses a line 100,000 deep without recursing, and counts brackets inside strings as text', () => {
    const deep = 100_000;
    expect(nestsDeeperThan(bytes(`${'['.repeat(deep)}${']'.repeat(deep)}`), 64)).toBe(true);
    expect(nestsDeeperThan(bytes(JSON.stringify(['['.repeat(deep)])), 64)).toBe(false);
    expect(nestsDeeperThan(bytes(JSON.stringify(['\\"[[[[', '\\', '"{{'])), 1)).toBe(false);
  });
});
