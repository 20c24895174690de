import { brotliCompressSync, deflateRawSync, gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { keyForms } from '../../../electron/credentials/keyForms.ts';
import {
  scrubbedBody,
  scrubbedBodyHeaders,
  scrubbedRawHeaders,
  scrubbedText,
  unreadableCoding,
} from '../../../electron/proxy/scrubbedResponse.ts';

// A response from where a key may have gone, on its way to the client: its head scrubbed, its body
// decoded when compressed and scrubbed, whatever the pieces, and a coding that cannot be read named.

const KEY = 'sk-ant-api03-REALkey0123456789abcdefghijklmnopqrstuvwxyzAA';
const STAND_IN = 'sk-ant-api03-STANDINzyxwvutsrqponmlkjihgfedcbaZYXWVUTSRQAA';
const FORMS = keyForms(KEY, STAND_IN);
const TEXT = `{"echo":"${KEY}","again":"${encodeURIComponent(KEY)}","b64":"${Buffer.from(`x${KEY}`).toString('base64')}"}`;
const SCRUBBED = `{"echo":"${STAND_IN}","again":"${STAND_IN}","b64":"${Buffer.from(`x${STAND_IN}`).toString('base64')}"}`;

/** A zstd frame holding `bytes` in one raw block (RFC 8878 section 3.1.1): Node has no zstd compressor. */
function zstdFrame(bytes: Buffer): Buffer {
  const header = Buffer.from([0x28, 0xb5, 0x2f, 0xfd, 0x20, bytes.length]);
  const block = Buffer.alloc(3);
  block.writeUIntLE(1 | (bytes.length << 3), 0, 3);
  return Buffer.concat([header, block, bytes]);
}

function through(contentEncoding: string | undefined, wire: Buffer, pieces: number): Promise<{ body: string; err: Error | null }> {
  return new Promise((resolve) => {
    const out: Buffer[] = [];
    const body = scrubbedBody(FORMS, contentEncoding, {
      deliver: (piece) => (out.push(piece), true),
      drained: () => undefined,
      done: (err) => resolve({ body: Buffer.concat(out).toString(), err }),
    });
    for (let i = 0; i < pieces; i++)
      body.write(wire.subarray(Math.floor((i * wire.length) / pieces), Math.floor(((i + 1) * wire.length) / pieces)));
    body.end();
  });
}

describe('scrubbed responses', () => {
  it('scrubs header names and values and the reason phrase', () => {
    const raw = scrubbedRawHeaders(FORMS, [
      Buffer.from(`x-${KEY}`),
      Buffer.from('1'),
      Buffer.from('location'),
      Buffer.from(`https://a/?key=${KEY}`),
    ]);
    expect(raw.map(String)).toEqual([`x-${STAND_IN}`, '1', 'location', `https://a/?key=${STAND_IN}`]);
    expect(scrubbedText(FORMS, `OK ${KEY}`)).toBe(`OK ${STAND_IN}`);
    const plain = 'OK';
    expect(scrubbedText(FORMS, plain)).toBe(plain);
  });

  it.each([
    ['no coding', undefined, (b: Buffer) => b],
    ['gzip', 'gzip', gzipSync],
    ['raw deflate', 'deflate', deflateRawSync],
    ['br', 'br', brotliCompressSync],
    ['zstd', 'zstd', zstdFrame],
    ['gzip then br', 'gzip, br', (b: Buffer) => brotliCompressSync(gzipSync(b))],
  ])('decodes (%s) and scrubs a body whatever its pieces', async (_label, coding, encode) => {
    for (const pieces of [1, 3, 17])
      expect(await through(coding, encode(Buffer.from(TEXT)), pieces)).toEqual({ body: SCRUBBED, err: null });
  });

  it('says why a body it cannot decode cannot pass, and fails one that does not decode', async () => {
    expect(unreadableCoding('gzip, br')).toBeNull();
    expect(unreadableCoding(undefined)).toBeNull();
    expect(unreadableCoding('identity')).toBeNull();
    expect(unreadableCoding('x-custom')).toBe(
      'the upstream answered in content-encoding x-custom, which capsem cannot read to make sure it carries no provider key back; refused',
    );
    const broken = await through('br', Buffer.from('not brotli at all, not at all'), 1);
    expect(broken.err?.message).toMatch(/^the response body does not decode/);
    expect(broken.body).not.toContain(KEY);
  });

  it('drops the coding of a decoded body, and its length only when it can no longer vouch for it', () => {
    const head = { 'content-type': 'text/plain', 'content-encoding': 'gzip', 'content-length': '10' };
    expect(scrubbedBodyHeaders(head, true, true)).toEqual({ 'content-type': 'text/plain' });
    expect(scrubbedBodyHeaders(head, false, true)).toBe(head);
    expect(scrubbedBodyHeaders({ 'content-length': '10' }, false, false)).toEqual({});
  });
});
