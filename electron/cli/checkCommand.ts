import { resolve } from 'node:path';
import { abandonedNotes } from '../store/abandonedSessions.ts';
import { openMainDb } from '../store/mainDb.ts';
import { checkSessionDb, type CheckReport } from '../sessions/sessionCheck.ts';
import { parseCommandArgs, parseCount, UsageError, type Command } from './context.ts';
import { targetSession } from './sessionTarget.ts';
import { formatCell, formatTable } from './table.ts';

function render(report: CheckReport, header: string): string {
  const out: string[] = [header, '', 'Tables:'];
  for (const [name, t] of Object.entries(report.tables)) {
    out.push(`  ${name.padEnd(22)} ${t.present ? `${t.rows} rows` : 'MISSING'}`);
  }
  for (const [name, t] of Object.entries(report.tables)) {
    if (!t.preview || t.preview.length === 0) continue;
    const cols = Object.keys(t.preview[0]!);
    out.push(
      '',
      `Last ${t.preview.length} rows of ${name}:`,
      formatTable(
        cols,
        t.preview.map((r) => cols.map((c) => formatCell(r[c]))),
      ),
    );
  }
  out.push('');
  if (report.findings.length === 0) out.push('Findings: none');
  else {
    out.push(`Findings: ${report.findings.length}`);
    for (const f of report.findings) {
      out.push(`  FINDING [${f.check}] ${f.message} (${f.count})`, `    likely cause: ${f.cause}`);
      if (f.samples.length > 0) out.push(`    e.g. ${f.samples.join(', ')}`);
    }
  }
  for (const note of report.notes) out.push(`  note: ${note}`);
  return out.join('\n');
}

export const checkCommand: Command = {
  name: 'check',
  summary: "inspect a session's database for integrity and telemetry defects",
  usage: `capsem check [ID|NAME] [-n N] [--json]
capsem check --db FILE [-n N] [--json]

Checks: tables and columns present, row counts, orphaned tool_calls and tool_responses (same
trace), AI provider correlation (answered model API requests with no model_calls), NULLs in
critical fields, MCP correlation, cost gaps, writer losses and SQLite's integrity_check. Each
finding names the likely cause its rows point to. Notes say what could not be checked and what is
true but no defect (a request abandoned before any answer, a stream whose provider reported no
usage, a response cut short whose exchange says why). Notes never change the exit code: it is 1
when there is any finding.

With no ID or NAME it checks the newest session whose session.db is on disk.

  -n N       also print the last N rows of each table
  --db FILE  check any session.db file that follows the spec's schema
  --json     print the report as JSON`,
  run(ctx, argv) {
    const { values, positionals } = parseCommandArgs(this, argv, {
      n: { type: 'string', short: 'n' },
      db: { type: 'string' },
      json: { type: 'boolean' },
    });
    if (positionals.length > 1) throw new UsageError('check takes at most one session (see capsem check --help)');
    if (values.db && positionals.length > 0) throw new UsageError('give either a session or --db FILE, not both');
    const previewRows = parseCount(values.n as string | undefined, '-n', 0);
    let dbPath: string;
    let header: string;
    let identity: { id: string | null; name: string | null };
    let endNotes: string[] = [];
    if (values.db) {
      dbPath = resolve(values.db as string);
      header = `Database ${dbPath}`;
      identity = { id: null, name: null };
    } else {
      const mainDb = openMainDb(ctx.home);
      try {
        const target = targetSession(ctx.home, mainDb, positionals[0]);
        dbPath = target.dbPath;
        identity = { id: target.id, name: target.record?.name ?? null };
        header = `Session ${target.id}${identity.name ? ` (${identity.name})` : ''}, status ${target.record?.status ?? 'unknown'}\n${dbPath}`;
        endNotes = abandonedNotes(target.record);
      } finally {
        mainDb.close();
      }
    }
    const checked = checkSessionDb(dbPath, { previewRows });
    const report = { ...checked, notes: [...checked.notes, ...endNotes] };
    ctx.out(values.json ? JSON.stringify({ ...identity, ...report }, null, 2) : render(report, header));
    return report.findings.length > 0 ? 1 : 0;
  },
};
