/** The coding agents a session can start with; electron/vm/codingAgents.ts says how each runs. */
export const AGENT_NAMES = ['claude', 'codex', 'gemini'] as const;
export type AgentName = (typeof AGENT_NAMES)[number];
