import type { PassThrough, Readable, Transform } from 'node:stream';
import type { BodyScanner, CredentialUse } from '../credentials/credentialBroker.ts';
import { codingsOf, decodable, decodingStream } from '../telemetry/decodeBody.ts';

// A request body on its way to a host where a stand-in does not belong, fed to the upstream only
// as fast as it is checked: the whole body, however long, and decoded when its Content-Encoding
// says it is compressed, so neither length nor compression carries a stand-in out unseen. A
// compressed piece goes on once the decoder has read past it (the next piece, or the end), so the
// upstream never holds more of the body than has been checked. Decoding stops at
// CHECKED_DECODED_BYTES (a decompression bomb costs that much, no more); a body that decodes past
// it, does not decode, or is in a coding this proxy cannot undo cannot be checked, and is stopped
// when the policy refuses stand-ins elsewhere (otherwise it goes on as it came).

/** How much of a compressed body is decoded to look for stand-ins. */
export const CHECKED_DECODED_BYTES = 64 << 20;

export interface BodyCheckReport {
  /** A stand-in seen in the body (reported once); a refused one has stopped the body. */
  sighted(use: CredentialUse): void;
  /** Why the body could not be checked; it has been stopped. */
  unchecked(reason: string): void;
}

const STAND_IN_IN_BODY = 'the request body carries a stand-in for a provider key';

/** Feeds `req` to `body` through the scanner; a refused stand-in or an unchecked body destroys `body` there, and the rest is held back. */
export function checkBody(
  req: Pick<Readable, 'on' | 'pause' | 'resume'>,
  body: PassThrough,
  scanner: BodyScanner,
  contentEncoding: string | undefined,
  report: BodyCheckReport,
): void {
  let stopped = false;
  /** The decoders of a compressed body, first to last. */
  let stages: Transform[] = [];
  const halt = (reason: string): void => {
    stopped = true;
    for (const stage of stages) stage.destroy();
    body.destroy(new Error(reason));
  };
  /** A sighting from the scanner: refused, it stops the body. */
  const scan = (chunk: Buffer): void => {
    const use = scanner.push(chunk);
    if (!use) return;
    report.sighted(use);
    if (use.outcome === 'refused') halt(STAND_IN_IN_BODY);
  };
  /** The upstream is full: wait for it to drain. */
  let waiting = false;
  /** A piece is with the decoder: one at a time, so "read past it" means the next piece's write has come back. */
  let writing = false;
  const resume = (): void => {
    if (!waiting && !writing && !stopped) req.resume();
  };
  const forward = (chunk: Buffer): void => {
    if (body.write(chunk) || waiting) return;
    waiting = true;
    req.pause();
    body.once('drain', () => {
      waiting = false;
      resume();
    });
  };
  const codings = codingsOf(contentEncoding);
  if (codings.length === 0) {
    req.on('data', (chunk: Buffer) => {
      if (stopped) return;
      scan(chunk);
      if (!stopped) forward(chunk);
    });
    req.on('end', () => stopped || body.end());
    return;
  }

  const unknown = codings.find((coding) => !decodable(coding));
  /** Checking is over (the decoder ended, or gave up where the policy lets the body go unchecked): the rest goes as it comes. */
  let done = unknown !== undefined;
  /** Pieces written to the decoder and not yet forwarded: all but the last go once the decoder has read the last. */
  let held: Buffer[] = [];
  let ended = false;
  const stop = (reason: string): void => {
    if (stopped) return;
    halt(reason);
    report.unchecked(reason);
  };
  const finishChecking = (): void => {
    if (stopped || done) return;
    done = true;
    for (const stage of stages) stage.destroy();
    for (const chunk of held) forward(chunk);
    held = [];
    writing = false;
    if (ended) body.end();
    else resume();
  };
  const cannotCheck = (reason: string): void => (scanner.refuses ? stop(reason) : finishChecking());
  if (unknown !== undefined) {
    if (scanner.refuses) stop(`the request body is in content-encoding ${unknown}, which capsem cannot decode to check it`);
  } else {
    stages = codings.map(decodingStream);
    for (let i = 1; i < stages.length; i++) stages[i - 1]!.pipe(stages[i]!);
    let decoded = 0;
    const last = stages.at(-1)!;
    last.on('data', (chunk: Buffer) => {
      if (stopped || done) return;
      decoded += chunk.length;
      if (decoded > CHECKED_DECODED_BYTES)
        return cannotCheck(`the request body decodes to more than ${CHECKED_DECODED_BYTES >> 20} MiB, past what capsem checks`);
      scan(chunk);
    });
    last.on('end', finishChecking);
    for (const stage of stages)
      stage.on('error', (err) => cannotCheck(`the request body does not decode as ${codings.join(', ')}: ${err.message}`));
  }
  const first = stages[0];
  /** The decoder has read everything written to it: every piece but the last may go. */
  const caughtUp = (): void => {
    if (stopped || done) return;
    // Output still queued in the decoder is read before the pieces it came from go on.
    if (stages.some((stage) => stage.readableLength > 0)) return void setImmediate(caughtUp);
    writing = false;
    while (held.length > 1) forward(held.shift()!);
    resume();
  };
  req.on('data', (chunk: Buffer) => {
    if (stopped) return;
    if (done) return forward(chunk);
    held.push(chunk);
    writing = true;
    req.pause();
    first!.write(chunk, caughtUp);
  });
  req.on('end', () => {
    ended = true;
    if (stopped) return;
    if (done) return void body.end();
    first!.end();
  });
}
