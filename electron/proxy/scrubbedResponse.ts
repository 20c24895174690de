import type { Transform } from 'node:stream';
import type { KeyForm } from '../credentials/keyForms.ts';
import { KeyScrubber, scrubBytes } from '../credentials/keyScrubber.ts';
import { codingsOf, decodable, decodingStream } from '../telemetry/decodeBody.ts';

// What comes back from where a provider key may have gone (the broker's scrubForms), on its way to
// the client and the recorder: every form of the key in the status line, the headers (names and
// values, Location and Set-Cookie included) and the body is swapped for the stand-in's. A body the
// upstream compressed is decoded first (a compressed key is still a key) and goes on decoded, its
// Content-Encoding dropped; one in a coding that cannot be undone here is refused before anything
// of it is sent. Decoding streams, so memory stays bounded whatever the body expands to.

/** A header list as [name, value, name, value, ...], each scrubbed. */
export function scrubbedRawHeaders(forms: readonly KeyForm[], raw: readonly Buffer[]): Buffer[] {
  return raw.map((bytes) => scrubBytes(forms, bytes));
}

/** A status line's reason phrase, or any other text of the head, scrubbed (bytes as Latin-1, as Node reads a head). */
export function scrubbedText(forms: readonly KeyForm[], text: string): string {
  const bytes = Buffer.from(text, 'latin1');
  const out = scrubBytes(forms, bytes);
  return out === bytes ? text : out.toString('latin1');
}

/** Why a body coded this way cannot reach the client from where a key may have gone; null when it can be read. */
export function unreadableCoding(contentEncoding: string | undefined): string | null {
  const codings = codingsOf(contentEncoding);
  const unknown = codings.find((coding) => !decodable(coding));
  return unknown === undefined
    ? null
    : `the upstream answered in content-encoding ${unknown}, which capsem cannot read to make sure it carries no provider key back; refused`;
}

/** Headers of a response whose body is sent on decoded and scrubbed: its coding undone, and its length when scrubbing can change it. */
export function scrubbedBodyHeaders<T extends Record<string, unknown>>(headers: T, decoded: boolean, keepsLength: boolean): T {
  if (!decoded && keepsLength) return headers;
  const out: Record<string, unknown> = { ...headers };
  delete out['content-length'];
  if (decoded) delete out['content-encoding'];
  return out as T;
}

export interface BodySink {
  /** A scrubbed piece for the client (and the recorder); false when the client is full. */
  deliver(piece: Buffer): boolean;
  /** The body may take more from upstream (after a write said false). */
  drained(): void;
  /** The body ended (null), or decoding failed. */
  done(err: Error | null): void;
}

export interface ScrubbedBody {
  /** Whether the body is decoded on its way (the upstream compressed it). */
  readonly decoded: boolean;
  /** False when the upstream should wait for the sink's `drained`. */
  write(chunk: Buffer): boolean;
  end(): void;
  /** The client took what was waiting: decoded output flows again. */
  clientDrained(): void;
  destroy(): void;
}

/** A response body scrubbed on its way, decoded first when `contentEncoding` says it is compressed (check unreadableCoding first). */
export function scrubbedBody(forms: readonly KeyForm[], contentEncoding: string | undefined, sink: BodySink): ScrubbedBody {
  const scrubber = new KeyScrubber(forms);
  /** Nothing to send (all of it held back) leaves the client as it was. */
  const deliverAll = (piece: Buffer): boolean => piece.length === 0 || sink.deliver(piece);
  const codings = codingsOf(contentEncoding);
  if (codings.length === 0)
    return {
      decoded: false,
      write: (chunk) => deliverAll(scrubber.push(chunk)),
      end: () => {
        deliverAll(scrubber.end());
        sink.done(null);
      },
      clientDrained: () => undefined,
      destroy: () => undefined,
    };
  const stages: Transform[] = codings.map(decodingStream);
  for (let i = 1; i < stages.length; i++) stages[i - 1]!.pipe(stages[i]!);
  const first = stages[0]!;
  const last = stages.at(-1)!;
  let finished = false;
  const finish = (err: Error | null): void => {
    if (finished) return;
    finished = true;
    if (err) for (const stage of stages) stage.destroy();
    sink.done(err);
  };
  for (const stage of stages) stage.on('error', (err) => finish(new Error(`the response body does not decode: ${err.message}`)));
  first.on('drain', () => sink.drained());
  last.on('data', (chunk: Buffer) => {
    if (!deliverAll(scrubber.push(chunk))) last.pause();
  });
  last.on('end', () => {
    deliverAll(scrubber.end());
    finish(null);
  });
  return {
    decoded: true,
    write: (chunk) => first.write(chunk),
    end: () => void first.end(),
    clientDrained: () => void last.resume(),
    destroy: () => {
      finished = true;
      for (const stage of stages) stage.destroy();
    },
  };
}
