import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { openSessionCredentials, type OutgoingHeaders } from '../../../electron/credentials/credentialBroker.ts';
import { credentialRefOf } from '../../../electron/credentials/credentialRef.ts';
import { DEFAULT_CREDENTIALS_SETTINGS, type CredentialsSettings } from '../../../electron/credentials/providers.ts';

// The broker on its own: stand-in shapes and lengths, substitution only over TLS to the exact host,
// port and value, a property that whatever a request looks like the real key goes only where it
// belongs, and the forms of each key that what comes back from there is scrubbed of.

/** Keys as long as the providers' own: 108, 164 and 39 characters. */
const REAL = {
  ANTHROPIC_API_KEY: `sk-ant-api03-the-real-anthropic-key-${'a'.repeat(70)}AA`,
  OPENAI_API_KEY: `sk-proj-the-real-openai-key-${'o'.repeat(136)}`,
  GOOGLE_API_KEY: 'AIza-the-real-google-key-0123456789abcd',
};
const at = (host: string, port = 443, scheme: 'https' | 'http' = 'https') => ({ scheme, host, port });
const refOf = credentialRefOf(Buffer.alloc(32, 7));
const open = (settings: CredentialsSettings = DEFAULT_CREDENTIALS_SETTINGS) =>
  openSessionCredentials({ env: REAL, store: null, settings: () => settings, credentialRefOf: refOf });

