import { createContext, useContext, useEffect, useRef, useSyncExternalStore } from 'react';
import type { CapsemApi, EventName, EventPayload } from '../../electron/contract/appContract.ts';
import type { Connection, ConnectionState, Imported } from './capsemApi.ts';

const ConnectionContext = createContext<Connection | null>(null);
export const ConnectionProvider = ConnectionContext.Provider;

function useConnection(): Connection {
  const connection = useContext(ConnectionContext);
  if (!connection) throw new Error('useApi outside ConnectionProvider');
  return connection;
}

export function useApi(): CapsemApi {
  return useConnection().api;
}

/** Imports a file as a new session: the preload's path in Electron, an upload in browser mode. */
export function useImportFile(): (file: File) => Promise<Imported> {
  return useConnection().importFile;
}

/** The system's folder picker in Electron; null in browser mode, where the folder is typed or picked from the recent ones. */
export function usePickFolder(): (() => Promise<string | null>) | null {
  return useConnection().pickFolder;
}

const ALWAYS_OPEN: ConnectionState = { kind: 'open', epoch: 1 };

/** The socket's state; Electron IPC is always "open". */
export function useConnectionState(): { state: ConnectionState; retryNow: () => void } {
  const { wire } = useConnection();
  const state = useSyncExternalStore(
    (notify) => (wire ? wire.onState(notify) : () => undefined),
    () => wire?.state ?? ALWAYS_OPEN,
  );
  return { state, retryNow: () => wire?.retryNow() };
}

/**
 * Moves each time the socket (re)opens, and holds still while it is down: data loaded before a
 * disconnect may be stale, so loads keyed on it run again once the core is back.
 */
export function useConnectionEpoch(): number {
  const { state } = useConnectionState();
  const last = useRef(0);
  if (state.kind === 'open') last.current = state.epoch;
  return last.current;
}

/** Listens to one host event for the component's lifetime; the latest listener is always used. */
export function useHostEvent<N extends EventName>(name: N, listener: (payload: EventPayload<N>) => void): void {
  const api = useApi();
  const latest = useRef(listener);
  useEffect(() => {
    latest.current = listener;
  });
  useEffect(() => api.on(name, (payload) => latest.current(payload)), [api, name]);
}
