import type { CallError } from '../contract/appContract.ts';

// The IPC channels between the preload and the main process, and the shapes on them. Kept free
// of zod and electron so the sandboxed preload bundle stays a few kilobytes.

/** Renderer -> main: `{ name, params }`, answered with a CallAnswer. */
export const IPC_CALL = 'capsem:call';
/** Main -> renderer: `{ name, payload }` for every host event, and `app.open` from the shell. */
export const IPC_EVENT = 'capsem:event';
/** Renderer -> main: opens the system's folder picker; answered with the folder's path or null. */
export const IPC_PICK_FOLDER = 'capsem:pick-folder';

/**
 * A call's answer over IPC. A rejected ipcMain.handle promise reaches the renderer as a bare
 * message ("Error invoking remote method ..."), losing the code, so errors travel as values.
 */
export type CallAnswer = { readonly ok: true; readonly result: unknown } | { readonly ok: false; readonly error: CallError };

export interface EventMessage {
  readonly name: string;
  readonly payload: unknown;
}

/**
 * The shell's own event: a launch asked to show a session (`capsem open co-work1`, a
 * capsem://session/ link, or a second launch). Payload: OpenRequest ({ query }), the contract's
 * EVENTS['app.open'].
 */
export const APP_OPEN_EVENT = 'app.open';

export function isEventMessage(value: unknown): value is EventMessage {
  return typeof value === 'object' && value !== null && typeof (value as { name?: unknown }).name === 'string' && 'payload' in value;
}

export function isCallAnswer(value: unknown): value is CallAnswer {
  if (typeof value !== 'object' || value === null) return false;
  const v = value as { ok?: unknown; error?: unknown };
  if (v.ok === true) return 'result' in value;
  if (v.ok !== false || typeof v.error !== 'object' || v.error === null) return false;
  const e = v.error as { code?: unknown; message?: unknown };
  return typeof e.code === 'string' && typeof e.message === 'string';
}
