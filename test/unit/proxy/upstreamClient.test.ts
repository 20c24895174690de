import { describe, expect, it } from 'vitest';
import { headersFromRaw, originOf } from '../../../electron/proxy/upstreamClient.ts';

describe('upstream client helpers', () => {
  it('shapes raw upstream headers as node:http does: lower-case, repeats joined, set-cookie kept apart', () => {
    const raw = ['Content-Type', 'text/plain', 'Set-Cookie', 'a=1', 'Vary', 'accept', 'set-cookie', 'b=2', 'vary', 'origin'].map((s) =>
      Buffer.from(s),
    );
    expect(headersFromRaw(raw)).toEqual({ 'content-type': 'text/plain', 'set-cookie': ['a=1', 'b=2'], vary: 'accept, origin' });
  });

  it('puts IPv6 destinations in brackets in the origin', () => {
    expect(originOf('https', '::1', 8443)).toBe('https://[::1]:8443');
    expect(originOf('http', 'api.example.test', 80)).toBe('http://api.example.test:80');
  });
});
