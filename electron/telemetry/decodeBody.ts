import { Decompress as ZstdDecompress } from 'fzstd';
import { brotliDecompressSync, constants, gunzipSync, inflateRawSync, inflateSync } from 'node:zlib';

// Content-Encoding undone for parsing and display, never for the client (it gets the bytes the
// server sent). Output is capped, so a decompression bomb costs at most the cap, and a body cut
// short yields what it holds instead of an error.

export interface DecodedBody {
  readonly bytes: Buffer;
  /** True when the decoded body went past the cap and was cut there. */
  readonly truncated: boolean;
  /** Set when a coding could not be undone; `bytes` is then the input as it was. */
  readonly error?: string;
}

function zlibDecode(fn: typeof gunzipSync, input: Buffer, cap: number): { bytes: Buffer; truncated: boolean } {
  try {
    return { bytes: fn(input, { maxOutputLength: cap, finishFlush: constants.Z_SYNC_FLUSH }), truncated: false };
  } catch (err) {
    if (err instanceof RangeError || (err as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE') {
      return { bytes: fn(input, { maxOutputLength: cap * 2, finishFlush: constants.Z_SYNC_FLUSH }).subarray(0, cap), truncated: true };
    }
    throw err;
  }
}

function brotli(input: Buffer, cap: number): { bytes: Buffer; truncated: boolean } {
  try {
    return { bytes: brotliDecompressSync(input, { maxOutputLength: cap, finishFlush: constants.BROTLI_OPERATION_FLUSH }), truncated: false };
  } catch (err) {
    if (err instanceof RangeError || (err as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE') return { bytes: Buffer.alloc(0), truncated: true };
    throw err;
  }
}

function zstd(input: Buffer, cap: number): { bytes: Buffer; truncated: boolean } {
  const parts: Buffer[] = [];
  let size = 0;
  let truncated = false;
  const stream = new ZstdDecompress((chunk) => {
    if (truncated) return;
    const room = cap - size;
    if (chunk.length > room) {
      parts.push(Buffer.from(chunk.subarray(0, room)));
      size = cap;
      truncated = true;
      return;
    }
    parts.push(Buffer.from(chunk));
    size += chunk.length;
  });
  stream.push(input, true);
  return { bytes: Buffer.concat(parts, size), truncated };
}

function one(coding: string, input: Buffer, cap: number): { bytes: Buffer; truncated: boolean } {
  switch (coding) {
    case 'gzip':
    case 'x-gzip':
      return zlibDecode(gunzipSync, input, cap);
    case 'deflate':
      // "deflate" is zlib-wrapped by the letter of the RFC, raw in much of the wild.
      try {
        return zlibDecode(inflateSync, input, cap);
      } catch {
        return zlibDecode(inflateRawSync, input, cap);
      }
    case 'br':
      return brotli(input, cap);
    case 'zstd':
      return zstd(input, cap);
    default:
      throw new Error(`unsupported content-encoding ${coding}`);
  }
}

/** Undoes `content-encoding` (codings applied in order, so undone in reverse). */
export function decodeBody(input: Buffer, contentEncoding: string | undefined, cap: number): DecodedBody {
  const codings = (contentEncoding ?? '').split(',').map((c) => c.trim().toLowerCase()).filter((c) => c && c !== 'identity');
  let bytes = input;
  let truncated = false;
  try {
    for (const coding of codings.reverse()) {
      const out = one(coding, bytes, cap);
      bytes = out.bytes;
      truncated ||= out.truncated;
    }
    return { bytes, truncated };
  } catch (err) {
    return { bytes: input, truncated: false, error: `${codings.join(', ')}: ${(err as Error).message}` };
  }
}
