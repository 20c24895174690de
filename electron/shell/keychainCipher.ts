import type { KeyCipher } from '../credentials/encryptedKeyStore.ts';

// The system keychain as the core's KeyCipher, through Electron's safeStorage (macOS Keychain,
// Windows DPAPI, libsecret or KWallet on Linux). Not imported from electron here, so the decision
// is tested without its runtime; main.ts passes the real safeStorage once the app is ready (the
// Linux backend is only known then).

/** The part of Electron's safeStorage the cipher uses. */
export interface SafeStorage {
  isEncryptionAvailable(): boolean;
  /** Linux only. */
  getSelectedStorageBackend?(): string;
  encryptString(text: string): Buffer;
  decryptString(bytes: Buffer): string;
}

export interface KeychainChoice {
  /** Null when keys are better kept in keys.json, for the reason `note` gives. */
  readonly cipher: KeyCipher | null;
  /** One line for the app's log: what stored keys are protected with, or why keys.json is used. */
  readonly note: string;
}

const PLAIN_FALLBACK = 'keys stored in Settings go to keys.json (mode 0600, not encrypted)';

function keychainName(safeStorage: SafeStorage, platform: NodeJS.Platform): string | { readonly refused: string } {
  if (platform === 'darwin') return 'the macOS Keychain (Electron safeStorage)';
  if (platform === 'win32') return 'Windows DPAPI (Electron safeStorage)';
  const backend = safeStorage.getSelectedStorageBackend?.() ?? 'unknown';
  // basic_text "encrypts" with a password written into Chromium's source: anyone who can read the file can decrypt it.
  if (backend === 'basic_text')
    return {
      refused: `safeStorage's backend here is basic_text (no keyring such as gnome-keyring or KWallet is running), which encrypts with a password hard-coded in Electron and so protects nothing; ${PLAIN_FALLBACK} instead`,
    };
  if (backend === 'unknown') return { refused: `safeStorage cannot say which keyring it uses; ${PLAIN_FALLBACK}` };
  return `the system keychain (Electron safeStorage, ${backend})`;
}

export function keychainCipher(safeStorage: SafeStorage, platform: NodeJS.Platform): KeychainChoice {
  if (!safeStorage.isEncryptionAvailable())
    return { cipher: null, note: `the system keychain is not available to Electron safeStorage; ${PLAIN_FALLBACK}` };
  const name = keychainName(safeStorage, platform);
  if (typeof name !== 'string') return { cipher: null, note: name.refused };
  return {
    cipher: { name, encrypt: (text) => safeStorage.encryptString(text), decrypt: (bytes) => safeStorage.decryptString(bytes) },
    note: `stored keys are encrypted with ${name}`,
  };
}
