import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { openSessionCredentials, type OutgoingHeaders } from '../../../electron/credentials/credentialBroker.ts';
import { credentialRefOf } from '../../../electron/credentials/credentialRef.ts';
import { DEFAULT_CREDENTIALS_SETTINGS, type CredentialsSettings } from '../../../electron/credentials/providers.ts';

// The broker on its own: stand-in shapes, substitution only on the exact host and value, and a
// property that whatever a request looks like, the real key goes only where it belongs.

const REAL = {
  ANTHROPIC_API_KEY: 'sk-ant-api03-the-real-anthropic-key',
  OPENAI_API_KEY: 'sk-proj-the-real-openai-key',
  GOOGLE_API_KEY: 'AIza-the-real-google-key',
};
const refOf = credentialRefOf(Buffer.alloc(32, 7));
const open = (settings: CredentialsSettings = DEFAULT_CREDENTIALS_SETTINGS) =>
  openSessionCredentials({ env: REAL, store: null, settings: () => settings, credentialRefOf: refOf });

describe('session stand-ins', () => {
  it("have each provider's key shape, differ per session and never hold the real key", () => {
    const a = open().guestEnv;
    const b = open().guestEnv;
    expect(a.ANTHROPIC_API_KEY).toMatch(/^sk-ant-api03-[A-Za-z0-9_-]{93}AA$/);
    expect(a.OPENAI_API_KEY).toMatch(/^sk-proj-[A-Za-z0-9_-]{156}$/);
    // The host had the Gemini key as GOOGLE_API_KEY: the guest gets the stand-in under it and under GEMINI_API_KEY.
    expect(a.GOOGLE_API_KEY).toMatch(/^AIza[A-Za-z0-9_-]{35}$/);
    expect(a.GEMINI_API_KEY).toBe(a.GOOGLE_API_KEY);
    expect(a.ANTHROPIC_API_KEY).not.toBe(b.ANTHROPIC_API_KEY);
    for (const real of Object.values(REAL)) expect(JSON.stringify(a)).not.toContain(real);
  });
});

describe('substitution', () => {
  const { guestEnv, broker } = open();
  it("swaps the stand-in for the real key only on the provider's exact host and header", () => {
    expect(broker.request('api.anthropic.com', { 'x-api-key': guestEnv.ANTHROPIC_API_KEY! }, '/v1/messages').headers['x-api-key']).toBe(
      REAL.ANTHROPIC_API_KEY,
    );
    expect(broker.request('API.OPENAI.COM', { authorization: `Bearer ${guestEnv.OPENAI_API_KEY}` }, '/v1/chat').headers.authorization).toBe(
      `Bearer ${REAL.OPENAI_API_KEY}`,
    );
    expect(broker.request('generativelanguage.googleapis.com', {}, `/v1beta/m:generateContent?key=${guestEnv.GEMINI_API_KEY}`).path).toBe(
      `/v1beta/m:generateContent?key=${REAL.GOOGLE_API_KEY}`,
    );
    // Not the exact value: left as it is, nothing substituted.
    const near = broker.request('api.anthropic.com', { 'x-api-key': `${guestEnv.ANTHROPIC_API_KEY} ` }, '/');
    expect(near.headers['x-api-key']).toBe(`${guestEnv.ANTHROPIC_API_KEY} `);
    expect(near.uses).toEqual([]);
    // A look-alike host gets a refusal, not the key.
    const lookalike = broker.request('api.anthropic.com.evil.example', { 'x-api-key': guestEnv.ANTHROPIC_API_KEY! }, '/');
    expect(lookalike.refusal).toMatch(/stand-in for the anthropic key \(in header:x-api-key\)/);
    expect(lookalike.headers['x-api-key']).toBe(guestEnv.ANTHROPIC_API_KEY);
  });

  it('lets a stand-in elsewhere through, recorded as allowed-leak, only when the policy says so', () => {
    const allowing = open({ ...DEFAULT_CREDENTIALS_SETTINGS, standInElsewhere: 'allow' });
    const out = allowing.broker.request('example.com', {}, `/?k=${encodeURIComponent(allowing.guestEnv.OPENAI_API_KEY!)}`);
    expect(out.refusal).toBeNull();
    expect(out.uses.map((u) => [u.provider, u.where, u.outcome])).toEqual([['openai', 'url', 'allowed-leak']]);
  });

  it('finds a stand-in in a body split across chunks at any point', () => {
    fc.assert(
      fc.property(fc.string(), fc.string(), fc.nat(), (before, after, cut) => {
        const body = Buffer.from(`${before}${guestEnv.OPENAI_API_KEY}${after}`);
        const at = cut % (body.length + 1);
        const scanner = broker.bodyScanner('upload.example', 1 << 20)!;
        const found = scanner.push(body.subarray(0, at)) ?? scanner.push(body.subarray(at));
        return found?.provider === 'openai' && found.where === 'body';
      }),
    );
  });

  it("never puts a real key on a request to a host that is not its provider's, whatever the request", () => {
    const standIns = Object.values(guestEnv);
    const piece = fc.oneof(
      fc.string(),
      fc.constantFrom(...standIns),
      fc.constantFrom(...standIns).map((s) => `Bearer ${s}`),
    );
    fc.assert(
      fc.property(
        fc.constantFrom(
          'api.anthropic.com',
          'api.openai.com',
          'generativelanguage.googleapis.com',
          'example.com',
          'api.anthropic.com.example',
          'openai.com',
        ),
        fc.dictionary(fc.constantFrom('x-api-key', 'authorization', 'x-goog-api-key', 'cookie', 'x-other'), piece),
        fc.array(piece, { maxLength: 3 }),
        (host, headers, query) => {
          const out = broker.request(host, headers as OutgoingHeaders, `/p?${query.map((q) => `key=${q}`).join('&')}`);
          const sent = JSON.stringify(out.headers) + out.path;
          const allowed: Record<string, string> = {
            'api.anthropic.com': REAL.ANTHROPIC_API_KEY,
            'api.openai.com': REAL.OPENAI_API_KEY,
            'generativelanguage.googleapis.com': REAL.GOOGLE_API_KEY,
          };
          const wrong = Object.values(REAL).filter((real) => real !== allowed[host] && sent.includes(real));
          // Refused requests never leave; a request that leaves carries no other provider's key.
          return (
            wrong.length === 0 &&
            (out.refusal === null || out.uses.some((u) => u.outcome === 'refused')) &&
            !JSON.stringify(out.uses).includes('real')
          );
        },
      ),
    );
  });
});
