import type { CapsemApi } from '../../electron/contract/appContract.ts';
import { WireClient, socketUrl, takeToken, type ConnectionState } from './wireClient.ts';

/** The API and, in browser mode, the socket whose state the banner shows. */
export interface Connection {
  readonly api: CapsemApi;
  readonly wire: WireClient | null;
}

/** `window.capsem` when the Electron preload provided it; otherwise the browser-mode socket. */
export function connect(): Connection {
  if (window.capsem) return { api: window.capsem, wire: null };
  const wire = new WireClient(socketUrl(takeToken()));
  return { api: wire, wire };
}

export type { ConnectionState };
