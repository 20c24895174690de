import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import type { KeyCipher } from '../../electron/credentials/encryptedKeyStore.ts';

/**
 * A real cipher standing in for the system keychain, which needs Electron's runtime: AES-256-GCM
 * under a key only this test process holds (iv, tag, then ciphertext), so a tampered or foreign
 * ciphertext fails to decrypt as safeStorage's would.
 */
export function testKeyCipher(name = 'a test keychain (AES-256-GCM)'): KeyCipher {
  const secret = randomBytes(32);
  return {
    name,
    encrypt(text) {
      const iv = randomBytes(12);
      const cipher = createCipheriv('aes-256-gcm', secret, iv);
      const body = Buffer.concat([cipher.update(text, 'utf8'), cipher.final()]);
      return Buffer.concat([iv, cipher.getAuthTag(), body]);
    },
    decrypt(bytes) {
      const decipher = createDecipheriv('aes-256-gcm', secret, bytes.subarray(0, 12));
      decipher.setAuthTag(bytes.subarray(12, 28));
      return Buffer.concat([decipher.update(bytes.subarray(28)), decipher.final()]).toString('utf8');
    },
  };
}
