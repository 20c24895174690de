import type { CallError } from '../../electron/contract/appContract.ts';

/** A failed call as the renderer sees it: a CallError carried by an Error so stacks survive. */
export class CapsemCallError extends Error {
  override name = 'CapsemCallError';
  constructor(readonly detail: CallError) {
    super(detail.message);
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null;
}

function candidatesOf(value: unknown): CallError['candidates'] {
  if (!Array.isArray(value)) return undefined;
  return value.flatMap((c: unknown) =>
    isRecord(c) && typeof c.id === 'string' ? [{ id: c.id, name: typeof c.name === 'string' ? c.name : null }] : [],
  );
}

/**
 * Whatever a call rejected with, as a CallError. The WebSocket client rejects with
 * CapsemCallError; Electron's IPC flattens thrown errors to an Error whose message may hold the
 * JSON of the CallError, so that is tried too.
 */
export function toCallError(error: unknown): CallError {
  if (error instanceof CapsemCallError) return error.detail;
  if (isRecord(error) && typeof error.code === 'string' && typeof error.message === 'string') {
    return { code: error.code, message: error.message, candidates: candidatesOf(error.candidates) };
  }
  const message = error instanceof Error ? error.message : String(error);
  const json = message.indexOf('{');
  if (json >= 0) {
    try {
      const parsed: unknown = JSON.parse(message.slice(json));
      if (isRecord(parsed) && typeof parsed.code === 'string' && typeof parsed.message === 'string') {
        return { code: parsed.code, message: parsed.message, candidates: candidatesOf(parsed.candidates) };
      }
    } catch {
      // Not JSON: the message itself is the best we have.
    }
  }
  return { code: 'error', message };
}

export function errorText(error: unknown): string {
  return toCallError(error).message;
}
