import { fixEdge, isBase64Character, type EdgeBits, type KeyForm } from './keyForms.ts';

// Replaces every form of a real key in a stream with the stand-in's form, chunk by chunk, before
// the bytes go on: a response to the client and to the recorder. A key split across chunks is
// found all the same: only the end of a chunk that could still be the start of a form is held
// back until the next chunk says, so a stream whose chunks end elsewhere (an SSE event's blank
// line) goes on at once. The output is the same whatever the chunking: the earliest form wins,
// the longer of two at one place.

const NOTHING = Buffer.alloc(0);

interface Partial {
  readonly at: number;
  readonly form: KeyForm;
}

export class KeyScrubber {
  /** The tail of the last chunk that could be the start of a form, not yet let go. */
  private held = NOTHING;
  /** A base64 form ended the last chunk: the next byte mixes its last bits with what follows. */
  private trail: EdgeBits | null = null;

  constructor(private readonly forms: readonly KeyForm[]) {}

  /** What may go on now; usually the chunk itself. */
  push(chunk: Buffer): Buffer {
    if (this.held.length === 0) return this.run(chunk, false, false);
    const window = Buffer.concat([this.held, chunk]);
    this.held = NOTHING;
    return this.run(window, true, false);
  }

  /** The stream ended: what was held back goes on. */
  end(): Buffer {
    const held = this.held;
    this.held = NOTHING;
    this.trail = null;
    return held.length === 0 ? NOTHING : this.run(held, true, true);
  }

  /** One buffer whatever was replaced: a chunk goes on as one write (one HTTP chunk, one frame). */
  private run(input: Buffer, owned: boolean, final: boolean): Buffer {
    let window = input;
    let mine = owned;
    const own = (): void => {
      if (!mine) window = Buffer.from(window);
      mine = true;
    };
    if (this.trail && window.length > 0) {
      own();
      fixEdge(window, 0, this.trail);
      this.trail = null;
    }
    const partials = final ? [] : this.partials(window);
    const next = this.forms.map(() => -2);
    const out: Buffer[] = [];
    let from = 0;
    let pos = 0;
    let keepFrom = window.length;
    for (;;) {
      let at = -1;
      let form: KeyForm | null = null;
      for (let i = 0; i < this.forms.length; i++) {
        const candidate = this.forms[i]!;
        if (next[i]! !== -1 && next[i]! < pos) next[i] = window.indexOf(candidate.needle, pos);
        const found = next[i]!;
        if (found >= 0 && (form === null || found < at || (found === at && candidate.needle.length > form.needle.length))) {
          at = found;
          form = candidate;
        }
      }
      const partial = partials.find((p) => p.at >= pos);
      if (partial && (form === null || partial.at < at || (partial.at === at && partial.form.needle.length > form.needle.length))) {
        // Held with the character before it when that character may hold a key's first bits: any
        // form that may start there, not only the first one found, can need that character.
        keepFrom = Math.min(...partials.filter((p) => p.at >= pos).map((p) => (p.form.lead && p.at - 1 >= pos ? p.at - 1 : p.at)));
        break;
      }
      if (form === null) break;
      const found = form;
      own();
      if (found.lead && at - 1 >= pos) fixEdge(window, at - 1, found.lead);
      out.push(window.subarray(from, at), found.replacement);
      pos = from = at + found.needle.length;
      if (found.trail) {
        if (pos < window.length) fixEdge(window, pos, found.trail);
        else if (!final) this.trail = found.trail;
      }
    }
    if (keepFrom < window.length) this.held = Buffer.from(window.subarray(keepFrom));
    if (out.length === 0) return keepFrom === window.length ? window : window.subarray(0, keepFrom);
    if (keepFrom > from) out.push(window.subarray(from, keepFrom));
    return Buffer.concat(out);
  }

  /**
   * Places near the end of `window` from which the rest is the start of some form, earliest first.
   * A base64 form whose first character mixes in the byte before it may start right after the
   * window: its last byte, when it is a base64 character, waits with it.
   */
  private partials(window: Buffer): Partial[] {
    const found: Partial[] = [];
    const last = window.length - 1;
    for (const form of this.forms) {
      const { needle } = form;
      if (form.lead && last >= 0 && isBase64Character(window[last]!)) found.push({ at: window.length, form });
      let at = window.indexOf(needle[0]!, Math.max(0, window.length - needle.length + 1));
      while (at >= 0) {
        if (needle.compare(window, at, window.length, 0, window.length - at) === 0) found.push({ at, form });
        at = window.indexOf(needle[0]!, at + 1);
      }
    }
    return found.sort((a, b) => a.at - b.at);
  }
}

/** One buffer scrubbed whole; the buffer itself when nothing in it is a key. */
export function scrubBytes(forms: readonly KeyForm[], bytes: Buffer): Buffer {
  const scrubber = new KeyScrubber(forms);
  const out = scrubber.push(bytes);
  const rest = scrubber.end();
  return rest.length === 0 ? out : Buffer.concat([out, rest]);
}
