import { PassThrough } from 'node:stream';
import { brotliCompressSync, deflateRawSync, deflateSync, gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import type { BodyScanner, CredentialUse } from '../../../electron/credentials/credentialBroker.ts';
import { CHECKED_DECODED_BYTES, checkBody } from '../../../electron/proxy/requestBodyCheck.ts';
import { decodeBody } from '../../../electron/telemetry/decodeBody.ts';

// A request body on its way to where stand-ins do not belong, against stand-in streams: read whole
// and decoded when compressed, forwarded no faster than it is checked, and stopped at a refused
// stand-in or where it cannot be checked (a coding past reading, a decompression bomb), unless the
// policy lets stand-ins go elsewhere.

const STAND_IN = 'sk-proj-STANDIN0123456789abcdefghijklmnop';

const use = (outcome: CredentialUse['outcome']): CredentialUse => ({
  provider: 'openai',
  where: 'body',
  host: 'example.com',
  port: 443,
  tls: true,
  outcome,
  credentialRef: 'k1',
});

/** A scanner that finds STAND_IN across chunks, as the broker's does. */
function scanner(outcome: CredentialUse['outcome'] = 'refused'): BodyScanner {
  let seen = '';
  let reported = false;
  return {
    refuses: outcome === 'refused',
    push(chunk) {
      const window = seen + chunk.toString('latin1');
      seen = window.slice(-STAND_IN.length);
      if (reported || !window.includes(STAND_IN)) return null;
      reported = true;
      return use(outcome);
    },
  };
}

async function fed(
  pieces: readonly Buffer[],
  coding?: string,
  check: BodyScanner = scanner(),
): Promise<{ forwarded: Buffer; error: string | null; sighted: CredentialUse[]; unchecked: string[] }> {
  const req = new PassThrough();
  const body = new PassThrough();
  const sighted: CredentialUse[] = [];
  const unchecked: string[] = [];
  checkBody(req, body, check, coding, { sighted: (u) => sighted.push(u), unchecked: (r) => unchecked.push(r) });
  const out: Buffer[] = [];
  body.on('data', (c: Buffer) => out.push(c));
  const done = new Promise<string | null>((resolve) => {
    body.on('end', () => resolve(null));
    body.on('error', (err) => resolve(err.message));
  });
  for (const p of pieces) req.write(p);
  req.end();
  const error = await done;
  return { forwarded: Buffer.concat(out), error, sighted, unchecked };
}

const text = (...pieces: string[]): Buffer[] => pieces.map((p) => Buffer.from(p));
/** A buffer cut into `n` pieces. */
const cut = (bytes: Buffer, n: number): Buffer[] =>
  Array.from({ length: n }, (_, i) => bytes.subarray(Math.floor((i * bytes.length) / n), Math.floor(((i + 1) * bytes.length) / n)));

describe('checked request bodies', () => {
  it('forwards the whole body and reports a sighting that was allowed', async () => {
    const result = await fed(text('a', STAND_IN, 'c'), undefined, scanner('allowed-leak'));
    expect(result).toEqual({ forwarded: Buffer.from(`a${STAND_IN}c`), error: null, sighted: [use('allowed-leak')], unchecked: [] });
  });

  it('stops at a refused stand-in: that piece and the rest never reach the upstream', async () => {
    const result = await fed(text('a', STAND_IN, 'c'));
    expect(result.forwarded.toString()).toBe('a');
    expect(result.error).toBe('the request body carries a stand-in for a provider key');
    expect(result.sighted).toEqual([use('refused')]);
  });

  it.each([
    ['gzip', gzipSync],
    ['deflate', deflateSync],
    ['deflate', deflateRawSync],
    ['br', brotliCompressSync],
    ['gzip, br', (b: Buffer) => brotliCompressSync(gzipSync(b))],
  ] as const)('finds a stand-in in a %s body and forwards no piece the decoder has not read past', async (coding, compress) => {
    const compressed = compress(Buffer.from(`${'padding '.repeat(4000)}${STAND_IN}${' more'.repeat(4000)}`));
    const result = await fed(cut(compressed, 7), coding);
    expect(result.error).toBe('the request body carries a stand-in for a provider key');
    expect(result.sighted).toEqual([use('refused')]);
    // What reached the upstream does not decode as far as the stand-in's end.
    expect(result.forwarded.length).toBeLessThan(compressed.length);
    expect((await decodeBody(result.forwarded, coding, 1 << 30)).bytes.toString()).not.toContain(STAND_IN);
  });

  it('forwards a compressed body without a stand-in exactly as it came', async () => {
    const compressed = gzipSync(Buffer.from('nothing to see here '.repeat(5000)));
    const result = await fed(cut(compressed, 5), 'gzip');
    expect(result).toEqual({ forwarded: compressed, error: null, sighted: [], unchecked: [] });
  });

  it('refuses a body that decodes past the checked size (a gzip bomb), a coding it cannot undo, and one that does not decode', async () => {
    const bomb = gzipSync(Buffer.alloc(CHECKED_DECODED_BYTES + (1 << 20)));
    const big = await fed(cut(bomb, 3), 'gzip');
    expect(big.error).toMatch(/decodes to more than 64 MiB/);
    expect(big.unchecked).toHaveLength(1);
    expect(big.forwarded.length).toBeLessThan(bomb.length);
    const unknown = await fed(text('anything'), 'compress');
    expect(unknown.error).toMatch(/content-encoding compress, which capsem cannot decode/);
    expect(unknown.forwarded.length).toBe(0);
    const broken = await fed(text('not gzip at all'), 'gzip');
    expect(broken.error).toMatch(/does not decode as gzip/);
  });

  it('lets an uncheckable body go on as it came when the policy allows stand-ins elsewhere', async () => {
    const result = await fed(text('anything'), 'compress', scanner('allowed-leak'));
    expect(result).toEqual({ forwarded: Buffer.from('anything'), error: null, sighted: [], unchecked: [] });
  });
});
