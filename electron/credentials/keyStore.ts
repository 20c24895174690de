import { chmodSync, existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import type { CapsemHome } from '../store/paths.ts';

// Keys the user stored in Capsem rather than exported in the shell, one per provider. The core
// reads them through KeyStore; this file's store keeps them in CAPSEM_HOME/keys.json, mode 0600
// (readable by the user alone, not encrypted). Where the app has the system keychain, keys are
// encrypted in keys.encrypted.json instead (encryptedKeyStore.ts), read over this file
// (homeKeyStore.ts).

export interface KeyStore {
  /** Where keys are kept, said plainly to the user (`capsem doctor`, `capsem keys`, Settings). */
  readonly description: string;
  /** The providers that have a stored key. */
  providers(): string[];
  get(provider: string): string | null;
  set(provider: string, key: string): void;
  remove(provider: string): boolean;
  /** A key for `provider` is stored where this process cannot read it (encrypted by the app, with no cipher here). */
  locked(provider: string): boolean;
}

/** A key as a provider issues it: printable, one line, of sane length. */
export function checkKey(key: string): string {
  const trimmed = key.trim();
  if (trimmed.length < 8 || trimmed.length > 4096 || !/^[\x21-\x7e]+$/.test(trimmed)) {
    throw new Error('a key is 8 to 4096 printable characters with no spaces; this is not one');
  }
  return trimmed;
}

const keysFile = z.object({ version: z.literal(1), keys: z.record(z.string(), z.string()) });

/** A keys file's `keys`, checked against `schema`; {} when there is no file. Errors never quote the file. */
export function readKeysFile<T>(path: string, schema: z.ZodType<{ version: 1; keys: Record<string, T> }>): Record<string, T> {
  if (!existsSync(path)) return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(path, 'utf8'));
  } catch (err) {
    // The message of a JSON error quotes the file's text, which holds keys.
    throw new Error(`${path} is not valid JSON${err instanceof SyntaxError ? '' : `: ${(err as Error).message}`}; fix or remove it`);
  }
  const file = schema.safeParse(parsed);
  if (!file.success) throw new Error(`${path} is not a Capsem keys file; fix or remove it`);
  return file.data.keys;
}

/** Replaces a keys file at once (a reader sees the old file or the new one), mode 0600 from its first byte. */
export function writeKeysFile(path: string, keys: Readonly<Record<string, string>>): void {
  const temporary = `${path}.${process.pid}.tmp`;
  writeFileSync(temporary, `${JSON.stringify({ version: 1, keys }, null, 2)}\n`, { mode: 0o600 });
  chmodSync(temporary, 0o600);
  renameSync(temporary, path);
}

export function keysFilePath(home: CapsemHome): string {
  return join(home.root, 'keys.json');
}

export class FileKeyStore implements KeyStore {
  private readonly path: string;

  constructor(home: CapsemHome) {
    this.path = keysFilePath(home);
  }

  get description(): string {
    return `${this.path} (mode 0600, readable by you alone; not encrypted)`;
  }

  private read(): Record<string, string> {
    return readKeysFile(this.path, keysFile);
  }

  private write(keys: Record<string, string>): void {
    writeKeysFile(this.path, keys);
  }

  providers(): string[] {
    return Object.keys(this.read()).sort();
  }

  get(provider: string): string | null {
    return Object.hasOwn(this.read(), provider) ? this.read()[provider]! : null;
  }

  set(provider: string, key: string): void {
    this.write({ ...this.read(), [provider]: checkKey(key) });
  }

  remove(provider: string): boolean {
    const keys = this.read();
    if (!Object.hasOwn(keys, provider)) return false;
    delete keys[provider];
    this.write(keys);
    return true;
  }

  locked(): boolean {
    return false;
  }
}
