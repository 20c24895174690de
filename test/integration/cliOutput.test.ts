import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openMainDb } from '../../electron/store/mainDb.ts';
import { registerSession } from '../../electron/store/registry.ts';
import { writeRollup } from '../../electron/store/rollup.ts';
import { runCapsem, runCapsemShaped, spawnCapsem, USER_FOLDER, type CliResult, type StdoutShape } from '../helpers/runCapsem.ts';
import { bigSession } from '../helpers/sessionFixture.ts';
import { tempHome } from '../helpers/tempHome.ts';
import { vmTestHome, vmUnavailable } from '../helpers/vmTestHome.ts';

// Every command that writes to stdout, run from a user's folder with its stdout held as a shell
// holds it: `| head -2`, `| head -0` (the reader gone before the first byte) and `>/dev/full`.
// A reader that went away ends the command with 141 and nothing on stderr; a full disk with one
// line saying so and exit 1; never an unhandled EPIPE or ENOSPC with its stack. A 200,000-row
// `capsem sql` is streamed: its peak memory stays near that of a one-row query.

const home = tempHome();
/** Sessions in main.db alone, enough that `list --all` prints several times what a pipe holds (about 500 KB). */
const LISTED = 5000;
const BIG_RESULT = 200_000;
/** A row of the large result: about 230 bytes on the terminal (two cells of 110 characters, under the table's cut at 120), 46 MB in all. */
const bigQuery = (rows: number): string =>
  `WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n LIMIT ${rows}) SELECT x, printf('%0110d', x) AS a, printf('%0110d', -x) AS b FROM n`;
const bigCell = (x: number): string => String(x).padStart(110, '0');
/** Where exports go: a folder of the user's, relative paths being the folder capsem runs from. */
const outputs = mkdtempSync(join(USER_FOLDER, 'exports-'));
let sessionId = '';
let archive = '';
let runs = 0;

interface Case {
  readonly name: string;
  /** The arguments for the nth run: commands that change something get fresh ones each time. */
  readonly args: (n: number) => string[];
  readonly input?: string;
  /** Writes more than a pipe holds: `| head -2` must end it with 141, not let it finish. */
  readonly large?: boolean;
  /** Runs in a CAPSEM_HOME of its own each time (dev seed names its sessions alike every run). */
  readonly freshHome?: boolean;
}

const CASES: readonly Case[] = [
  { name: 'help', args: () => ['--help'] },
  { name: 'a command’s help', args: () => ['sql', '--help'] },
  { name: 'list', args: () => ['list', '--all', '-n', '0'], large: true },
  { name: 'check', args: () => ['check', sessionId] },
  { name: 'sql', args: () => ['sql', sessionId, bigQuery(BIG_RESULT)], large: true },
  { name: 'sql --json', args: () => ['sql', sessionId, bigQuery(BIG_RESULT), '--json'], large: true },
  { name: 'export', args: (n) => ['export', sessionId, '--format', 'jsonl', '-o', join(outputs, `${n}.jsonl`)] },
  { name: 'import', args: () => ['import', archive] },
  { name: 'vacuum', args: () => ['vacuum', '--dry-run', '--older-than', '0s'] },
  { name: 'rename', args: (n) => ['rename', sessionId, `renamed-${n}`] },
  { name: 'keys list', args: () => ['keys', 'list'] },
  { name: 'keys set', args: () => ['keys', 'set', 'openai'], input: `sk-proj-${'x'.repeat(48)}\n` },
  { name: 'keys rm', args: () => ['keys', 'rm', 'openai'] },
  { name: 'owner', args: () => ['owner'] },
  { name: 'doctor', args: () => ['doctor'] },
  { name: 'dev seed', args: () => ['dev', 'seed', '--sessions', '1', '--events', '5'], freshHome: true },
];

async function shaped(c: Case, shape: StdoutShape): Promise<CliResult> {
  runs += 1;
  const own = c.freshHome ? tempHome() : null;
  try {
    return await runCapsemShaped((own ?? home).root, c.args(runs), shape, { input: c.input });
  } finally {
    own?.remove();
  }
}

