import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { keepsLength, keyForms } from '../../../electron/credentials/keyForms.ts';
import { KeyScrubber, scrubBytes } from '../../../electron/credentials/keyScrubber.ts';

// The scrubber on its own: every form of a key (as it is, percent-encoded, base64 and base64url at
// each alignment) becomes the stand-in's form of the same length, whatever the chunking, and no
// other byte changes. Keys here are shaped as providers' are (a prefix and at least 16 random
// characters), some with characters a URL must escape.

const URL_SAFE = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
const RESERVED = `${URL_SAFE}+/=!*'()~.:@`;

const randomText = (alphabet: string, min: number, max: number): fc.Arbitrary<string> =>
  fc.array(fc.constantFrom(...alphabet), { minLength: min, maxLength: max }).map((chars) => chars.join(''));

/** A key and a stand-in of its length, as the broker makes them. */
const keyPair = fc
  .tuple(fc.constantFrom('sk-ant-api03-', 'sk-proj-', 'AIza', ''), randomText(RESERVED, 16, 60), fc.boolean())
  .chain(([prefix, random, urlSafe]) => {
    const key = prefix + (urlSafe ? random.replace(/[^A-Za-z0-9_-]/g, 'x') : random);
    return randomText(URL_SAFE, key.length - prefix.length, key.length - prefix.length).map((r) => ({ key, standIn: prefix + r }));
  });

type Segment =
  | { readonly kind: 'filler'; readonly text: string }
  | { readonly kind: 'plain' }
  | { readonly kind: 'percent' }
  | { readonly kind: 'base64'; readonly before: Buffer; readonly after: Buffer; readonly url: boolean };

const segment: fc.Arbitrary<Segment> = fc.oneof(
  // Fillers use the keys' own characters (and '%'), so partial matches are common.
  randomText(`${URL_SAFE}%+/= "{}:sk-ant`, 0, 40).map((text) => ({ kind: 'filler' as const, text })),
  fc.constant({ kind: 'plain' as const }),
  fc.constant({ kind: 'percent' as const }),
  fc
    .tuple(fc.uint8Array({ maxLength: 5 }), fc.uint8Array({ maxLength: 5 }), fc.boolean())
    .map(([before, after, url]) => ({ kind: 'base64' as const, before: Buffer.from(before), after: Buffer.from(after), url })),
);

function encode(bytes: Buffer, url: boolean): string {
  return url ? bytes.toString('base64url') : bytes.toString('base64');
}

/** A segment's bytes carrying `value` (the key, or the stand-in in what is expected). */
function spell(s: Segment, value: string): string {
  if (s.kind === 'filler') return ` ${s.text} `;
  if (s.kind === 'plain') return value;
  if (s.kind === 'percent') return encodeURIComponent(value);
  return encode(Buffer.concat([s.before, Buffer.from(value), s.after]), s.url);
}

/** The two alphabets read alike. */
const sameAlphabet = (s: string): string => s.replace(/-/g, '+').replace(/_/g, '/');

function splitAt(bytes: Buffer, cuts: readonly number[]): Buffer[] {
  const points = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b);
  const pieces: Buffer[] = [];
  let from = 0;
  for (const p of points) {
    pieces.push(bytes.subarray(from, p));
    from = p;
  }
  pieces.push(bytes.subarray(from));
  return pieces;
}

function streamed(forms: ReturnType<typeof keyForms>, pieces: readonly Buffer[]): Buffer {
  const scrubber = new KeyScrubber(forms);
  const out: Buffer[] = [];
  for (const piece of pieces) out.push(scrubber.push(Buffer.from(piece)));
  out.push(scrubber.end());
  return Buffer.concat(out);
}

describe('key forms', () => {
  it('gives each form of a key a stand-in form of the same length when the stand-in is as long as the key', () => {
    const forms = keyForms('acme+REAL/key=0123456789abcdef', 'acme-STAND-IN-0123456789abcdef');
    expect(keepsLength(forms)).toBe(true);
    const percent = forms.find((f) => f.needle.toString() === encodeURIComponent('acme+REAL/key=0123456789abcdef'))!;
    // The stand-in's own characters are escaped to make up the length, and it still decodes to the stand-in.
    expect(decodeURIComponent(percent.replacement.toString())).toBe('acme-STAND-IN-0123456789abcdef');
    const lower = forms.find((f) => f.needle.toString() === 'acme%2bREAL%2fkey%3d0123456789abcdef')!;
    expect(lower.replacement.toString()).toMatch(/%[0-9a-f]{2}$/);
    expect(decodeURIComponent(lower.replacement.toString())).toBe('acme-STAND-IN-0123456789abcdef');
  });

  it("finds a key's base64 at each of the three alignments and in base64url", () => {
    const key = 'sk-ant-api03-0123456789abcdefghijklmnopqrstuvwxyzAA';
    const standIn = 'sk-ant-api03-ZYXWVUTSRQPONMLKJIHGFEDCBAzyxwvutsrqAA';
    const forms = keyForms(key, standIn);
    for (const before of ['', 'x', 'xy'])
      for (const url of [false, true]) {
        const reflected = Buffer.from(encode(Buffer.from(`${before}${key}!`), url));
        const out = scrubBytes(forms, reflected);
        expect(Buffer.from(out.toString(), 'base64').toString()).toBe(`${before}${standIn}!`);
      }
  });

  it('changes lengths only where the stand-in is shorter than the key, and then still replaces every form', () => {
    const forms = keyForms('k', 'sk-stand-in-longer');
    expect(keepsLength(forms)).toBe(false);
    expect(scrubBytes(forms, Buffer.from('a k b')).toString()).toBe('a sk-stand-in-longer b');
  });
});

