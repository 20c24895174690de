import { describe, expect, it } from 'vitest';
import { allowedPeers, checkHost, checkSocket, newToken, tokenMatches } from '../../../electron/app/wsGuards.ts';

describe('browser-mode socket guards', () => {
  it('makes unguessable tokens and compares them whole', () => {
    const token = newToken();
    expect(token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(newToken()).not.toBe(token);
    expect(tokenMatches(token, token)).toBe(true);
    expect(tokenMatches(token, token.slice(0, -1))).toBe(false);
    expect(tokenMatches(token, `${token}x`)).toBe(false);
    expect(tokenMatches(token, null)).toBe(false);
  });

  it('answers only to its own Host names, and a dev server that proxies to it', () => {
    const { hosts } = allowedPeers(4000, 5173);
    expect(checkHost({ host: '127.0.0.1:4000' }, hosts).ok).toBe(true);
    expect(checkHost({ host: 'LOCALHOST:4000' }, hosts).ok).toBe(true);
    expect(checkHost({ host: '127.0.0.1:5173' }, hosts).ok).toBe(true);
    expect(checkHost({ host: 'rebind.example:4000' }, hosts)).toMatchObject({ ok: false, status: 403 });
    expect(checkHost({}, hosts).ok).toBe(false);
  });

  it('wants its own origin first, then the token; reasons fit a close frame', () => {
    const { origins } = allowedPeers(4000);
    const url = (q: string) => new URL(`http://127.0.0.1:4000/ws${q}`);
    expect(checkSocket({ origin: 'http://127.0.0.1:4000' }, url('?token=abc'), origins, 'abc').ok).toBe(true);
    const foreign = checkSocket({ origin: `http://${'x'.repeat(300)}.example` }, url('?token=abc'), origins, 'abc');
    expect(foreign).toMatchObject({ ok: false, reason: expect.stringMatching(/origin/) });
    expect(Buffer.byteLength((foreign as { reason: string }).reason)).toBeLessThanOrEqual(123);
    expect(checkSocket({ origin: 'http://127.0.0.1:4000' }, url(''), origins, 'abc')).toMatchObject({ ok: false, status: 401 });
  });
});
