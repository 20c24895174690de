import { Decompress as ZstdDecompress } from 'fzstd';
import { Transform, type TransformCallback } from 'node:stream';
import { constants, createBrotliDecompress, createGunzip, createInflate, createInflateRaw } from 'node:zlib';

// Content-Encoding undone for parsing and display, and by the proxy where a provider key may be in
// a compressed body (a response from a provider's API, a request body scanned for stand-ins).
// Decoding streams and stops at the cap, so a decompression bomb costs at most the cap; a body cut
// short yields what it holds instead of an error.

export interface DecodedBody {
  readonly bytes: Buffer;
  /** True when the decoded body went past the cap and was cut there. */
  readonly truncated: boolean;
  /** Set when a coding could not be undone; `bytes` is then the input as it was. */
  readonly error?: string;
}

class ZstdTransform extends Transform {
  private readonly inner = new ZstdDecompress((chunk) => this.push(Buffer.from(chunk)));

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    try {
      this.inner.push(chunk);
      callback();
    } catch (err) {
      callback(err as Error);
    }
  }

  override _flush(callback: TransformCallback): void {
    callback();
  }
}

const lenient = { finishFlush: constants.Z_SYNC_FLUSH };

/** "deflate" is zlib-wrapped by the letter of the RFC, raw in much of the wild: its first two bytes say which. */
function zlibWrapped(first: Buffer): boolean {
  return first.length >= 2 && (first[0]! & 0x0f) === 8 && first[0]! >> 4 <= 7 && ((first[0]! << 8) | first[1]!) % 31 === 0;
}

/**
 * A deflate decoder that picks zlib or raw once the first two bytes are in. The inner decoder ends
 * on its own at the end of the deflate stream, and then takes no more: what follows is ignored.
 */
class DeflateTransform extends Transform {
  private inner: Transform | null = null;
  private first = Buffer.alloc(0);
  private innerEnded = false;
  private waiting: TransformCallback | null = null;

  private start(bytes: Buffer): Transform {
    const inner = zlibWrapped(bytes) ? createInflate(lenient) : createInflateRaw(lenient);
    inner.on('data', (chunk: Buffer) => this.push(chunk));
    inner.on('error', (err) => this.destroy(err));
    inner.once('end', () => {
      this.innerEnded = true;
      this.release();
    });
    return inner;
  }

  private release(): void {
    const waiting = this.waiting;
    this.waiting = null;
    waiting?.();
  }

  private feed(bytes: Buffer, callback: TransformCallback): void {
    if (this.innerEnded) return callback();
    this.waiting = callback;
    this.inner!.write(bytes, () => this.release());
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    if (this.inner) return this.feed(chunk, callback);
    this.first = Buffer.concat([this.first, chunk]);
    if (this.first.length < 2) return callback();
    this.inner = this.start(this.first);
    this.feed(this.first, callback);
  }

  override _flush(callback: TransformCallback): void {
    const inner = (this.inner ??= this.start(this.first));
    if (this.innerEnded) return callback();
    if (this.first.length === 1) inner.write(this.first);
    this.waiting = callback;
    inner.end();
  }
}

/** Whether the proxy and the recorder can undo this coding. */
export function decodable(coding: string): boolean {
  return ['gzip', 'x-gzip', 'deflate', 'br', 'zstd'].includes(coding);
}

/** A stream that undoes one coding (see decodable); it throws for one it cannot. */
export function decodingStream(coding: string): Transform {
  switch (coding) {
    case 'gzip':
    case 'x-gzip':
      return createGunzip(lenient);
    case 'deflate':
      return new DeflateTransform();
    case 'br':
      return createBrotliDecompress({ finishFlush: constants.BROTLI_OPERATION_FLUSH });
    case 'zstd':
      return new ZstdTransform();
    default:
      throw new Error(`unsupported content-encoding ${coding}`);
  }
}

/** The codings to undo, in the order to undo them (applied in order, so undone in reverse). */
const NO_CODINGS: readonly string[] = [];

/** The codings a Content-Encoding names, lower case, in the order to undo them (identity left out). */
export function codingsOf(contentEncoding: string | undefined): readonly string[] {
  if (!contentEncoding) return NO_CODINGS;
  return contentEncoding
    .split(',')
    .map((c) => c.trim().toLowerCase())
    .filter((c) => c && c !== 'identity')
    .reverse();
}

/** The body itself when there is nothing to undo: no coding, or no bytes. */
function asSent(input: Buffer, codings: readonly string[]): DecodedBody | null {
  return input.length === 0 || codings.length === 0 ? { bytes: input, truncated: false } : null;
}

/** The body itself when its `content-encoding` leaves nothing to undo, else null (it needs `decodeBody`). */
export function plainBody(input: Buffer, contentEncoding: string | undefined): DecodedBody | null {
  return asSent(input, codingsOf(contentEncoding));
}

/** Undoes `content-encoding`, keeping at most `cap` bytes. */
export async function decodeBody(input: Buffer, contentEncoding: string | undefined, cap: number): Promise<DecodedBody> {
  const codings = codingsOf(contentEncoding);
  const plain = asSent(input, codings);
  if (plain) return plain;
  let bytes = input;
  let truncated = false;
  for (const coding of codings) {
    let stream: Transform;
    try {
      stream = decodingStream(coding);
    } catch (err) {
      return { bytes: input, truncated: false, error: `${codings.join(', ')}: ${(err as Error).message}` };
    }
    const out = await new Promise<{ bytes: Buffer; truncated: boolean; error?: string }>((resolve) => {
      const parts: Buffer[] = [];
      let size = 0;
      let done = false;
      const finish = (result: { bytes: Buffer; truncated: boolean; error?: string }): void => {
        if (done) return;
        done = true;
        stream.destroy();
        resolve(result);
      };
      stream.on('data', (chunk: Buffer) => {
        const room = cap - size;
        if (chunk.length >= room) {
          parts.push(chunk.subarray(0, room));
          size = cap;
          return finish({ bytes: Buffer.concat(parts, size), truncated: chunk.length > room || !stream.writableFinished });
        }
        parts.push(chunk);
        size += chunk.length;
      });
      stream.on('end', () => finish({ bytes: Buffer.concat(parts, size), truncated: false }));
      // A stream that breaks after yielding something was cut short: keep what it held.
      stream.on('error', (err) =>
        finish(
          size > 0
            ? { bytes: Buffer.concat(parts, size), truncated: false }
            : { bytes: Buffer.alloc(0), truncated: false, error: err.message },
        ),
      );
      stream.end(bytes);
    });
    if (out.error) return { bytes: input, truncated: false, error: `${codings.join(', ')}: ${out.error}` };
    bytes = out.bytes;
    truncated ||= out.truncated;
  }
  return { bytes, truncated };
}
