import { AGENT_NAMES, type AgentName } from '../contract/agents.ts';
import { BUILT_IN_TABLE } from '../telemetry/providers/index.ts';
import { guestKeyVariable, type AgentCredentials } from './agentCredentials.ts';
import { GUEST_WORKSPACE } from './image/imagePlan.ts';
import type { HomeFile, TerminalProgram } from './vmSession.ts';

// The coding agents the agent image carries (build/guest/agents/, pinned), listed once. Each opens
// straight at its prompt in /workspace: its first-run screens (theme, sign-in, folder trust) are
// answered, and its update checks and telemetry turned off, through the settings files each
// documents, written into the guest's home when the session starts.

export { AGENT_NAMES, type AgentName };

export interface CodingAgent {
  readonly name: AgentName;
  /** What people call it. */
  readonly label: string;
  /** Its command on the guest's PATH. */
  readonly command: string;
  /** Added to its environment, beside its key. */
  readonly env: Readonly<Record<string, string>>;
  homeFiles(credentials: AgentCredentials): HomeFile[];
}

const json = (value: unknown): string => `${JSON.stringify(value, null, 2)}\n`;

const CLAUDE: CodingAgent = {
  name: 'claude',
  label: 'Claude Code',
  command: 'claude',
  // Run as root, Claude Code refuses --dangerously-skip-permissions unless told it is in a sandbox,
  // which a session's VM is.
  env: { IS_SANDBOX: '1', CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1' },
  homeFiles: (credentials) => {
    const key = credentials[guestKeyVariable('claude')] ?? '';
    return [
      {
        path: '.claude.json',
        // A key from the environment is asked about once, and remembered by its last 20 characters.
        content: json({
          hasCompletedOnboarding: true,
          theme: 'dark',
          autoUpdates: false,
          customApiKeyResponses: { approved: [key.slice(-20)], rejected: [] },
          projects: { [GUEST_WORKSPACE]: { hasTrustDialogAccepted: true, hasCompletedProjectOnboarding: true } },
        }),
      },
      {
        path: '.claude/settings.json',
        content: json({ env: { DISABLE_AUTOUPDATER: '1', DISABLE_TELEMETRY: '1', DISABLE_ERROR_REPORTING: '1' } }),
      },
    ];
  },
};

const CODEX: CodingAgent = {
  name: 'codex',
  label: 'Codex',
  command: 'codex',
  env: {},
  // Codex's built-in OpenAI provider streams Responses over a WebSocket, which the proxy relays as
  // frames without reading model calls from them; this provider is the same API over HTTPS
  // (server-sent events), which the proxy records as model calls with their tokens and cost.
  homeFiles: () => [
    {
      path: '.codex/config.toml',
      content: [
        'model_provider = "openai-https"',
        // A ChatGPT sign-in would keep its token in the guest, beyond the broker: the key is the only way in.
        'forced_login_method = "api"',
        'check_for_update_on_startup = false',
        '',
        '[model_providers.openai-https]',
        'name = "OpenAI"',
        `base_url = "https://${BUILT_IN_TABLE.named('openai')!.hosts[0]}/v1"`,
        'wire_api = "responses"',
        `env_key = "${guestKeyVariable('codex')}"`,
        'supports_websockets = false',
        '',
        '[analytics]',
        'enabled = false',
        '',
        `[projects."${GUEST_WORKSPACE}"]`,
        'trust_level = "trusted"',
        '',
      ].join('\n'),
    },
  ],
};

const GEMINI: CodingAgent = {
  name: 'gemini',
  label: 'Gemini CLI',
  command: 'gemini',
  // xterm.js (the app) and today's terminals draw 24-bit colour; without this Gemini CLI warns on every start.
  env: { COLORTERM: 'truecolor' },
  homeFiles: () => [
    {
      path: '.gemini/settings.json',
      content: json({
        // A Google sign-in would keep its token in the guest, beyond the broker: the key is the only way in.
        security: { auth: { selectedType: 'gemini-api-key', enforcedType: 'gemini-api-key' } },
        ui: { theme: 'Default' },
        general: { enableAutoUpdate: false, enableAutoUpdateNotification: false },
        privacy: { usageStatisticsEnabled: false },
        telemetry: { enabled: false },
      }),
    },
    { path: '.gemini/trustedFolders.json', content: json({ [GUEST_WORKSPACE]: 'TRUST_FOLDER' }) },
  ],
};

const AGENTS: Record<AgentName, CodingAgent> = { claude: CLAUDE, codex: CODEX, gemini: GEMINI };

export function codingAgent(name: AgentName): CodingAgent {
  return AGENTS[name];
}

export function isAgentName(text: string): text is AgentName {
  return (AGENT_NAMES as readonly string[]).includes(text);
}

/** What a session's terminal runs for `agent`: its command with the user's arguments, its key's stand-in (agentStandIn), its settings. */
export function agentTerminal(name: AgentName, args: readonly string[], credentials: AgentCredentials): TerminalProgram {
  const agent = AGENTS[name];
  return { argv: [agent.command, ...args], env: { ...agent.env, ...credentials }, homeFiles: agent.homeFiles(credentials) };
}