/** What an unhandled stream error prints: Node's report and the stack. */
const CRASH = /node:events|Unhandled 'error'|^\s+at .+:\d+:\d+\)?$/m;

beforeAll(async () => {
  sessionId = await bigSession(home, 'co-work1', 50);
  const db = openMainDb(home);
  db.transaction(() => {
    for (let i = 0; i < LISTED; i++) writeRollup(db, registerSession(db, { mode: 'test' }).id, null, { status: 'stopped' });
  })();
  db.close();
  archive = join(outputs, 'co-work1.capsem');
  const exported = runCapsem(home.root, ['export', 'co-work1', '-o', archive]);
  expect(exported.code, exported.stderr).toBe(0);
}, 120_000);
afterAll(() => {
  home.remove();
  rmSync(outputs, { recursive: true, force: true });
});

describe.each(CASES.map((c) => [c.name, c] as const))('capsem %s', (_name, c) => {
  it('exits 141, saying nothing, when its reader is gone before it writes (| head -0)', async () => {
    const result = await shaped(c, { head: 0 });
    expect(result.stderr).not.toMatch(CRASH);
    expect(result.stderr).not.toMatch(/EPIPE|cannot write/);
    expect(result.code, result.stderr).toBe(141);
  }, 60_000);

  it('gives its first two lines to | head -2, then exits 141 if it had more to write, else 0', async () => {
    const result = await shaped(c, { head: 2 });
    expect(result.stderr).not.toMatch(CRASH);
    // Two lines, or fewer from a command that had no more to say.
    expect(result.stdout).toMatch(/^([^\n]*\n){1,2}$/);
    expect(result.code, result.stderr).toBe(c.large ? 141 : result.code === 141 ? 141 : 0);
  }, 60_000);

  it('says in one line that it cannot write to a full device, and exits 1 (>/dev/full)', async () => {
    const result = await shaped(c, 'full');
    expect(result.stderr).not.toMatch(CRASH);
    expect(result.stderr.match(/^capsem: .*$/gm)?.filter((line) => /write|ENOSPC/.test(line))).toEqual([
      'capsem: cannot write the output: ENOSPC: no space left on device, write',
    ]);
    expect(result.code).toBe(1);
  }, 60_000);
});

const noVm = vmUnavailable();
describe.skipIf(noVm !== null)(`capsem run, a VM's output${noVm ? ` (skipped: ${noVm})` : ''}`, () => {
  const vmHome = vmTestHome();
  afterAll(() => vmHome.remove());

  it.each([
    ['| head -0', { head: 0 }, 141],
    ['| head -2', { head: 2 }, 141],
    ['>/dev/full', 'full', 1],
  ] as const)(
    'stops the VM in order and exits with the output’s status (%s)',
    async (_shape, shape, exitCode) => {
      const result = await runCapsemShaped(vmHome.root, ['run', '--image', 'minimal', '--', 'seq', '1', '200000'], shape, {
        timeoutMs: 240_000,
      });
      expect(result.stderr).not.toMatch(CRASH);
      expect(result.code, result.stderr).toBe(exitCode);
      expect(result.stdout).toBe(shape === 'full' ? '' : ['1\n', '2\n'].slice(0, shape.head).join(''));
      expect(result.stderr).toMatch(/capsem: (nothing reads the output any more|the output cannot be written); stopping/);
      const [session] = JSON.parse(runCapsem(vmHome.root, ['list', '--json', '-n', '1']).stdout) as { status: string }[];
      expect(session?.status).toBe('stopped');
    },
    300_000,
  );
});

describe('capsem api, a server whose one line is its address', () => {
  it('stops serving and exits 141 when nobody can read the address (| head -0)', async () => {
    const result = await runCapsemShaped(home.root, ['api', '--port', '0'], { head: 0 });
    expect(result.stderr).not.toMatch(CRASH);
    expect(result.code, result.stderr).toBe(141);
  }, 60_000);

  it('stops serving and exits 1 with one line when the address cannot be written (>/dev/full)', async () => {
    const result = await runCapsemShaped(home.root, ['api', '--port', '0'], 'full');
    expect(result.stderr).not.toMatch(CRASH);
    expect(result.stderr.trim()).toBe('capsem: cannot write the output: ENOSPC: no space left on device, write');
    expect(result.code).toBe(1);
  }, 60_000);
});

