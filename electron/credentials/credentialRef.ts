import { createHmac, randomBytes } from 'node:crypto';
import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { CapsemHome } from '../store/paths.ts';

// credential_ref names a key in the ledger without holding it: an HMAC-SHA256 of the key under a
// secret made once per install (CAPSEM_HOME/credential-ref.secret, 0600). A plain hash of a key
// could be matched against guesses by anyone holding a session.db or an export; the keyed one
// cannot without the secret, which never leaves this machine.

const SECRET_BYTES = 32;

export type CredentialRefOf = (key: string) => string;

export function credentialRefSecret(home: CapsemHome): Buffer {
  const path = join(home.root, 'credential-ref.secret');
  if (existsSync(path)) {
    const secret = Buffer.from(readFileSync(path, 'utf8').trim(), 'hex');
    if (secret.length === SECRET_BYTES) return secret;
    throw new Error(
      `${path} is damaged (not ${SECRET_BYTES} bytes of hex); remove it to make a new one (credential refs of earlier sessions will then no longer match new ones)`,
    );
  }
  const secret = randomBytes(SECRET_BYTES);
  try {
    writeFileSync(path, `${secret.toString('hex')}\n`, { mode: 0o600, flag: 'wx' });
  } catch (err) {
    // Another capsem made it meanwhile: theirs is the install's secret.
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return credentialRefSecret(home);
    throw err;
  }
  chmodSync(path, 0o600);
  return secret;
}

export function credentialRefOf(secret: Buffer): CredentialRefOf {
  return (key) => `credential:hmac-sha256:${createHmac('sha256', secret).update(key).digest('hex')}`;
}
