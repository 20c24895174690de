import { readFileSync } from 'node:fs';
import { findKey } from '../credentials/credentialBroker.ts';
import { FileKeyStore } from '../credentials/keyStore.ts';
import { providersOf, type Provider } from '../credentials/providers.ts';
import { PolicyStore } from '../proxy/policy.ts';
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

A program recorded by capsem record gets a per-session stand-in for each provider key, and the
proxy puts the real key on requests to that provider's own API hosts. VM sessions do not get
stand-ins yet: their coding agent still receives the real key (see SECURITY.md). A key comes from the environment of
the shell that starts the session (ANTHROPIC_API_KEY, OPENAI_API_KEY, GEMINI_API_KEY or
GOOGLE_API_KEY, and those the policy file's "credentials.providers" name), else from this store:
CAPSEM_HOME/keys.json, mode 0600, readable by you alone but not encrypted. list says which providers have a key and
where it comes from; it never prints a key. set reads the key from standard input.`,
  run(ctx, argv) {
    const { positionals } = parseCommandArgs(this, argv, {});
    const [action, name] = positionals;
    const providers = providersOf(new PolicyStore(ctx.home).policy.credentials);
    const store = new FileKeyStore(ctx.home);
    const provider = (): Provider => {
      const found = providers.find((p) => p.id === name);
      if (!found) throw new UsageError(`unknown provider "${name ?? ''}": one of ${providers.map((p) => p.id).join(', ')}`);
      return found;
    };
    if (action === 'list') {
      for (const p of providers) {
        const found = findKey(p, process.env, store);
        ctx.out(`${p.id.padEnd(12)} ${found ? (found.source.kind === 'env' ? `from ${found.source.variable}` : 'stored') : 'no key'}`);
      }
      ctx.out(`stored keys: ${store.description}`);
      return 0;
    }
    if (action === 'set') {
      const id = provider().id;
      const key = readFileSync(0, 'utf8').split('\n')[0] ?? '';
      ensureHomeRoot(ctx.home);
      store.set(id, key);
      ctx.out(`stored the ${id} key in ${store.description}`);
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