describe('the key scrubber', () => {
  it('leaves a stream without a key as it is, chunk for chunk, holding nothing that cannot start a key', () => {
    const forms = keyForms('sk-ant-api03-0123456789abcdefghijAA', 'sk-ant-api03-ZYXWVUTSRQPONMLKJIHGAA');
    const scrubber = new KeyScrubber(forms);
    const chunk = Buffer.from('data: {"type":"ping"}\n\n');
    expect(scrubber.push(chunk)).toBe(chunk);
    expect(scrubber.push(chunk)).toBe(chunk);
    // The start of a key waits for the next chunk, and goes on once it cannot be one.
    expect(scrubber.push(Buffer.from('then sk-ant-api'))).toEqual(Buffer.from('then '));
    expect(scrubber.push(Buffer.from('0 more.'))).toEqual(Buffer.from('sk-ant-api0 more.'));
    // A base64 character at the very end may be the first of a base64 form's mixed characters: it waits too.
    expect(scrubber.push(Buffer.from(' Basic '))).toEqual(Buffer.from(' Basic '));
    expect(scrubber.push(Buffer.from('abc'))).toEqual(Buffer.from('ab'));
    expect(scrubber.end()).toEqual(Buffer.from('c'));
  });

  it('replaces every form, whatever the chunking, and changes no other byte (property)', () => {
    fc.assert(
      fc.property(
        keyPair,
        fc.array(segment, { maxLength: 8 }),
        fc.array(fc.nat(), { maxLength: 6 }),
        ({ key, standIn }, segments, cuts) => {
          const forms = keyForms(key, standIn);
          const input = Buffer.from(segments.map((s) => spell(s, key)).join(''));
          const whole = scrubBytes(forms, input);
          // Lengths are kept, so each segment is where it was: fillers exactly as they were, each form
          // of the key the stand-in's (percent-encoded and base64 ones read back to the stand-in).
          expect(whole.length).toBe(input.length);
          let at = 0;
          for (const s of segments) {
            const length = Buffer.byteLength(spell(s, key));
            const out = whole.subarray(at, at + length).toString();
            if (s.kind === 'filler' || s.kind === 'plain') expect(out).toBe(spell(s, standIn));
            if (s.kind === 'percent') expect(decodeURIComponent(out)).toBe(standIn);
            if (s.kind === 'base64') {
              expect(Buffer.from(out, 'base64')).toEqual(Buffer.concat([s.before, Buffer.from(standIn), s.after]));
              // An edge character that became 62 or 63 may be written in either alphabet.
              expect(sameAlphabet(out)).toBe(sameAlphabet(spell(s, standIn)));
            }
            at += length;
          }
          for (const form of forms) expect(whole.indexOf(form.needle)).toBe(-1);
          expect(streamed(forms, splitAt(input, cuts))).toEqual(whole);
        },
      ),
      { numRuns: 400 },
    );
  });

  it('holds back the character before a base64 form whose start is split off, whichever form may start there', () => {
    // Found by the property below: two forms may start at the chunk's last byte, only the second
    // of which mixes the key's first bits into the character before it.
    const key = '3*AAAAAAAAAAAAAAA';
    const forms = keyForms(key, 'AAAAAAAAAAAAAAAAA');
    const input = Buffer.from(Buffer.from(`\0${key}`).toString('base64') + key);
    const whole = scrubBytes(forms, input);
    expect(Buffer.from(whole.subarray(0, 24).toString(), 'base64')).toEqual(Buffer.from('\0AAAAAAAAAAAAAAAAA'));
    expect(streamed(forms, splitAt(input, [3]))).toEqual(whole);
  });

  it('gives the same bytes split at every single boundary', () => {
    fc.assert(
      fc.property(keyPair, fc.array(segment, { minLength: 1, maxLength: 5 }), ({ key, standIn }, segments) => {
        const forms = keyForms(key, standIn);
        const input = Buffer.from(segments.map((s) => spell(s, key)).join(''));
        const whole = scrubBytes(forms, input);
        for (let cut = 0; cut <= input.length; cut++) expect(streamed(forms, splitAt(input, [cut]))).toEqual(whole);
        // And byte by byte.
        expect(
          streamed(
            forms,
            [...input].map((b) => Buffer.from([b])),
          ),
        ).toEqual(whole);
      }),
      { numRuns: 60 },
    );
  });

  it('changes nothing in bytes that hold no key (property)', () => {
    fc.assert(
      fc.property(keyPair, fc.uint8Array({ maxLength: 300 }), fc.array(fc.nat(), { maxLength: 4 }), ({ key, standIn }, bytes, cuts) => {
        const input = Buffer.from(bytes);
        fc.pre(!input.includes(key));
        const forms = keyForms(key, standIn);
        expect(streamed(forms, splitAt(input, cuts))).toEqual(input);
      }),
    );
  });
});
