import { describe, expect, it } from 'vitest';
import { keychainCipher, type SafeStorage } from '../../../electron/shell/keychainCipher.ts';

// When the app encrypts stored keys with safeStorage, and when it says why it keeps them in
// keys.json instead. The real safeStorage needs Electron's runtime (test/e2e/keychainCipher.test.ts).

function safeStorage(available: boolean, backend?: string): SafeStorage & { sealed: string[] } {
  const sealed: string[] = [];
  return {
    sealed,
    isEncryptionAvailable: () => available,
    ...(backend === undefined ? {} : { getSelectedStorageBackend: () => backend }),
    encryptString: (text) => (sealed.push(text), Buffer.from(text).reverse()),
    decryptString: (bytes) => Buffer.from(bytes).reverse().toString(),
  };
}

describe('keychainCipher', () => {
  it('encrypts with safeStorage through a Linux keyring, naming it', () => {
    const storage = safeStorage(true, 'gnome_libsecret');
    const { cipher, note } = keychainCipher(storage, 'linux');
    expect(cipher!.name).toBe('the system keychain (Electron safeStorage, gnome_libsecret)');
    expect(note).toBe('stored keys are encrypted with the system keychain (Electron safeStorage, gnome_libsecret)');
    expect(cipher!.decrypt(cipher!.encrypt('sk-ant-0123456789'))).toBe('sk-ant-0123456789');
    expect(storage.sealed).toEqual(['sk-ant-0123456789']);
  });

  it('refuses basic_text, whose password is hard-coded in Electron, and says keys.json is used instead', () => {
    const { cipher, note } = keychainCipher(safeStorage(true, 'basic_text'), 'linux');
    expect(cipher).toBeNull();
    expect(note).toMatch(
      /basic_text .*hard-coded in Electron and so protects nothing; keys stored in Settings go to keys\.json \(mode 0600, not encrypted\) instead$/,
    );
  });

  it('uses keys.json, saying why, when safeStorage has no encryption or cannot name its keyring', () => {
    expect(keychainCipher(safeStorage(false, 'gnome_libsecret'), 'linux')).toEqual({
      cipher: null,
      note: 'the system keychain is not available to Electron safeStorage; keys stored in Settings go to keys.json (mode 0600, not encrypted)',
    });
    expect(keychainCipher(safeStorage(true, 'unknown'), 'linux').cipher).toBeNull();
  });

  it('names the macOS Keychain and Windows DPAPI, which have no backend to choose', () => {
    expect(keychainCipher(safeStorage(true), 'darwin').cipher!.name).toBe('the macOS Keychain (Electron safeStorage)');
    expect(keychainCipher(safeStorage(true), 'win32').cipher!.name).toBe('Windows DPAPI (Electron safeStorage)');
  });
});