describe('session stand-ins', () => {
  it("have each provider's key shape and the key's length, differ per session and never hold the real key", () => {
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

  it("are as long as the key, keeping the shape's prefix and suffix while 16 random characters remain", () => {
    const standIn = (key: string): string =>
      openSessionCredentials({
        env: { ANTHROPIC_API_KEY: key },
        store: null,
        settings: () => DEFAULT_CREDENTIALS_SETTINGS,
        credentialRefOf: refOf,
      }).guestEnv.ANTHROPIC_API_KEY!;
    expect(standIn(`sk-ant-api03-${'k'.repeat(20)}`)).toMatch(/^sk-ant-api03-[A-Za-z0-9_-]{18}AA$/);
    expect(standIn(`sk-ant-api03-${'k'.repeat(17)}`)).toMatch(/^sk-ant-api03-[A-Za-z0-9_-]{17}$/);
    expect(standIn('k'.repeat(20))).toMatch(/^[A-Za-z0-9_-]{20}$/);
    // A key shorter than 16 bytes is no provider's: its stand-in keeps the shape's own length.
    expect(standIn('sk-short')).toMatch(/^sk-ant-api03-[A-Za-z0-9_-]{93}AA$/);
    // Length in bytes: a key with a multi-byte character.
    expect(standIn(`sk-ant-api03-é${'k'.repeat(20)}`)).toHaveLength(Buffer.byteLength(`sk-ant-api03-é${'k'.repeat(20)}`));
  });
});

describe('substitution', () => {
  const { guestEnv, broker } = open();
  it("swaps the stand-in for the real key only over TLS on the provider's exact host, port and header", () => {
    expect(broker.request(at('api.anthropic.com'), { 'x-api-key': guestEnv.ANTHROPIC_API_KEY! }, '/v1/messages').headers['x-api-key']).toBe(
      REAL.ANTHROPIC_API_KEY,
    );
    expect(
      broker.request(at('API.OPENAI.COM'), { authorization: `Bearer ${guestEnv.OPENAI_API_KEY}` }, '/v1/chat').headers.authorization,
    ).toBe(`Bearer ${REAL.OPENAI_API_KEY}`);
    expect(
      broker.request(at('generativelanguage.googleapis.com'), {}, `/v1beta/m:generateContent?key=${guestEnv.GEMINI_API_KEY}`).path,
    ).toBe(`/v1beta/m:generateContent?key=${REAL.GOOGLE_API_KEY}`);
    // Not the exact value: left as it is, nothing substituted.
    const near = broker.request(at('api.anthropic.com'), { 'x-api-key': `${guestEnv.ANTHROPIC_API_KEY} ` }, '/');
    expect(near.headers['x-api-key']).toBe(`${guestEnv.ANTHROPIC_API_KEY} `);
    expect(near.uses).toEqual([]);
    // A look-alike host gets a refusal, not the key.
    const lookalike = broker.request(at('api.anthropic.com.evil.example'), { 'x-api-key': guestEnv.ANTHROPIC_API_KEY! }, '/');
    expect(lookalike.refusal).toMatch(/stand-in for the anthropic key \(in header:x-api-key\)/);
    expect(lookalike.headers['x-api-key']).toBe(guestEnv.ANTHROPIC_API_KEY);
  });

  it("refuses the stand-in on the provider's own host over plain HTTP or on another port, naming the rule and how to allow it", () => {
    const plain = broker.request(at('api.anthropic.com', 80, 'http'), { 'x-api-key': guestEnv.ANTHROPIC_API_KEY! }, '/v1/messages');
    expect(plain.headers['x-api-key']).toBe(guestEnv.ANTHROPIC_API_KEY);
    expect(plain.uses.map((u) => [u.provider, u.where, u.host, u.port, u.tls, u.outcome])).toEqual([
      ['anthropic', 'header:x-api-key', 'api.anthropic.com', 80, false, 'refused'],
    ]);
    expect(plain.refusal).toBe(
      `this request carries the session's stand-in for the anthropic key (in header:x-api-key) to http://api.anthropic.com over plain HTTP: the anthropic key is released only over TLS (https://api.anthropic.com); refused and recorded (rule credentials.stand-in-elsewhere). Send it over https (the key never goes over plain HTTP). To let stand-ins go elsewhere as they are, set "credentials": {"standInElsewhere": "allow"} in the policy file`,
    );
    const port = broker.request(at('generativelanguage.googleapis.com', 8443), {}, `/v1beta/m?key=${guestEnv.GEMINI_API_KEY}`);
    expect(port.path).toBe(`/v1beta/m?key=${guestEnv.GEMINI_API_KEY}`);
    expect(port.refusal).toBe(
      `this request carries the session's stand-in for the gemini key (in url) to https://generativelanguage.googleapis.com:8443, a port that is not one of gemini's API ports (443); refused and recorded (rule credentials.stand-in-elsewhere). To release the key on that port, list it in the policy file: "credentials": {"ports": {"gemini": [443, 8443]}}`,
    );
  });

  it("releases a key on the ports the policy lists for a provider, built in or the policy's own, and on no other", () => {
    const settings: CredentialsSettings = {
      ...DEFAULT_CREDENTIALS_SETTINGS,
      ports: { anthropic: [443, 8443] },
      providers: [
        {
          id: 'acme',
          env: 'ACME_API_KEY',
          header: 'x-acme-key',
          bearer: false,
          hosts: ['api.acme.test'],
          ports: [9443],
          standInPrefix: 'acme-',
        },
      ],
    };
    const session = openSessionCredentials({
      env: { ...REAL, ACME_API_KEY: 'acme-the-real-key-0123456789' },
      store: null,
      settings: () => settings,
      credentialRefOf: refOf,
    });
    const send = (host: string, port: number, header: string, value: string) =>
      session.broker.request(at(host, port), { [header]: value }, '/').headers[header];
    expect(send('api.anthropic.com', 8443, 'x-api-key', session.guestEnv.ANTHROPIC_API_KEY!)).toBe(REAL.ANTHROPIC_API_KEY);
    expect(send('api.acme.test', 9443, 'x-acme-key', session.guestEnv.ACME_API_KEY!)).toBe('acme-the-real-key-0123456789');
    expect(send('api.acme.test', 443, 'x-acme-key', session.guestEnv.ACME_API_KEY!)).toBe(session.guestEnv.ACME_API_KEY);
    expect(session.broker.scrubForms(at('api.acme.test', 9443))).not.toBeNull();
    expect(session.broker.scrubForms(at('api.acme.test', 443))).toBeNull();
  });

  it('scrubs what comes back only from where a key may go, of that key alone', () => {
    expect(broker.scrubForms(at('example.com'))).toBeNull();
    expect(broker.scrubForms(at('api.anthropic.com', 80, 'http'))).toBeNull();
    expect(broker.scrubForms(at('api.anthropic.com', 8443))).toBeNull();
    const forms = broker.scrubForms(at('api.anthropic.com'))!;
    expect(forms[0]!.needle.toString()).toBe(REAL.ANTHROPIC_API_KEY);
    expect(forms[0]!.replacement.toString()).toBe(guestEnv.ANTHROPIC_API_KEY);
    expect(forms.some((f) => f.needle.toString().includes(REAL.OPENAI_API_KEY))).toBe(false);
    expect(forms.length).toBeGreaterThan(1);
  });

  it('lets a stand-in elsewhere through, recorded as allowed-leak, only when the policy says so', () => {
    const allowing = open({ ...DEFAULT_CREDENTIALS_SETTINGS, standInElsewhere: 'allow' });
    const out = allowing.broker.request(at('example.com'), {}, `/?k=${encodeURIComponent(allowing.guestEnv.OPENAI_API_KEY!)}`);
    expect(out.refusal).toBeNull();
    expect(out.uses.map((u) => [u.provider, u.where, u.outcome])).toEqual([['openai', 'url', 'allowed-leak']]);
  });

  it('finds a stand-in in a body split across chunks at any points, however far into the body', () => {
    fc.assert(
      fc.property(fc.string(), fc.string(), fc.array(fc.nat(), { maxLength: 4 }), fc.nat(3 << 20), (before, after, cuts, far) => {
        const body = Buffer.concat([Buffer.alloc(far, 'x'), Buffer.from(`${before}${guestEnv.OPENAI_API_KEY}${after}`)]);
        const points = [0, ...cuts.map((c) => far + (c % (body.length - far + 1))), body.length].sort((a, b) => a - b);
        const scanner = broker.bodyScanner(at('upload.example'))!;
        let found = null;
        for (let i = 1; i < points.length && !found; i++) found = scanner.push(body.subarray(points[i - 1], points[i]));
        return found?.provider === 'openai' && found.where === 'body' && scanner.refuses;
      }),
      { numRuns: 50 },
    );
    // The provider's own host over plain HTTP is elsewhere too; its TLS port is not.
    expect(broker.bodyScanner(at('api.openai.com', 80, 'http'))!.push(Buffer.from(guestEnv.OPENAI_API_KEY!))?.where).toBe('body');
    expect(broker.bodyScanner(at('api.openai.com'))!.push(Buffer.from(guestEnv.OPENAI_API_KEY!))).toBeNull();
  });

  it("never puts a real key on a request that is not TLS to its provider's host and port, whatever the request", () => {
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
        fc.constantFrom(443, 80, 8443),
        fc.constantFrom('https' as const, 'http' as const),
        fc.dictionary(fc.constantFrom('x-api-key', 'authorization', 'x-goog-api-key', 'cookie', 'x-other'), piece),
        fc.array(piece, { maxLength: 3 }),
        (host, port, scheme, headers, query) => {
          const out = broker.request(at(host, port, scheme), headers as OutgoingHeaders, `/p?${query.map((q) => `key=${q}`).join('&')}`);
          const sent = JSON.stringify(out.headers) + out.path;
          const allowed: Record<string, string> = {
            'api.anthropic.com': REAL.ANTHROPIC_API_KEY,
            'api.openai.com': REAL.OPENAI_API_KEY,
            'generativelanguage.googleapis.com': REAL.GOOGLE_API_KEY,
          };
          const released = scheme === 'https' && port === 443 ? allowed[host] : undefined;
          const wrong = Object.values(REAL).filter((real) => real !== released && sent.includes(real));
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
