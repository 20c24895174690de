import { isAbsolute } from 'node:path';
import { z } from 'zod';
import { BuildStageSchema, SessionIdParam } from '../contract/appContract.ts';
import { DEFAULT_IMAGE_KIND, ImageKindSchema } from '../contract/guestImages.ts';
import { AgentCredentialsSchema, AgentRequestSchema } from '../vm/agentRequest.ts';

// The owner socket's vm.* methods as both ends see them: the owner (owner/vmHostMethods.ts)
// parses params and stream input with these schemas, and the CLI builds its params from their
// input types and parses the owner's stream events with them, so neither end casts what the other
// sent.

const ImageSchema = ImageKindSchema.default(DEFAULT_IMAGE_KIND);
/** A new session's project folder, as the client resolved it against its user's current folder. */
const WorkspaceSchema = z.string().min(1).max(4096).refine(isAbsolute, 'an absolute path').optional();
/** The user said to share the folder even though it holds their whole home (--yes-whole-home). */
const WholeHomeSchema = z.boolean().default(false);
const TerminalSide = z.number().int().min(1).max(1000);

/** vm.run: boot a new session, run argv in it, stream its output, stop. */
export const VmRunParams = z.strictObject({
  name: z.string().min(1).max(64).nullable().default(null),
  image: ImageSchema,
  workspace: WorkspaceSchema,
  wholeHome: WholeHomeSchema,
  argv: z.array(z.string()).min(1),
});
export type VmRunRequest = z.input<typeof VmRunParams>;

/** vm.shell: a terminal, on a new session or attached to a live one. */
export const VmShellParams = z.strictObject({
  id: SessionIdParam.optional(),
  /** With `id`: boot that session again when it is not running (capsem resume). */
  resume: z.boolean().default(false),
  name: z.string().min(1).max(64).nullable().default(null),
  image: ImageSchema,
  workspace: WorkspaceSchema,
  wholeHome: WholeHomeSchema,
  cols: TerminalSide.default(80),
  rows: TerminalSide.default(24),
  /** A new session whose terminal runs this agent instead of a login shell (capsem run --agent). */
  agent: AgentRequestSchema.optional(),
  /** With `resume`: the key of the coding agent the session ran, from the resuming caller's environment. */
  credentials: AgentCredentialsSchema.default({}),
});
export type VmShellRequest = z.input<typeof VmShellParams>;

/** A vm.shell client's terminal changed size: sent as a stream event. */
export const VmResizeEvent = z.strictObject({ type: z.literal('resize'), cols: TerminalSide, rows: TerminalSide });
export type VmResize = z.input<typeof VmResizeEvent>;

/** vm.stop: stop a live session's VM in order. */
export const VmStopParams = z.strictObject({ id: SessionIdParam });
export type VmStopRequest = z.input<typeof VmStopParams>;

/**
 * What vm.run and vm.shell send as stream events besides stdout's bytes: a status line, image
 * progress, a stderr chunk (base64) or the session's identity.
 */
export const VmStreamEvent = z.discriminatedUnion('type', [
  z.object({ type: z.literal('status'), line: z.string() }),
  z.object({
    type: z.literal('progress'),
    stage: z.string(),
    message: z.string(),
    fraction: z.number(),
    stageFraction: z.number().min(0).max(1).default(0),
    build: z.array(BuildStageSchema).default([]),
  }),
  z.object({ type: z.literal('stderr'), data: z.base64() }),
  z.object({ type: z.literal('session'), id: z.string(), name: z.string().nullable() }),
]);
export type RunEvent = z.output<typeof VmStreamEvent>;
