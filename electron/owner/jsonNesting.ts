// How deep a JSON text nests, found by one pass over its bytes before anything parses it.
// JSON.parse itself does not recurse, but what reads its value does (zod's z.json(),
// JSON.stringify): a line of 100,000 '[' is 200 KB, far under the line cap, and overflowed the
// stack of the owner that validated it. The scan keeps one counter and one flag, whatever the depth.

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;

/**
 * Whether `text` opens more than `limit` arrays and objects inside one another. Brackets inside
 * strings do not count; escapes are honoured. Every byte it looks at is ASCII, which never occurs
 * inside a multi-byte UTF-8 sequence, so raw bytes need no decoding first. Text that is not JSON
 * gets an answer too; JSON.parse then says what is wrong with it.
 */
export function nestsDeeperThan(text: Uint8Array, limit: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const byte = text[i];
    if (inString) {
      if (byte === BACKSLASH) i++;
      else if (byte === QUOTE) inString = false;
    } else if (byte === QUOTE) {
      inString = true;
    } else if (byte === OPEN_ARRAY || byte === OPEN_OBJECT) {
      if (++depth > limit) return true;
    } else if (byte === CLOSE_ARRAY || byte === CLOSE_OBJECT) {
      depth--;
    }
  }
  return false;
}
