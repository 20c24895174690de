import { resolve } from 'node:path';
import { EXPORT_EXTENSIONS, EXPORT_FORMATS, exportSession, type ExportFormat } from '../archive/exportSession.ts';
import { openMainDb } from '../store/mainDb.ts';
import { getSession } from '../store/registry.ts';
import { resolveSession } from '../store/resolver.ts';
import { progressLine } from './progressLine.ts';
import { parseCommandArgs, UsageError, type Command } from './context.ts';

/** Stages of a long archive job and the share of the bar each takes. */
const STAGE_SHARE: Record<string, readonly [number, number]> = {
  snapshot: [0, 0.3],
  contents: [0.3, 0.35],
  checksums: [0.35, 0.55],
  archive: [0.55, 1],
  har: [0.35, 1],
  jsonl: [0.35, 1],
  verify: [0, 0.85],
  copy: [0, 0.85],
  check: [0.85, 1],
};

/** Below this a job is over before a bar would help; above it, one line on stderr shows progress. */
const LARGE = 32 << 20;

export function archiveProgress(stream: NodeJS.WriteStream = process.stderr): {
  onProgress: (stage: string, done: number, total: number) => void;
  finish: () => void;
} {
  const line = progressLine(stream);
  let shown = false;
  return {
    onProgress(stage, done, total) {
      // An import's check comes after its copy, in steps: shown once the copy was large enough to show.
      if (stage === 'check' && !shown) return;
      const bytes = stage !== 'har' && stage !== 'jsonl' && stage !== 'contents';
      if (!shown && (bytes ? total < LARGE : total < 20_000)) return;
      shown = true;
      const [from, to] = STAGE_SHARE[stage] ?? [0, 1];
      const part = total > 0 ? done / total : 1;
      const message =
        stage === 'check'
          ? `step ${done} of ${total}`
          : bytes
            ? `${(done / 2 ** 20).toFixed(0)} of ${(total / 2 ** 20).toFixed(0)} MiB`
            : `${done} of ${total} ${stage === 'contents' ? 'contents' : 'events'}`;
      line.update({ stage, message, fraction: from + (to - from) * part });
    },
    finish: () => line.finish(),
  };
}

export const exportCommand: Command = {
  name: 'export',
  summary: 'write a session to one archive file, or as HAR or JSONL',
  usage: `capsem export ID|NAME [-o FILE] [--format archive|har|jsonl] [--gzip]

Writes a consistent snapshot of the session, live or ended (even vacuumed), to FILE.

  archive  (default) a tar holding manifest.json, session.db (taken with SQLite's online backup,
           safe while the session runs), pty.log, serial.log and contents.pack (the workspace's
           files as the session saw them, from the content store); the manifest lists the format
           version, session id and name, times, rows per table, the app version and the SHA-256
           of every member. Read it back with capsem import.
  har      HAR 1.2 with full request and response bodies, for browser devtools or HTTP Toolkit
  jsonl    one session-api event per line, in seq order

  -o FILE   where to write (default: NAME-or-ID.capsem / .har / .jsonl here); never replaced
  --gzip    compress the archive (gzip level 1): smaller, slower
  --format  archive, har or jsonl`,
  async run(ctx, argv) {
    const { values, positionals } = parseCommandArgs(this, argv, {
      o: { type: 'string', short: 'o' },
      format: { type: 'string' },
      gzip: { type: 'boolean' },
    });
    if (positionals.length !== 1) throw new UsageError('export takes one session, by id or name (see capsem export --help)');
    const format = (values.format ?? 'archive') as ExportFormat;
    if (!EXPORT_FORMATS.includes(format)) throw new UsageError(`--format takes archive, har or jsonl, not "${values.format as string}"`);
    if (values.gzip && format !== 'archive') throw new UsageError('--gzip applies to --format archive only');
    const mainDb = openMainDb(ctx.home);
    try {
      const id = resolveSession(ctx.home, mainDb, positionals[0]!);
      const record = getSession(mainDb, id);
      const out = resolve((values.o as string | undefined) ?? `${record?.name ?? id}${EXPORT_EXTENSIONS[format]}`);
      const progress = archiveProgress();
      let result;
      try {
        result = await exportSession(ctx.home, mainDb, id, { format, out, gzip: values.gzip === true, onProgress: progress.onProgress });
      } finally {
        progress.finish();
      }
      const what =
        format === 'archive' ? `${result.items} members` : format === 'har' ? `${result.items} entries` : `${result.items} events`;
      ctx.out(
        `Exported session ${id}${record?.name ? ` (${record.name})` : ''} as ${format} to ${result.path}: ${result.bytes} bytes, ${what}`,
      );
      return 0;
    } finally {
      mainDb.close();
    }
  },
};
