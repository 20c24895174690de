import { readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { openSessionCredentials } from '../../../electron/credentials/credentialBroker.ts';
import { HomeKeyStore } from '../../../electron/credentials/homeKeyStore.ts';
import { FileKeyStore } from '../../../electron/credentials/keyStore.ts';
import { DEFAULT_CREDENTIALS_SETTINGS } from '../../../electron/credentials/providers.ts';
import { testKeyCipher } from '../../helpers/testKeyCipher.ts';
import { tempHome } from '../../helpers/tempHome.ts';

// The stored keys as the app (with the system keychain, here a real AES-256-GCM cipher in its
// place) and a process without it (the CLI, browser mode) read them: keys.encrypted.json over
// keys.json, the newest set winning, and a key only the app can read shown as locked, never as none.

const KEY = 'sk-ant-api03-THE-REAL-stored-key-0123456789abcdefXYZ';
const OTHER = 'sk-proj-another-plain-key-9876543210';
let home = tempHome();
afterEach(() => {
  home.remove();
  home = tempHome();
});
const encryptedFile = () => join(home.root, 'keys.encrypted.json');
const plainFile = () => join(home.root, 'keys.json');

describe('HomeKeyStore with a cipher (the app)', () => {
  it('keeps a key encrypted in keys.encrypted.json, 0600, with no byte of the key in the file', () => {
    const store = new HomeKeyStore(home, testKeyCipher());
    store.set('anthropic', `  ${KEY}\n`);
    expect(store.get('anthropic')).toBe(KEY);
    expect(statSync(encryptedFile()).mode & 0o777).toBe(0o600);
    const raw = readFileSync(encryptedFile());
    for (let i = 0; i + 8 <= KEY.length; i++) expect(raw.includes(KEY.slice(i, i + 8))).toBe(false);
    expect(raw.includes(Buffer.from(KEY).toString('base64').slice(0, 12))).toBe(false);
    expect(() => statSync(plainFile())).toThrow();
  });

  it('reads keys added with capsem keys from keys.json, and moves one off it when it is set again', () => {
    new FileKeyStore(home).set('anthropic', 'sk-ant-plain-old-key-0123456789');
    new FileKeyStore(home).set('openai', OTHER);
    const store = new HomeKeyStore(home, testKeyCipher());
    expect(store.providers()).toEqual(['anthropic', 'openai']);
    expect(store.get('anthropic')).toBe('sk-ant-plain-old-key-0123456789');
    store.set('anthropic', KEY);
    expect(store.get('anthropic')).toBe(KEY);
    expect(readFileSync(plainFile(), 'utf8')).not.toContain('sk-ant-plain-old-key');
    expect(store.get('openai')).toBe(OTHER);
    expect(store.providers()).toEqual(['anthropic', 'openai']);
  });

  it('removes a provider from both files', () => {
    const store = new HomeKeyStore(home, testKeyCipher());
    store.set('anthropic', KEY);
    new FileKeyStore(home).set('anthropic', OTHER);
    expect(store.remove('anthropic')).toBe(true);
    expect(store.get('anthropic')).toBeNull();
    expect(new HomeKeyStore(home).get('anthropic')).toBeNull();
    expect(store.remove('anthropic')).toBe(false);
  });

  it('says where keys are and how each file is protected', () => {
    const store = new HomeKeyStore(home, testKeyCipher('the system keychain (Electron safeStorage, gnome_libsecret)'));
    expect(store.description).toBe(
      `encrypted with the system keychain (Electron safeStorage, gnome_libsecret) in ${encryptedFile()}; keys added with capsem keys in ${plainFile()} (mode 0600, readable by you alone; not encrypted)`,
    );
  });

  it("gives the session's broker the decrypted key", () => {
    const store = new HomeKeyStore(home, testKeyCipher());
    store.set('anthropic', KEY);
    const { broker, guestEnv } = openSessionCredentials({
      env: {},
      store,
      settings: () => DEFAULT_CREDENTIALS_SETTINGS,
      credentialRefOf: () => 'ref',
    });
    expect(broker.keys.map((k) => [k.provider.id, k.source])).toEqual([['anthropic', { kind: 'stored', store: store.description }]]);
    const sent = broker.request(
      { scheme: 'https', host: 'api.anthropic.com', port: 443 },
      { 'x-api-key': guestEnv.ANTHROPIC_API_KEY! },
      '/v1/messages',
    );
    expect(sent.headers['x-api-key']).toBe(KEY);
  });

  it('fails with a clear error naming the file, and no key text, when the file is corrupt or not its own', () => {
    writeFileSync(encryptedFile(), `{"version":1,"keys":{"anthropic":"${KEY}`);
    const store = new HomeKeyStore(home, testKeyCipher());
    expect(() => store.get('anthropic')).toThrow(`${encryptedFile()} is not valid JSON; fix or remove it`);
    writeFileSync(encryptedFile(), JSON.stringify({ version: 1, keys: { anthropic: KEY } }));
    expect(() => store.get('anthropic')).toThrow(`${encryptedFile()} is not a Capsem keys file; fix or remove it`);
    expect(() => store.set('anthropic', OTHER)).toThrow('is not a Capsem keys file');

    rmSync(encryptedFile());
    new HomeKeyStore(home, testKeyCipher()).set('anthropic', KEY);
    let message = '';
    try {
      new HomeKeyStore(home, testKeyCipher()).get('anthropic');
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message).toBe(
      `the stored anthropic key in ${encryptedFile()} cannot be decrypted with a test keychain (AES-256-GCM) (stored by another user or keychain?); store it again, or remove it with capsem keys rm anthropic`,
    );
    const ciphertext = (JSON.parse(readFileSync(encryptedFile(), 'utf8')) as { keys: Record<string, string> }).keys.anthropic!;
    expect(message).not.toContain(ciphertext.slice(0, 12));
  });
});

describe('HomeKeyStore without a cipher (the CLI, browser mode)', () => {
  it('shows a key only the app can read as locked, not as none, and says where it is', () => {
    new HomeKeyStore(home, testKeyCipher()).set('anthropic', KEY);
    const store = new HomeKeyStore(home);
    expect(store.get('anthropic')).toBeNull();
    expect(store.locked('anthropic')).toBe(true);
    expect(store.locked('openai')).toBe(false);
    expect(store.description).toBe(
      `${plainFile()} (mode 0600, readable by you alone; not encrypted); keys stored by the app are encrypted in ${encryptedFile()}, readable only while the app runs`,
    );
  });

  it('replaces a key the app stored when one is set from a terminal, so the app uses the new one', () => {
    const cipher = testKeyCipher();
    new HomeKeyStore(home, cipher).set('anthropic', KEY);
    new HomeKeyStore(home).set('anthropic', OTHER);
    expect(new HomeKeyStore(home).locked('anthropic')).toBe(false);
    expect(new HomeKeyStore(home, cipher).get('anthropic')).toBe(OTHER);
    expect(statSync(plainFile()).mode & 0o777).toBe(0o600);
  });

  it('removes a key the app stored, which needs no cipher', () => {
    new HomeKeyStore(home, testKeyCipher()).set('anthropic', KEY);
    expect(new HomeKeyStore(home).remove('anthropic')).toBe(true);
    expect(new HomeKeyStore(home).locked('anthropic')).toBe(false);
  });
});
