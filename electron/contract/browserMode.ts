// The browser-mode UI server's addresses and limits, which the host serves and the page uses. Kept
// apart from the zod schemas so the renderer imports these values without bundling zod.

/** Browser mode: the WebSocket's path on the UI server and the query parameter carrying the per-run token. */
export const BROWSER_WS_PATH = '/ws';
export const BROWSER_TOKEN_PARAM = 'token';
/** Browser mode: a JSON document `{ kind: 'browser', reason }` saying why the app runs in a browser. */
export const BROWSER_MODE_PATH = '/mode.json';
/**
 * Browser mode: `POST /import?token=…&name=<file name>` with the file as the body (Content-Length
 * required, at most BROWSER_IMPORT_MAX_BYTES), answered with `{ id, name }` or a CallError as JSON.
 */
export const BROWSER_IMPORT_PATH = '/import';
export const BROWSER_IMPORT_MAX_BYTES = 16 * 2 ** 30;
/** The largest WebSocket message either side sends (terminal input is capped far below it). */
export const BROWSER_MAX_MESSAGE_BYTES = 1 << 20;
