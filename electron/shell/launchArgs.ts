import { z } from 'zod';

// What a launch asks the window to open: `capsem open co-work1`, or a `capsem://session/<id-or-name>`
// link handed over by the desktop. The shell never resolves names itself: the query goes to the
// renderer as-is and the renderer turns it into an id through `sessions.resolve`, the one resolver.
// Pure (no electron import) so it is unit tested under plain Node.

/** The scheme of both the app's own pages (capsem://app/) and session links (capsem://session/…). */
export const CAPSEM_SCHEME = 'capsem';
/** The host of a session link: capsem://session/<id-or-name>. */
export const SESSION_LINK_HOST = 'session';

/** A request to show one session; `query` is an id or a display name, as `sessions.resolve` takes it. */
export const OpenRequestSchema = z.strictObject({ query: z.string().min(1).max(200) });
export type OpenRequest = z.infer<typeof OpenRequestSchema>;

export type LaunchRequest =
  | { readonly kind: 'none' }
  | { readonly kind: 'open'; readonly request: OpenRequest }
  | { readonly kind: 'invalid'; readonly reason: string };

/** What a second instance sends the first (argv order is not kept by Chromium, additionalData is). */
export const SecondInstanceDataSchema = z.strictObject({ argv: z.array(z.string().max(4096)).max(64) });
export type SecondInstanceData = z.infer<typeof SecondInstanceDataSchema>;

// Control characters and slashes never belong in a session id or display name; refusing them here
// keeps a crafted link from carrying terminal escapes or path pieces into the window.
const BAD_QUERY = /[\u0000-\u001f\u007f/\\]/;

function openQuery(raw: string): LaunchRequest {
  const query = raw.trim();
  if (query.length === 0) return { kind: 'invalid', reason: 'open needs a session id or name' };
  if (query.length > 200) return { kind: 'invalid', reason: 'the session id or name is longer than 200 characters' };
  if (BAD_QUERY.test(query)) return { kind: 'invalid', reason: 'the session id or name contains a control character or a slash' };
  return { kind: 'open', request: { query } };
}

/** A `capsem://session/<id-or-name>` link to the session it names; anything else is invalid. */
export function parseSessionLink(link: string): LaunchRequest {
  let url: URL;
  try {
    url = new URL(link);
  } catch {
    return { kind: 'invalid', reason: 'not a URL' };
  }
  if (url.protocol !== `${CAPSEM_SCHEME}:`) return { kind: 'invalid', reason: `not a ${CAPSEM_SCHEME}: link` };
  if (url.hostname !== SESSION_LINK_HOST)
    return { kind: 'invalid', reason: `a ${CAPSEM_SCHEME}: link must be ${CAPSEM_SCHEME}://${SESSION_LINK_HOST}/<id-or-name>` };
  if (url.username !== '' || url.password !== '' || url.port !== '')
    return { kind: 'invalid', reason: 'a session link carries no credentials or port' };
  if (url.search !== '' || url.hash !== '') return { kind: 'invalid', reason: 'a session link carries no query or fragment' };
  const segments = url.pathname.split('/').filter((s) => s !== '');
  if (segments.length !== 1)
    return { kind: 'invalid', reason: `a session link names exactly one session: ${CAPSEM_SCHEME}://${SESSION_LINK_HOST}/<id-or-name>` };
  let decoded: string;
  try {
    decoded = decodeURIComponent(segments[0]!);
  } catch {
    return { kind: 'invalid', reason: 'the session link is not valid percent-encoding' };
  }
  return openQuery(decoded);
}

/**
 * The request in a command line: the first `open <id-or-name>` or `capsem://session/…` argument.
 * argv[0] is the executable; `--switches` (Chromium adds some, e.g. --original-process-start-time)
 * are skipped, as is the app path Electron is given in development (`electron dist/shell/main.cjs`).
 */
export function parseLaunchArgs(argv: readonly string[]): LaunchRequest {
  const args = argv.slice(1).filter((a) => !a.startsWith('-'));
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg.toLowerCase().startsWith(`${CAPSEM_SCHEME}:`)) return parseSessionLink(arg);
    if (arg === 'open') {
      const target = args[i + 1];
      return target === undefined ? { kind: 'invalid', reason: 'open needs a session id or name' } : openQuery(target);
    }
  }
  return { kind: 'none' };
}
