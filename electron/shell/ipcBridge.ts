import { z } from 'zod';
import { CALLS, CallErrorSchema, type CallError, type HostCore } from '../contract/appContract.ts';
import { isAppUrl } from './appProtocol.ts';
import type { CallAnswer } from './ipcChannels.ts';

// The main side of `capsem:call`: who may call, what a call must look like, and how the core's
// answer or error travels back. The electron glue in main.ts gathers the facts about the sender
// and passes them here, so the decisions are plain functions with unit tests.

/** What main.ts knows about the frame behind an IPC message. */
export interface SenderFacts {
  /** webContents.id of the sender. */
  readonly senderWebContentsId: number;
  /** webContents.id of the app window, or null if there is none (any message is then refused). */
  readonly windowWebContentsId: number | null;
  /** event.senderFrame?.url; null when the frame navigated away or was destroyed meanwhile. */
  readonly frameUrl: string | null;
  /** The sending frame is the window's main frame (not an iframe, not a popup). */
  readonly isMainFrame: boolean;
}

/**
 * A message is ours only if it comes from the main frame of the window we created, showing our own
 * capsem://app/ pages. Anything else (a subframe, another webContents, a page that navigated
 * somewhere despite the guards) is refused before its payload is read.
 */
export function isTrustedSender(facts: SenderFacts): boolean {
  if (facts.windowWebContentsId === null || facts.senderWebContentsId !== facts.windowWebContentsId) return false;
  if (!facts.isMainFrame || facts.frameUrl === null) return false;
  return isAppUrl(facts.frameUrl);
}

/** The envelope on `capsem:call`; params are validated by the core against CALLS[name].params. */
export const CallEnvelopeSchema = z.strictObject({ name: z.string().min(1).max(100), params: z.unknown() });

/** Any thrown value to the CallError the window shows: the core's own code when it gave one. */
export function toCallError(err: unknown): CallError {
  const direct = CallErrorSchema.safeParse(err);
  const nested = typeof err === 'object' && err !== null && 'callError' in err ? CallErrorSchema.safeParse(err.callError) : null;
  const found = direct.success ? direct.data : nested?.success ? nested.data : null;
  if (found !== null) {
    // Only the contract's fields cross to the renderer: no stack, no host paths in extra properties.
    return found.candidates === undefined
      ? { code: found.code, message: found.message }
      : { code: found.code, message: found.message, candidates: found.candidates };
  }
  if (err instanceof Error) return { code: 'internal', message: err.message };
  return { code: 'internal', message: String(err) };
}

export const FORBIDDEN_SENDER: CallError = { code: 'forbidden', message: 'this frame may not call the host' };

/** Validates the envelope, refuses names outside CALLS, and forwards to the core. Never throws. */
export async function answerCall(core: HostCore | Promise<HostCore>, raw: unknown): Promise<CallAnswer> {
  const envelope = CallEnvelopeSchema.safeParse(raw);
  if (!envelope.success)
    return {
      ok: false,
      error: { code: 'bad_request', message: `a call is { name, params }: ${envelope.error.issues[0]?.message ?? 'invalid'}` },
    };
  const { name, params } = envelope.data;
  if (!Object.hasOwn(CALLS, name)) return { ok: false, error: { code: 'unknown_call', message: `unknown call ${name}` } };
  try {
    return { ok: true, result: await (await core).handle(name, params) };
  } catch (err) {
    return { ok: false, error: toCallError(err) };
  }
}