/** Runs `capsem sql` and reads all it prints, slowly at first; returns the exit code, the output and the process's peak RSS in KiB (VmHWM). */
function sqlPeak(args: readonly string[]): Promise<{ code: number; stdout: string; stderr: string; peakKib: number }> {
  return new Promise((resolve) => {
    const child = spawnCapsem(home.root, ['sql', sessionId, ...args]);
    const chunks: Buffer[] = [];
    let stderr = '';
    let peakKib = 0;
    /** VmHWM only grows: read it while the process lives, which it does until its last bytes are read. */
    const sample = (): void => {
      try {
        const hwm = /^VmHWM:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'));
        if (hwm) peakKib = Math.max(peakKib, Number(hwm[1]));
      } catch {
        // Gone already: the last sample stands.
      }
    };
    let first = true;
    child.stdout.on('data', (c: Buffer) => {
      chunks.push(c);
      sample();
      if (!first) return;
      first = false;
      // A reader slower than the query: output not held back for it would pile up in the process.
      child.stdout.pause();
      setTimeout(() => child.stdout.resume(), 3000);
    });
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.on('close', (code) => resolve({ code: code ?? -1, stdout: Buffer.concat(chunks).toString(), stderr, peakKib }));
  });
}

describe('capsem sql of a large result', () => {
  it('streams 200,000 rows as a table and as JSON in bounded memory', async () => {
    const small = await sqlPeak([bigQuery(1)]);
    expect(small.code, small.stderr).toBe(0);
    const table = await sqlPeak([bigQuery(BIG_RESULT)]);
    expect(table.code, table.stderr).toBe(0);
    const lines = table.stdout.trimEnd().split('\n');
    expect(lines).toHaveLength(BIG_RESULT + 2);
    expect(lines[0]).toMatch(/^x\s+a\s+b$/);
    expect(lines.at(-2)).toBe(`${BIG_RESULT}  ${bigCell(BIG_RESULT)}  -${bigCell(BIG_RESULT).slice(1)}`);
    expect(lines.at(-1)).toBe(`(${BIG_RESULT} rows)`);
    const json = await sqlPeak([bigQuery(BIG_RESULT), '--json']);
    expect(json.code, json.stderr).toBe(0);
    const rows = JSON.parse(json.stdout) as { x: number; a: string; b: string }[];
    expect(rows).toHaveLength(BIG_RESULT);
    expect(rows[BIG_RESULT - 1]).toEqual({ x: BIG_RESULT, a: bigCell(BIG_RESULT), b: `-${bigCell(BIG_RESULT).slice(1)}` });
    // The result is 46 MB of text. Measured over a one-row query's peak: streamed, 30-35 MB; the rows
    // held at once (stmt.all()), 95-125 MB; written without waiting for the reader, 150-175 MB.
    const boundKib = small.peakKib + 64 * 1024;
    console.log(
      `capsem sql peak RSS: 1 row ${small.peakKib} KiB, ${BIG_RESULT} rows ${table.peakKib} KiB (table), ${json.peakKib} KiB (JSON)`,
    );
    expect(table.peakKib).toBeLessThan(boundKib);
    expect(json.peakKib).toBeLessThan(boundKib);
  }, 180_000);

  it('prints a result as JSON.stringify would and a blob as its size', () => {
    const query = "SELECT 1 AS n, 'a\nb' AS text, x'00ff' AS blob, NULL AS absent UNION ALL SELECT 2, '', x'', 1.5";
    const { code, stdout } = runCapsem(home.root, ['sql', sessionId, query, '--json']);
    expect(code).toBe(0);
    const expected = [
      { n: 1, text: 'a\nb', blob: '<blob 2 B>', absent: null },
      { n: 2, text: '', blob: '<blob 0 B>', absent: 1.5 },
    ];
    expect(stdout).toBe(`${JSON.stringify(expected, null, 2)}\n`);
    expect(runCapsem(home.root, ['sql', sessionId, 'SELECT 1 WHERE 0', '--json']).stdout).toBe('[]\n');
  });
});
