import type { CallResult, CapsemApi } from '../../electron/contract/appContract.ts';
import { BROWSER_IMPORT_PATH, BROWSER_TOKEN_PARAM } from '../../electron/contract/browserMode.ts';
import { CapsemCallError } from './callError.ts';
import { WireClient, socketUrl, takeToken, type ConnectionState } from './wireClient.ts';

export type Imported = CallResult<'sessions.import'>;

/** The API, how this page imports a file, and in browser mode the socket whose state the banner shows. */
export interface Connection {
  readonly api: CapsemApi;
  readonly wire: WireClient | null;
  /** Imports a dropped or picked file as a new read-only session; rejects with a CapsemCallError. */
  readonly importFile: (file: File) => Promise<Imported>;
  /** Electron: the system's folder picker (the chosen folder, or null); browser mode has none, its page cannot see paths. */
  readonly pickFolder: (() => Promise<string | null>) | null;
}

/** Electron: the preload gives the file's path and the core imports it from there. */
function importByPath(api: CapsemApi): (file: File) => Promise<Imported> {
  return async (file) => {
    const path = window.capsemFiles?.pathFor(file) ?? '';
    if (!path)
      throw new CapsemCallError({
        code: 'no_path',
        message: `${file.name} is not a file on this computer; save it to disk and drop it again`,
      });
    return api.call('sessions.import', { path });
  };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null;
}

/** Browser mode: the page has no paths, so the file is uploaded to the UI server (same token as the socket). */
export function importByUpload(token: string | null): (file: File) => Promise<Imported> {
  return async (file) => {
    const query = new URLSearchParams({ ...(token ? { [BROWSER_TOKEN_PARAM]: token } : {}), name: file.name });
    let response: Response;
    try {
      response = await fetch(`${BROWSER_IMPORT_PATH}?${query.toString()}`, {
        method: 'POST',
        body: file,
        headers: { 'content-type': 'application/octet-stream' },
        cache: 'no-store',
        referrerPolicy: 'no-referrer',
      });
    } catch (e) {
      throw new CapsemCallError({
        code: 'disconnected',
        message: `could not upload ${file.name}: ${e instanceof Error ? e.message : String(e)}`,
      });
    }
    let body: unknown = null;
    try {
      body = await response.json();
    } catch {
      // Not JSON: reported below by status.
    }
    if (response.ok && isRecord(body) && typeof body.id === 'string')
      return { id: body.id, name: typeof body.name === 'string' ? body.name : null };
    if (isRecord(body) && typeof body.code === 'string' && typeof body.message === 'string')
      throw new CapsemCallError({ code: body.code, message: body.message });
    throw new CapsemCallError({ code: 'failed', message: `importing ${file.name} failed (HTTP ${response.status})` });
  };
}

/** `window.capsem` when the Electron preload provided it; otherwise the browser-mode socket. */
export function connect(): Connection {
  if (window.capsem) {
    const files = window.capsemFiles;
    return { api: window.capsem, wire: null, importFile: importByPath(window.capsem), pickFolder: files ? () => files.pickFolder() : null };
  }
  const token = takeToken();
  const wire = new WireClient(socketUrl(token));
  return { api: wire, wire, importFile: importByUpload(token), pickFolder: null };
}

export type { ConnectionState };
