import { Decompress as ZstdDecompress } from 'fzstd';
import { Transform, type TransformCallback } from 'node:stream';
import { constants, createBrotliDecompress, createGunzip, createInflate, createInflateRaw, inflateSync } from 'node:zlib';

// Content-Encoding undone for parsing and display, never for the client (it gets the bytes the
// server sent). Decoding streams and stops at the cap, so a decompression bomb costs at most the
// cap; a body cut short yields what it holds instead of an error.

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

function decoder(coding: string, input: Buffer): Transform {
  switch (coding) {
    case 'gzip':
    case 'x-gzip':
      return createGunzip(lenient);
    case 'deflate': {
      // "deflate" is zlib-wrapped by the letter of the RFC, raw in much of the wild.
      try {
        inflateSync(input.subarray(0, Math.min(input.length, 64)), lenient);
        return createInflate(lenient);
      } catch {
        return createInflateRaw(lenient);
      }
    }
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

function codingsOf(contentEncoding: string | undefined): readonly string[] {
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
      stream = decoder(coding, bytes);
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
