import { contextBridge, ipcRenderer, webUtils } from 'electron';
import type {
  CallError,
  CallName,
  CallParams,
  CallResult,
  CapsemApi,
  CapsemFiles,
  EventName,
  EventPayload,
} from '../contract/appContract.ts';
import { APP_OPEN_EVENT, IPC_CALL, IPC_EVENT, IPC_PICK_FOLDER, isCallAnswer, isEventMessage } from './ipcChannels.ts';

// The sandboxed preload: exposes `window.capsem` (CapsemApi, exactly) and `window.capsemFiles`
// (a dropped file's path, for `sessions.import`; the system's folder picker, for a session's
// project folder), and nothing else. The page never
// sees ipcRenderer; it can only make the contract's calls and hear the contract's events.
// Bundled to dist/shell/preload.cjs; a sandboxed preload cannot require anything but electron's
// renderer modules, so this file imports only types besides the channel constants.

type Listener = (payload: unknown) => void;
const listeners = new Map<string, Set<Listener>>();

// An `app.open` can arrive (first launch, `capsem open x`) before React has mounted and
// subscribed; it is held here until the first listener, then delivered. Bounded: only the
// latest few matter.
const heldOpens: unknown[] = [];
const MAX_HELD_OPENS = 8;

function deliver(listener: Listener, payload: unknown): void {
  try {
    listener(payload);
  } catch (err) {
    // One failing listener must not starve the others of the same event.
    console.error('capsem: an event listener threw', err);
  }
}

ipcRenderer.on(IPC_EVENT, (_event, message: unknown) => {
  if (!isEventMessage(message)) return;
  const forName = listeners.get(message.name);
  if (forName === undefined || forName.size === 0) {
    if (message.name === APP_OPEN_EVENT) {
      heldOpens.push(message.payload);
      if (heldOpens.length > MAX_HELD_OPENS) heldOpens.shift();
    }
    return;
  }
  for (const listener of [...forName]) deliver(listener, message.payload);
});

/**
 * A failed call rejects with a plain CallError object ({ name: 'CallError', code, message,
 * candidates? }): contextBridge copies only an Error's message across worlds, so an Error would
 * lose its code.
 */
function failure(error: CallError): CallError & { readonly name: 'CallError' } {
  return error.candidates === undefined
    ? { name: 'CallError', code: error.code, message: error.message }
    : { name: 'CallError', code: error.code, message: error.message, candidates: error.candidates };
}

const api: CapsemApi = {
  async call<N extends CallName>(name: N, params: CallParams<N>): Promise<CallResult<N>> {
    const answer: unknown = await ipcRenderer.invoke(IPC_CALL, { name, params });
    if (!isCallAnswer(answer)) throw failure({ code: 'bad_answer', message: 'the host sent an answer of the wrong shape' });
    if (!answer.ok) throw failure(answer.error);
    // The core validated params against CALLS[name] and answers with that call's result.
    return answer.result as CallResult<N>;
  },
  on<N extends EventName>(name: N, listener: (payload: EventPayload<N>) => void): () => void {
    const wrapped: Listener = (payload) => listener(payload as EventPayload<N>);
    let forName = listeners.get(name);
    if (forName === undefined) listeners.set(name, (forName = new Set()));
    forName.add(wrapped);
    if ((name as string) === APP_OPEN_EVENT) for (const payload of heldOpens.splice(0)) deliver(wrapped, payload);
    return () => {
      forName.delete(wrapped);
    };
  },
  mode: Object.freeze({ kind: 'electron' as const }),
};

/** A File the page holds (dropped or picked) to its path on disk; '' when it has none. Reads nothing. */
const files: CapsemFiles = {
  pathFor(file: File): string {
    try {
      return webUtils.getPathForFile(file);
    } catch {
      return '';
    }
  },
  /** The folder the user chose in the main process's dialog; null if cancelled. Lists nothing. */
  async pickFolder(): Promise<string | null> {
    const chosen: unknown = await ipcRenderer.invoke(IPC_PICK_FOLDER);
    return typeof chosen === 'string' && chosen !== '' ? chosen : null;
  },
};

contextBridge.exposeInMainWorld('capsem', api);
contextBridge.exposeInMainWorld('capsemFiles', files);
