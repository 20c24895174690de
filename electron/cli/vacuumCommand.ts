import { openMainDb } from '../store/mainDb.ts';
import { parseAge, vacuumSessions } from '../archive/vacuumSessions.ts';
import { parseCommandArgs, UsageError, type Command } from './context.ts';

const mib = (bytes: number): string => `${(bytes / 2 ** 20).toFixed(1)} MiB`;

export const vacuumCommand: Command = {
  name: 'vacuum',
  summary: 'compact ended sessions older than an age; main.db keeps their figures',
  usage: `capsem vacuum [--older-than 30d] [--dry-run] [--include-resumable]

For each ended session (stopped, crashed or terminated) that ended before the age: checkpoint
its session.db, VACUUM INTO a compact copy, gzip that copy to session.db.gz and the pty and
serial logs to .gz, then remove the originals. main.db keeps every figure and marks the session
vacuumed: capsem list --all shows it without the * (no session.db on disk), and capsem export
still reads it back. The workspace folder is left alone.

Named sessions kept for resume are skipped unless --include-resumable, which gives up their
names (they can no longer be resumed).

  --older-than AGE     30d (default), 12h, 90m, 45s
  --dry-run            list what would be compacted; change nothing
  --include-resumable  compact resumable sessions too`,
  async run(ctx, argv) {
    const { values, positionals } = parseCommandArgs(this, argv, {
      'older-than': { type: 'string' },
      'dry-run': { type: 'boolean' },
      'include-resumable': { type: 'boolean' },
    });
    if (positionals.length > 0) throw new UsageError('vacuum takes no session; it chooses by age (see capsem vacuum --help)');
    let olderThanMs: number;
    try {
      olderThanMs = parseAge((values['older-than'] as string | undefined) ?? '30d');
    } catch (err) {
      throw new UsageError(`--older-than: ${(err as Error).message}`);
    }
    const dryRun = values['dry-run'] === true;
    const mainDb = openMainDb(ctx.home);
    try {
      const report = await vacuumSessions(ctx.home, mainDb, {
        olderThanMs,
        dryRun,
        includeResumable: values['include-resumable'] === true,
        onSession: (o) =>
          ctx.out(
            `${dryRun ? 'would vacuum' : 'vacuumed'} ${o.id}${o.name ? ` (${o.name})` : ''}, ended ${o.endedAt}: ${mib(o.bytesBefore)}${o.bytesAfter === null ? '' : ` -> ${mib(o.bytesAfter)}`}`,
          ),
      });
      const saved = report.vacuumed.reduce((sum, o) => sum + o.bytesBefore - (o.bytesAfter ?? o.bytesBefore), 0);
      ctx.out(
        `${report.vacuumed.length} session${report.vacuumed.length === 1 ? '' : 's'} ${dryRun ? 'would be vacuumed' : `vacuumed, ${mib(saved)} freed`}` +
          (report.skippedResumable > 0
            ? `; ${report.skippedResumable} resumable session${report.skippedResumable === 1 ? '' : 's'} kept (see --include-resumable)`
            : ''),
      );
      return 0;
    } finally {
      mainDb.close();
    }
  },
};
