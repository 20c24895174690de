import { LOCKED_KEY_TEXT } from '../credentials/homeKeyStore.ts';
import type { KeyStore } from '../credentials/keyStore.ts';
import { codingAgent, type AgentName } from './codingAgents.ts';

// The one place a provider key goes from the host towards the guest. The real key (agentCredentials)
// goes no further than the session's credential broker in the proxy; the coding agent's terminal
// gets the session's stand-in for it (agentStandIn), and Claude Code's settings the stand-in's last
// 20 characters, to approve it. The proxy swaps the stand-in for the real key on the provider's
// own hosts only.

/** Where each agent's key comes from on the host (first found wins, else the store under `provider`), and the name the agent reads in the guest. */
const KEYS = {
  claude: { from: ['ANTHROPIC_API_KEY'], provider: 'anthropic', guest: 'ANTHROPIC_API_KEY', example: 'sk-ant-...' },
  codex: { from: ['OPENAI_API_KEY'], provider: 'openai', guest: 'OPENAI_API_KEY', example: 'sk-...' },
  gemini: { from: ['GEMINI_API_KEY', 'GOOGLE_API_KEY'], provider: 'gemini', guest: 'GEMINI_API_KEY', example: 'AIza...' },
} as const satisfies Record<
  AgentName,
  { readonly from: readonly string[]; readonly provider: string; readonly guest: string; readonly example: string }
>;

/** A variable agentCredentials reads or returns, by name, so a request's credentials type as plain JSON. */
export type CredentialVariable = (typeof KEYS)[AgentName]['from'][number] | (typeof KEYS)[AgentName]['guest'];

/** Every variable agentCredentials reads or returns: the only ones a request may carry as credentials. */
export const CREDENTIAL_VARIABLES: readonly CredentialVariable[] = [...new Set(Object.values(KEYS).flatMap((k) => [...k.from, k.guest]))];

/** The agent's key (the real one for the broker, or the session's stand-in for the guest), under the name the agent reads it by. */
export type AgentCredentials = Readonly<Record<string, string>>;

export class MissingAgentKeyError extends Error {
  override name = 'MissingAgentKeyError';
}

/**
 * What to do when the only key is one this process cannot read (stored encrypted by the app):
 * `refuse` where the session's broker reads this process's store (the owner), `leave-to-owner`
 * in a client, whose owner may be the app, which can read it (and refuses itself if it cannot).
 */
export type WhenKeyLocked = 'refuse' | 'leave-to-owner';

/**
 * The real key `agent` needs, from `env` (the host's environment, or credentials already taken
 * from one: the result passed back in gives itself), for the session's broker and never the
 * guest. None when `store` (the one the session's broker reads) holds the key instead. Throws
 * MissingAgentKeyError, one line with the fix, when neither has it or it cannot be a key.
 */
export function agentCredentials(
  agent: AgentName,
  env: Readonly<Record<string, string | undefined>>,
  store: KeyStore | null = null,
  whenLocked: WhenKeyLocked = 'refuse',
): AgentCredentials {
  const key = KEYS[agent];
  const name = key.from.find((variable) => (env[variable] ?? '').trim() !== '');
  const value = name ? env[name]!.trim() : '';
  if (!name) {
    if (storedKey(store, key.provider)) return {};
    if (store?.locked(key.provider)) {
      if (whenLocked === 'leave-to-owner') return {};
      throw new MissingAgentKeyError(
        `${codingAgent(agent).label} needs ${key.from[0]}: it is not set here, and the ${key.provider} key is ${LOCKED_KEY_TEXT}: start the Capsem app and run this again, or export ${key.from[0]}=${key.example}, or store it with capsem keys set ${key.provider}`,
      );
    }
    throw new MissingAgentKeyError(
      `${codingAgent(agent).label} needs ${key.from.join(' or ')}, and it is not set: export ${key.from[0]}=${key.example} in the shell you start capsem (or the app) from, then start again`,
    );
  }
  if (value.length > 4096 || /[\0-\x1f\x7f]/.test(value))
    throw new MissingAgentKeyError(
      `${name} holds ${value.length > 4096 ? 'more than 4096 characters' : 'control characters'}, which no API key has: set it to the key alone, then start again`,
    );
  return { [key.guest]: value };
}

function storedKey(store: KeyStore | null, provider: string): boolean {
  try {
    return store?.get(provider) != null;
  } catch (err) {
    throw new MissingAgentKeyError(`the stored keys cannot be read: ${(err as Error).message}`);
  }
}

/**
 * What the agent's terminal gets instead of the key: the session's stand-in from `guestEnv`
 * (Recording.credentials.guestEnv). Fails closed: with no stand-in (the broker found no key) the
 * agent does not start, rather than start with a key of any other kind.
 */
export function agentStandIn(agent: AgentName, guestEnv: Readonly<Record<string, string>>): AgentCredentials {
  const key = KEYS[agent];
  const standIn = guestEnv[key.guest];
  if (!standIn)
    throw new MissingAgentKeyError(
      `${codingAgent(agent).label} cannot start: the session's proxy holds no key for it, so it has no stand-in to give the agent: export ${key.from[0]}=${key.example} (or add it with capsem keys), then start again`,
    );
  return { [key.guest]: standIn };
}
