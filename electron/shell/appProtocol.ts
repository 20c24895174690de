import { extname, isAbsolute, relative, resolve, sep } from 'node:path';
import { CAPSEM_SCHEME } from './launchArgs.ts';

// The renderer is served from capsem://app/ rather than file://: a file:// page shares one origin
// with every file on disk, gets extra privileges in Electron, and cannot be given response headers.
// A standard, secure custom scheme has its own origin, so CSP 'self' and the IPC sender check mean
// exactly "our built renderer". Pure (no electron import) so it is unit tested under plain Node.

export const APP_HOST = 'app';
export const APP_ORIGIN = `${CAPSEM_SCHEME}://${APP_HOST}`;
export const APP_ENTRY_URL = `${APP_ORIGIN}/index.html`;

/**
 * Scripts only from the app's own files, no eval, no plugins, no frames, no connections out.
 * Inline styles stay allowed because xterm.js and React's style props set them at run time;
 * inline scripts do not.
 */
export const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "font-src 'self' data:",
  "connect-src 'self'",
  "worker-src 'self'",
  "manifest-src 'self'",
  "object-src 'none'",
  "frame-src 'none'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
  "form-action 'none'",
].join('; ');

/** Headers on every capsem://app/ response. */
export function appResponseHeaders(contentType: string): Record<string, string> {
  return {
    'Content-Type': contentType,
    'Content-Security-Policy': CONTENT_SECURITY_POLICY,
    'X-Content-Type-Options': 'nosniff',
    'Cross-Origin-Opener-Policy': 'same-origin',
    'Referrer-Policy': 'no-referrer',
    'Cache-Control': 'no-cache',
  };
}

const MIME_TYPES: Readonly<Record<string, string>> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.woff': 'font/woff',
  '.woff2': 'font/woff2',
  '.ttf': 'font/ttf',
  '.wasm': 'application/wasm',
  '.txt': 'text/plain; charset=utf-8',
};

export type AppAsset =
  | { readonly kind: 'file'; readonly path: string; readonly contentType: string }
  | { readonly kind: 'refused'; readonly status: 400 | 403 | 404; readonly reason: string };

/** Is this URL one of the app's own pages (the only place the window may be or navigate to)? */
export function isAppUrl(link: string): boolean {
  let url: URL;
  try {
    url = new URL(link);
  } catch {
    return false;
  }
  // Node's URL gives a non-special scheme the opaque origin "null", so compare the parts.
  return url.protocol === `${CAPSEM_SCHEME}:` && url.hostname === APP_HOST && url.port === '' && url.username === '' && url.password === '';
}

/**
 * The file under `rootDir` a capsem://app/ request names, or why it is refused. Refuses other
 * hosts, encoded or literal `..`, backslashes, NUL, dot-files, and anything that resolves outside
 * the root. A path without an extension is a client-side route and gets index.html.
 */
export function resolveAppAsset(rootDir: string, requestUrl: string): AppAsset {
  let url: URL;
  try {
    url = new URL(requestUrl);
  } catch {
    return { kind: 'refused', status: 400, reason: 'not a URL' };
  }
  if (!isAppUrl(requestUrl)) return { kind: 'refused', status: 404, reason: `only ${APP_ORIGIN}/ is served` };
  // URL already folded literal "/../" segments; percent-encoded ones ("%2e%2e", "%2f") are still
  // encoded here, so each segment is decoded and checked on its own.
  const segments: string[] = [];
  for (const raw of url.pathname.split('/')) {
    if (raw === '') continue;
    let segment: string;
    try {
      segment = decodeURIComponent(raw);
    } catch {
      return { kind: 'refused', status: 400, reason: 'bad percent-encoding' };
    }
    if (segment.includes('/') || segment.includes('\\') || segment.includes('\0'))
      return { kind: 'refused', status: 400, reason: 'a path segment holds a separator or NUL' };
    if (segment.startsWith('.')) return { kind: 'refused', status: 403, reason: 'dot-segments and dot-files are not served' };
    segments.push(segment);
  }
  const last = segments.at(-1);
  if (last === undefined || extname(last) === '') segments.splice(0, segments.length, 'index.html');
  const root = resolve(rootDir);
  const path = resolve(root, ...segments);
  const rel = relative(root, path);
  if (rel === '' || rel.startsWith(`..${sep}`) || rel === '..' || isAbsolute(rel))
    return { kind: 'refused', status: 403, reason: 'outside the renderer folder' };
  const contentType = MIME_TYPES[extname(path).toLowerCase()];
  if (contentType === undefined) return { kind: 'refused', status: 404, reason: `no file type for ${extname(path)}` };
  return { kind: 'file', path, contentType };
}

/** Is a real path (after following symlinks) still inside the renderer folder? */
export function isInsideRoot(rootRealPath: string, fileRealPath: string): boolean {
  const rel = relative(rootRealPath, fileRealPath);
  return rel !== '' && !rel.startsWith(`..${sep}`) && rel !== '..' && !isAbsolute(rel);
}
