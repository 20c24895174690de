import { readFileSync } from 'node:fs';
import { findKey } from '../credentials/credentialBroker.ts';
import { HomeKeyStore, LOCKED_KEY_TEXT } from '../credentials/homeKeyStore.ts';
import type { Provider } from '../credentials/providers.ts';
import { PolicyStore } from '../policy/policy.ts';
import { ensureHomeRoot } from '../store/paths.ts';
import { parseCommandArgs, UsageError, type Command } from './context.ts';

// Provider keys stored by Capsem, for when exporting them in every shell is not wanted. The key is
// read from standard input, never from the command line, where ps and shell history would see it.

export const keysCommand: Command = {
  name: 'keys',
  summary: 'list, store or remove provider keys (kept on the host; sessions get stand-ins)',
  usage: `capsem keys list
capsem keys set PROVIDER < file-holding-the-key
capsem keys rm PROVIDER

A session's programs (capsem record, and every VM session's guest and coding agent) get a
per-session stand-in for each provider key; the proxy puts the real key on requests to that
provider's own API hosts. A key comes from the environment of the shell that starts the session
(ANTHROPIC_API_KEY, OPENAI_API_KEY, GEMINI_API_KEY or GOOGLE_API_KEY, and those the policy file's
"credentials.providers" name), else from the stored keys:

  CAPSEM_HOME/keys.encrypted.json  keys added in the app's Settings, each encrypted with the
                                   system keychain (Electron safeStorage); only the app can read
                                   them, so while it runs, capsem commands that start VMs run
                                   through it and use them; without it, list shows such a key as
                                   "${LOCKED_KEY_TEXT}"
  CAPSEM_HOME/keys.json            keys added here, or in the app where the system has no keychain:
                                   mode 0600, readable by you alone, not encrypted

list says which providers have a key and where it comes from; it never prints a key. set reads
the key from standard input and writes keys.json, replacing the provider's key in both files; rm
removes it from both.`,
  run(ctx, argv) {
    const { positionals } = parseCommandArgs(this, argv, {});
    const [action, name] = positionals;
    const providers = new PolicyStore(ctx.home).keyProviders;
    const store = new HomeKeyStore(ctx.home);
    const provider = (): Provider => {
      const found = providers.find((p) => p.id === name);
      if (!found) throw new UsageError(`unknown provider "${name ?? ''}": one of ${providers.map((p) => p.id).join(', ')}`);
      return found;
    };
    if (action === 'list') {
      for (const p of providers) {
        const found = findKey(p, process.env, store);
        const where = found
          ? found.source.kind === 'env'
            ? `from ${found.source.variable}`
            : 'stored'
          : store.locked(p.id)
            ? LOCKED_KEY_TEXT
            : 'no key';
        ctx.out(`${p.id.padEnd(12)} ${where}`);
      }
      ctx.out(`stored keys: ${store.description}`);
      return 0;
    }
    if (action === 'set') {
      const id = provider().id;
      const key = readFileSync(0, 'utf8').split('\n')[0] ?? '';
      ensureHomeRoot(ctx.home);
      store.set(id, key);
      ctx.out(`stored the ${id} key; stored keys: ${store.description}`);
      return 0;
    }
    if (action === 'rm') {
      const id = provider().id;
      ctx.out(store.remove(id) ? `removed the stored ${id} key` : `no stored ${id} key`);
      return 0;
    }
    throw new UsageError('keys takes list, set PROVIDER or rm PROVIDER (see capsem keys --help)');
  },
};
