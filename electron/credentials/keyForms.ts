// The shapes a real key takes when an upstream reflects it: as it is, percent-encoded (as a URL or
// a form carries it), and base64 or base64url at each of the three alignments it can sit at inside
// longer encoded data (`Basic` credentials, a token, a JSON blob wrapped in base64). Each form
// comes with the stand-in's form of the same length when the stand-in is as long as the key, so
// swapping one for the other keeps Content-Length, WebSocket frame sizes and HTTP/2 framing true.

/** Bits of one base64 character that belong to the key, and the stand-in's bits in their place. */
export interface EdgeBits {
  /** The key's bits within the character's 6-bit value. */
  readonly mask: number;
  /** The stand-in's bits, already in place under the mask. */
  readonly bits: number;
  /** The alphabet a value of 62 or 63 is written in when the character there does not say. */
  readonly alphabet: 'base64' | 'base64url';
}

export interface KeyForm {
  readonly needle: Buffer;
  readonly replacement: Buffer;
  /**
   * Base64 forms: the character before the needle and the one after it mix the key's first or last
   * bits with their neighbours' (an alignment not a multiple of 6 bits); only the key's bits of
   * them are replaced. Null where the needle starts or ends on a character boundary.
   */
  readonly lead: EdgeBits | null;
  readonly trail: EdgeBits | null;
}

/** Base64 needles shorter than this would match by chance; a key this short has no base64 form worth looking for. */
const SHORTEST_ENCODED = 8;

const STANDARD = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
const URL_SAFE = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
/** A byte's value as a base64 character of either alphabet, or -1. */
const VALUE = new Int8Array(256).fill(-1);
for (let i = 0; i < 64; i++) {
  VALUE[STANDARD.charCodeAt(i)] = i;
  VALUE[URL_SAFE.charCodeAt(i)] = i;
}

export function isBase64Character(byte: number): boolean {
  return VALUE[byte]! >= 0;
}

/** Replaces the key's bits of the base64 character at `at` with the stand-in's; a byte that is no base64 character is left alone. */
export function fixEdge(bytes: Buffer, at: number, edge: EdgeBits): void {
  const byte = bytes[at]!;
  const value = VALUE[byte]!;
  if (value < 0) return;
  const fixed = (value & ~edge.mask & 63) | edge.bits;
  // A 62 or 63 keeps the alphabet the character was written in.
  const alphabet =
    byte === 0x2b || byte === 0x2f
      ? STANDARD
      : byte === 0x2d || byte === 0x5f
        ? URL_SAFE
        : edge.alphabet === 'base64'
          ? STANDARD
          : URL_SAFE;
  bytes[at] = alphabet.charCodeAt(fixed);
}

/** The percent-encodings a client or server is likely to use: JavaScript's, RFC 3986's strict one, each with upper- and lower-case hex. */
function percentForms(key: string): string[] {
  let component: string;
  try {
    component = encodeURIComponent(key);
  } catch {
    // A lone surrogate has no UTF-8 form: no URL carries it.
    return [];
  }
  const strict = component.replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
  const lower = (s: string): string => s.replace(/%[0-9A-F]{2}/g, (escape) => escape.toLowerCase());
  return [component, strict, lower(component), lower(strict)];
}

/**
 * The stand-in percent-encoded to `length` bytes: a URL may escape any character, so escaping some
 * of the stand-in's own (unreserved) characters makes its form as long as the key's, whose
 * reserved characters were escaped. Null when that cannot be done.
 */
function paddedPercentForm(standIn: string, length: number, lowerHex: boolean): string | null {
  const extra = length - Buffer.byteLength(standIn);
  if (extra < 0 || extra % 2 !== 0 || extra / 2 > standIn.length || /[^\x21-\x7e]/.test(standIn)) return null;
  const escaped = extra / 2;
  const cut = standIn.length - escaped;
  const hex = (c: string): string => {
    const h = c.charCodeAt(0).toString(16).padStart(2, '0');
    return `%${lowerHex ? h : h.toUpperCase()}`;
  };
  return standIn.slice(0, cut) + [...standIn.slice(cut)].map(hex).join('');
}

function base64Forms(key: Buffer, standIn: Buffer): KeyForm[] {
  const forms: KeyForm[] = [];
  const sameLength = key.length === standIn.length;
  for (const offset of [0, 1, 2]) {
    const pad = Buffer.alloc(offset);
    const encoded = Buffer.concat([pad, key]).toString('base64');
    const encodedStandIn = Buffer.concat([pad, standIn]).toString('base64');
    // The characters made of the key's bits alone; those at either side mix in a neighbour's.
    const start = Math.ceil((8 * offset) / 6);
    const end = Math.floor((8 * (offset + key.length)) / 6);
    const endStandIn = Math.floor((8 * (offset + standIn.length)) / 6);
    if (end - start < SHORTEST_ENCODED) continue;
    const leadKeyBits = (6 - ((8 * offset) % 6)) % 6;
    const trailKeyBits = (8 * (offset + key.length)) % 6;
    for (const alphabet of ['base64', 'base64url'] as const) {
      const spell = (s: string): string => (alphabet === 'base64' ? s : s.replace(/\+/g, '-').replace(/\//g, '_'));
      // An edge whose key bits the stand-in shares (a common prefix, a common last character) needs
      // no fixing, and a form without a leading one need not hold back the byte before it.
      const edge = (at: number, mask: number): EdgeBits | null => {
        const bits = VALUE[encodedStandIn.charCodeAt(at)]! & mask;
        return sameLength && mask !== 0 && bits !== (VALUE[encoded.charCodeAt(at)]! & mask) ? { mask, bits, alphabet } : null;
      };
      forms.push({
        needle: Buffer.from(spell(encoded.slice(start, end))),
        replacement: Buffer.from(spell(encodedStandIn.slice(start, endStandIn))),
        lead: leadKeyBits > 0 ? edge(start - 1, (1 << leadKeyBits) - 1) : null,
        trail: trailKeyBits > 0 ? edge(end, ((1 << trailKeyBits) - 1) << (6 - trailKeyBits)) : null,
      });
    }
  }
  return forms;
}

/** Every form of `key` a reflection could carry, each with the stand-in's form to put in its place; one form per needle. */
export function keyForms(key: string, standIn: string): KeyForm[] {
  const keyBytes = Buffer.from(key);
  const standInBytes = Buffer.from(standIn);
  const plain: KeyForm = { needle: keyBytes, replacement: standInBytes, lead: null, trail: null };
  const percent = percentForms(key).map((form): KeyForm => {
    const lowerHex = /%[0-9a-f]{2}/.test(form) && !/%[0-9A-F]{2}/.test(form);
    const padded = paddedPercentForm(standIn, Buffer.byteLength(form), lowerHex);
    return { needle: Buffer.from(form), replacement: Buffer.from(padded ?? encodeURIComponent(standIn)), lead: null, trail: null };
  });
  const seen = new Set<string>();
  return [plain, ...percent, ...base64Forms(keyBytes, standInBytes)].filter((form) => {
    const id = form.needle.toString('latin1');
    if (seen.has(id)) return false;
    seen.add(id);
    return true;
  });
}

/** Whether swapping every form for its replacement keeps a body's length. */
export function keepsLength(forms: readonly KeyForm[]): boolean {
  return forms.every((form) => form.needle.length === form.replacement.length);
}
