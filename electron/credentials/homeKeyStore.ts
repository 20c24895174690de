import { existsSync } from 'node:fs';
import type { CapsemHome } from '../store/paths.ts';
import { EncryptedKeyFile, EncryptedKeyStore, type KeyCipher } from './encryptedKeyStore.ts';
import { FileKeyStore, type KeyStore } from './keyStore.ts';

// The keys stored in CAPSEM_HOME, as every process reads them: keys.encrypted.json (written by the
// app, which has the system keychain) over keys.json (written by `capsem keys set`, or by an app
// without a keychain). The newest `set` wins wherever it came from: setting a key drops the
// provider's copy in the other file, so the app never keeps using a key the user replaced in a
// terminal, and saving in Settings moves a key off the plain file.

/** How a key only the app can read is shown where it cannot be read (capsem keys list, doctor, Settings in browser mode). */
export const LOCKED_KEY_TEXT = 'stored by the app, encrypted; readable only while the app runs';

export class HomeKeyStore implements KeyStore {
  private readonly plain: FileKeyStore;
  private readonly encryptedFile: EncryptedKeyFile;
  private readonly encrypted: EncryptedKeyStore | null;

  /** `cipher` is the app's keychain; without one (the CLI, browser mode) keys go to keys.json and encrypted ones are locked. */
  constructor(home: CapsemHome, cipher: KeyCipher | null = null) {
    this.plain = new FileKeyStore(home);
    this.encryptedFile = new EncryptedKeyFile(home);
    this.encrypted = cipher ? new EncryptedKeyStore(home, cipher) : null;
  }

  get description(): string {
    if (this.encrypted) return `${this.encrypted.description}; keys added with capsem keys in ${this.plain.description}`;
    if (!existsSync(this.encryptedFile.path)) return this.plain.description;
    return `${this.plain.description}; keys stored by the app are encrypted in ${this.encryptedFile.path}, readable only while the app runs`;
  }

  providers(): string[] {
    const readable = this.encrypted ? [...this.encrypted.providers(), ...this.plain.providers()] : this.plain.providers();
    return [...new Set(readable)].sort();
  }

  get(provider: string): string | null {
    return this.encrypted?.get(provider) ?? this.plain.get(provider);
  }

  set(provider: string, key: string): void {
    if (this.encrypted) {
      this.encrypted.set(provider, key);
      this.plain.remove(provider);
    } else {
      this.plain.set(provider, key);
      this.encryptedFile.remove(provider);
    }
  }

  remove(provider: string): boolean {
    const encrypted = this.encryptedFile.remove(provider);
    return this.plain.remove(provider) || encrypted;
  }

  locked(provider: string): boolean {
    return this.lockedProviders().includes(provider);
  }

  /** The providers whose only stored key this process cannot read. */
  lockedProviders(): string[] {
    if (this.encrypted) return [];
    const readable = new Set(this.plain.providers());
    return this.encryptedFile.providers().filter((provider) => !readable.has(provider));
  }
}
