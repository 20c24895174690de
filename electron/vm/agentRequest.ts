import { z } from 'zod';
import { AGENT_NAMES } from '../contract/agents.ts';
import { CREDENTIAL_VARIABLES } from './agentCredentials.ts';

/** A coding agent's key, under the variables agentCredentials reads or returns (the provider table's). */
export const AgentCredentialsSchema = z.record(
  z.string().refine((name) => CREDENTIAL_VARIABLES.includes(name), { message: `one of ${CREDENTIAL_VARIABLES.join(', ')}` }),
  z.string().max(8192),
);

/** A coding agent for a session's terminal: its arguments, and its key as agentCredentials took it from the caller's environment. */
export const AgentRequestSchema = z.strictObject({
  name: z.enum(AGENT_NAMES),
  args: z.array(z.string().max(65_536)).max(1024).default([]),
  credentials: AgentCredentialsSchema.default({}),
});
export type AgentRequest = z.input<typeof AgentRequestSchema>;
