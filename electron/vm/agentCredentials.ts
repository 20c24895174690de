import { codingAgent, type AgentName } from './codingAgents.ts';

// The one place a provider key goes from the host towards the guest: the coding agent's terminal
// gets what this returns in its environment (and Claude Code's settings the key's last 20
// characters, to approve it). The next issue keeps real keys on the host by returning per-session
// stand-ins from here, which the proxy swaps for the real key on that provider's hosts.

/** Where each agent's key comes from on the host, first found wins, and the name the agent reads in the guest. */
const KEYS = {
  claude: { from: ['ANTHROPIC_API_KEY'], guest: 'ANTHROPIC_API_KEY', example: 'sk-ant-...' },
  codex: { from: ['OPENAI_API_KEY'], guest: 'OPENAI_API_KEY', example: 'sk-...' },
  gemini: { from: ['GEMINI_API_KEY', 'GOOGLE_API_KEY'], guest: 'GEMINI_API_KEY', example: 'AIza...' },
} as const satisfies Record<AgentName, { readonly from: readonly string[]; readonly guest: string; readonly example: string }>;

/** A variable agentCredentials reads or returns, by name, so a request's credentials type as plain JSON. */
export type CredentialVariable = (typeof KEYS)[AgentName]['from'][number] | (typeof KEYS)[AgentName]['guest'];

/** Every variable agentCredentials reads or returns: the only ones a request may carry as credentials. */
export const CREDENTIAL_VARIABLES: readonly CredentialVariable[] = [...new Set(Object.values(KEYS).flatMap((k) => [...k.from, k.guest]))];

/** The agent's key, under the name the agent reads it by. */
export type AgentCredentials = Readonly<Record<string, string>>;

export class MissingAgentKeyError extends Error {
  override name = 'MissingAgentKeyError';
}

/**
 * The key `agent` needs, from `env` (the host's environment, or credentials already taken from
 * one: the result passed back in gives itself). Throws MissingAgentKeyError, one line with the
 * fix, when none is set or it cannot be a key.
 */
export function agentCredentials(agent: AgentName, env: Readonly<Record<string, string | undefined>>): AgentCredentials {
  const key = KEYS[agent];
  const name = key.from.find((variable) => (env[variable] ?? '').trim() !== '');
  const value = name ? env[name]!.trim() : '';
  if (!name) {
    throw new MissingAgentKeyError(`${codingAgent(agent).label} needs ${key.from.join(' or ')}, and it is not set: export ${key.from[0]}=${key.example} in the shell you start capsem (or the app) from, then start again`);
  }
  if (value.length > 4096 || /[\0-\x1f\x7f]/.test(value)) throw new MissingAgentKeyError(`${name} holds ${value.length > 4096 ? 'more than 4096 characters' : 'control characters'}, which no API key has: set it to the key alone, then start again`);
  return { [key.guest]: value };
}
