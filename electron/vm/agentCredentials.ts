import { LOCKED_KEY_TEXT } from '../credentials/homeKeyStore.ts';
import type { KeyStore } from '../credentials/keyStore.ts';
import { BUILT_IN_TABLE } from '../telemetry/providers/index.ts';
import { codingAgent, type AgentName } from './codingAgents.ts';

// The one place a provider key goes from the host towards the guest. The real key (agentCredentials)
// goes no further than the session's credential broker in the proxy; the coding agent's terminal
// gets the session's stand-in for it (agentStandIn), and Claude Code's settings the stand-in's last
// 20 characters, to approve it. The proxy swaps the stand-in for the real key on the provider's
// own hosts only.

/** Whose key each agent needs (a provider of the table), and how the key looks, for the one line that says to set it. */
const AGENT_KEYS = {
  claude: { provider: 'anthropic', example: 'sk-ant-...' },
  codex: { provider: 'openai', example: 'sk-...' },
  gemini: { provider: 'google', example: 'AIza...' },
} as const satisfies Record<AgentName, { readonly provider: string; readonly example: string }>;

interface AgentKey {
  /** Host variables the key is read from, first found wins (the provider's). */
  readonly from: readonly string[];
  /** The key's name in the store. */
  readonly provider: string;
  /** The variable the agent reads it by in the guest: the provider's first. */
  readonly guest: string;
  readonly example: string;
}

/** Where an agent's key comes from on the host (first found wins, else the store under `provider`), and the name the agent reads in the guest, as the provider table declares them. */
function keyOf(agent: AgentName): AgentKey {
  const { provider, example } = AGENT_KEYS[agent];
  const key = BUILT_IN_TABLE.named(provider)?.key;
  if (!key) throw new Error(`the provider table declares no key for ${provider}`);
  return { from: key.env, provider: key.name, guest: key.env[0]!, example };
}

/** The names of the keys the coding agents need (the key store's). */
export const agentKeyNames = (): string[] => (Object.keys(AGENT_KEYS) as AgentName[]).map((agent) => keyOf(agent).provider);

/** The variable the agent reads its key by in the guest. */
export const guestKeyVariable = (agent: AgentName): string => keyOf(agent).guest;

/** Every variable agentCredentials reads or returns: the only ones a request may carry as credentials. */
export const CREDENTIAL_VARIABLES: readonly string[] = [
  ...new Set((Object.keys(AGENT_KEYS) as AgentName[]).flatMap((agent) => keyOf(agent).from)),
];

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
  const key = keyOf(agent);
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
  const key = keyOf(agent);
  const standIn = guestEnv[key.guest];
  if (!standIn)
    throw new MissingAgentKeyError(
      `${codingAgent(agent).label} cannot start: the session's proxy holds no key for it, so it has no stand-in to give the agent: export ${key.from[0]}=${key.example} (or add it with capsem keys), then start again`,
    );
  return { [key.guest]: standIn };
}
