import { brotliCompressSync, gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { bodyText } from '../../../electron/sessions/bodyText.ts';

describe('bodyText', () => {
  it('pretty-prints JSON and leaves other text as it is', async () => {
    expect((await bodyText(Buffer.from('{"a":[1,2]}'), null)).text).toBe('{\n  "a": [\n    1,\n    2\n  ]\n}');
    expect((await bodyText(Buffer.from('{not json'), null)).text).toBe('{not json');
    expect((await bodyText(Buffer.from('plain'), 'gzip')).text).toBe('plain');
    expect((await bodyText(null, null)).text).toBe('');
  });

  it('decodes bodies stored with their content-encoding still applied', async () => {
    expect((await bodyText(gzipSync('{"z":1}'), 'gzip')).text).toBe('{\n  "z": 1\n}');
    expect((await bodyText(brotliCompressSync(Buffer.from([0xff, 0xfe, 0x80])), 'br')).text).toBeNull();
  });

  it('calls binary binary', async () => {
    expect((await bodyText(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0xff]), null)).text).toBeNull();
  });
});
