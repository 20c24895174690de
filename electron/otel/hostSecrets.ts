import { HomeKeyStore } from '../credentials/homeKeyStore.ts';
import type { KeyStore } from '../credentials/keyStore.ts';
import type { CapsemHome } from '../store/paths.ts';

// The secrets this host can name, for the exporter to redact wherever they appear: every key the
// key store can read, every value of an environment variable named like a key, and what the
// caller adds (a live session's stand-ins).

const SECRET_NAME = /KEY|TOKEN|SECRET|PASSWORD|CREDENTIAL/i;
const SHORTEST = 12;

export function hostSecrets(
  home: CapsemHome,
  env: NodeJS.ProcessEnv,
  store: KeyStore = new HomeKeyStore(home),
  extra: readonly string[] = [],
): string[] {
  const found = new Set<string>(extra.filter((s) => s.length >= SHORTEST));
  for (const provider of store.providers()) {
    if (store.locked(provider)) continue;
    const key = store.get(provider);
    if (key !== null && key.length >= SHORTEST) found.add(key);
  }
  for (const [name, value] of Object.entries(env))
    if (SECRET_NAME.test(name) && value !== undefined && value.length >= SHORTEST) found.add(value);
  return [...found];
}
