import { join } from 'node:path';
import { z } from 'zod';
import type { CapsemHome } from '../store/paths.ts';
import { checkKey, readKeysFile, writeKeysFile, type KeyStore } from './keyStore.ts';

// Keys encrypted one by one with a cipher the process is given (the desktop app's is the system
// keychain, through Electron's safeStorage), in CAPSEM_HOME/keys.encrypted.json, mode 0600. The
// core never encrypts by itself: a process without a cipher can list which providers have a key
// here (EncryptedKeyFile) but never read one.

/** Encrypts and decrypts one key; the bytes are opaque to the core. */
export interface KeyCipher {
  /** What does the encrypting, said to the user: "the system keychain (Electron safeStorage, gnome_libsecret)". */
  readonly name: string;
  encrypt(text: string): Buffer;
  decrypt(bytes: Buffer): string;
}

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;
const encryptedKeysFile = z.object({ version: z.literal(1), keys: z.record(z.string(), z.string().regex(BASE64)) });

export function encryptedKeysFilePath(home: CapsemHome): string {
  return join(home.root, 'keys.encrypted.json');
}

/** keys.encrypted.json as ciphertexts: what any process may do with it without the cipher. */
export class EncryptedKeyFile {
  readonly path: string;

  constructor(home: CapsemHome) {
    this.path = encryptedKeysFilePath(home);
  }

  providers(): string[] {
    return Object.keys(this.ciphertexts()).sort();
  }

  ciphertext(provider: string): Buffer | null {
    const keys = this.ciphertexts();
    return Object.hasOwn(keys, provider) ? Buffer.from(keys[provider]!, 'base64') : null;
  }

  put(provider: string, ciphertext: Buffer): void {
    writeKeysFile(this.path, { ...this.ciphertexts(), [provider]: ciphertext.toString('base64') });
  }

  remove(provider: string): boolean {
    const keys = this.ciphertexts();
    if (!Object.hasOwn(keys, provider)) return false;
    delete keys[provider];
    writeKeysFile(this.path, keys);
    return true;
  }

  private ciphertexts(): Record<string, string> {
    return readKeysFile(this.path, encryptedKeysFile);
  }
}

export class EncryptedKeyStore implements KeyStore {
  private readonly file: EncryptedKeyFile;

  constructor(
    home: CapsemHome,
    private readonly cipher: KeyCipher,
  ) {
    this.file = new EncryptedKeyFile(home);
  }

  get description(): string {
    return `encrypted with ${this.cipher.name} in ${this.file.path}`;
  }

  providers(): string[] {
    return this.file.providers();
  }

  get(provider: string): string | null {
    const ciphertext = this.file.ciphertext(provider);
    if (!ciphertext) return null;
    try {
      return checkKey(this.cipher.decrypt(ciphertext));
    } catch {
      // Neither the cipher's message nor the bytes: either could carry a piece of the key.
      throw new Error(
        `the stored ${provider} key in ${this.file.path} cannot be decrypted with ${this.cipher.name} (stored by another user or keychain?); store it again, or remove it with capsem keys rm ${provider}`,
      );
    }
  }

  set(provider: string, key: string): void {
    this.file.put(provider, this.cipher.encrypt(checkKey(key)));
  }

  remove(provider: string): boolean {
    return this.file.remove(provider);
  }

  locked(): boolean {
    return false;
  }
}
