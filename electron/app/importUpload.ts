import { createWriteStream } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { join } from 'node:path';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { makeStagingDir } from '../archive/stagingDir.ts';
import type { CallError, CallResult, HostCore } from '../contract/appContract.ts';
import type { CapsemHome } from '../store/paths.ts';
import { asCallError } from './callFailure.ts';
import { checkSocket } from './wsGuards.ts';

// Browser mode's import: a page has no file paths, so it uploads the dropped file. The upload is
// guarded like the socket (Host checked by the server, then Origin and the per-run token), must
// say its length up front (capped), is streamed to a private staging file under
// CAPSEM_HOME/run/staging (never held in memory), and is then imported by the core's own
// `sessions.import`, so the checks and the answer are the same as in Electron. The staging file is
// removed whatever happens.

export interface ImportUploadOptions {
  readonly core: HostCore;
  /** Where to stage uploads; without it the route says imports are not available. */
  readonly home: CapsemHome | undefined;
  readonly origins: ReadonlySet<string>;
  readonly token: string;
  readonly maxBytes: number;
  readonly headers: Record<string, string>;
}

/** The upload's file name as a safe single path segment (it names the staged file and the import's source). */
export function safeUploadName(raw: string | null): string {
  const last = (raw ?? '').split(/[\\/]/).pop() ?? '';
  const cleaned = last
    .replace(/[^A-Za-z0-9._-]/g, '_')
    .replace(/^\.+/, '_')
    .slice(0, 120);
  return cleaned || 'upload';
}

function statusOf(code: string): number {
  if (code === 'bad_archive' || code === 'bad_params' || code === 'bad_upload') return 400;
  if (code === 'forbidden') return 403;
  if (code === 'bad_token') return 401;
  if (code === 'method_not_allowed') return 405;
  if (code === 'length_required') return 411;
  if (code === 'too_large') return 413;
  if (code === 'not_available') return 404;
  return 500;
}

function answer(
  res: ServerResponse,
  headers: Record<string, string>,
  body: CallResult<'sessions.import'> | CallError,
  close = false,
): void {
  if (res.headersSent) return void res.end();
  const status = 'code' in body ? statusOf(body.code) : 200;
  res.writeHead(status, {
    ...headers,
    'content-type': 'application/json; charset=utf-8',
    'cache-control': 'no-store',
    ...(status === 405 ? { allow: 'POST' } : {}),
    // A refused body is not read: the connection ends with the answer instead of draining gigabytes.
    ...(close ? { connection: 'close' } : {}),
  });
  res.end(JSON.stringify(body));
}

/** POST /import: streams the body to a staging file, imports it, answers `{ id, name }` or a CallError. */
export async function handleImportUpload(req: IncomingMessage, res: ServerResponse, url: URL, options: ImportUploadOptions): Promise<void> {
  const refuse = (code: string, message: string) => answer(res, options.headers, { code, message }, true);
  if (req.method !== 'POST') return refuse('method_not_allowed', 'import by POST with the file as the body');
  const verdict = checkSocket(req.headers, url, options.origins, options.token);
  if (!verdict.ok) return refuse(verdict.status === 401 ? 'bad_token' : 'forbidden', verdict.reason);
  if (!options.home) return refuse('not_available', 'this server does not import sessions');
  const declared = req.headers['content-length'];
  if (declared === undefined || !/^\d{1,15}$/.test(declared)) return refuse('length_required', 'send the file with a Content-Length');
  const length = Number(declared);
  if (length > options.maxBytes) return refuse('too_large', `the file is ${length} bytes, over the import limit of ${options.maxBytes}`);

  const name = safeUploadName(url.searchParams.get('name'));
  const staging = makeStagingDir(options.home, 'upload');
  const file = join(staging.path, name);
  try {
    let received = 0;
    const counter = new Transform({
      transform(chunk: Buffer, _encoding, done) {
        received += chunk.length;
        done(received > length ? new Error('the body is longer than its Content-Length') : null, chunk);
      },
    });
    try {
      await pipeline(req, counter, createWriteStream(file, { flags: 'wx', mode: 0o600 }));
    } catch (err) {
      return refuse('bad_upload', `the upload did not arrive whole: ${(err as Error).message}`);
    }
    if (received !== length) return refuse('bad_upload', `the upload ended after ${received} of ${length} bytes`);
    try {
      const result = (await options.core.handle('sessions.import', { path: file })) as CallResult<'sessions.import'>;
      answer(res, options.headers, { id: result.id, name: result.name });
    } catch (err) {
      const error = asCallError(err);
      // The staging path means nothing to the page: the file is named as the person dropped it.
      answer(res, options.headers, { code: error.code, message: error.message.split(file).join(name) });
    }
  } finally {
    staging.remove();
  }
}
