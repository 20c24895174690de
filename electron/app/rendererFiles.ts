import { closeSync, createReadStream, existsSync, fstatSync, openSync, realpathSync, statSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { extname, join, resolve, sep } from 'node:path';
import { pipeline } from 'node:stream';

// The built renderer (dist/renderer, from `vite build`) served read-only: GET and HEAD, files
// inside the folder only (no `..`, no symlink out), with types the browser will not second-guess.

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.woff2': 'font/woff2',
  '.woff': 'font/woff',
  '.ttf': 'font/ttf',
  '.map': 'application/json; charset=utf-8',
  '.wasm': 'application/wasm',
};

const NOT_BUILT = `<!doctype html>
<html><head><meta charset="utf-8"><title>Capsem</title></head>
<body style="font-family: system-ui, sans-serif; margin: 3em; max-width: 40em">
<h1>The renderer is not built</h1>
<p>The Capsem core is running, but there is no window to show: the renderer is not built: run <code>npm run build:renderer</code>, then reload this page.</p>
<p><code>npm start -- --browser</code> builds it for you when it is missing or out of date.</p>
</body></html>
`;

export function rendererBuilt(dir: string): boolean {
  return existsSync(join(dir, 'index.html'));
}

/** The file a URL path names inside `dir`, or null when it names none or leads outside. */
export function rendererFile(dir: string, urlPath: string): string | null {
  let path: string;
  try {
    path = decodeURIComponent(urlPath);
  } catch {
    return null;
  }
  if (path.includes('\0')) return null;
  const root = resolve(dir);
  const file = resolve(root, `.${path.endsWith('/') ? `${path}index.html` : path}`);
  if (file !== root && !file.startsWith(root + sep)) return null;
  try {
    if (!statSync(file).isFile()) return null;
    const real = realpathSync(file);
    const realRoot = realpathSync(root);
    return real.startsWith(realRoot + sep) ? real : null;
  } catch {
    return null;
  }
}

/** Answers a GET/HEAD for the renderer; `headers` are the security headers every answer carries. */
export function serveRenderer(
  dir: string,
  req: IncomingMessage,
  res: ServerResponse,
  pathname: string,
  headers: Record<string, string>,
): void {
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    res.writeHead(405, { ...headers, allow: 'GET, HEAD', 'content-type': 'text/plain; charset=utf-8' }).end('only GET and HEAD\n');
    return;
  }
  if (!rendererBuilt(dir)) {
    res.writeHead(pathname === '/' ? 503 : 404, { ...headers, 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' });
    res.end(req.method === 'HEAD' ? undefined : NOT_BUILT);
    return;
  }
  const file = rendererFile(dir, pathname);
  const fd = file === null ? null : openForReading(file);
  if (file === null || fd === null) {
    res.writeHead(404, { ...headers, 'content-type': 'text/plain; charset=utf-8' }).end('not found\n');
    return;
  }
  const type = TYPES[extname(file).toLowerCase()] ?? 'application/octet-stream';
  // index.html names hashed assets: it must be fetched fresh, the assets may be cached.
  const cache = extname(file) === '.html' ? 'no-store' : 'private, max-age=3600';
  res.writeHead(200, { ...headers, 'content-type': type, 'cache-control': cache, 'content-length': String(fstatSync(fd).size) });
  if (req.method === 'HEAD') {
    closeSync(fd);
    res.end();
    return;
  }
  // pipeline, not pipe: a read that fails, or a client that leaves, ends this answer and closes the
  // file, where an unheard stream error would stop the server.
  pipeline(createReadStream('', { fd }), res, () => undefined);
}

/**
 * The file opened before the answer starts, so one this process cannot read is a 404 like a
 * missing one, and the length sent is that of the very file that is sent.
 */
function openForReading(file: string): number | null {
  try {
    return openSync(file, 'r');
  } catch {
    return null;
  }
}
