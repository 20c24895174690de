import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { json, startUpstream, type Upstream } from '../helpers/mockUpstreams.ts';
import { OtlpReceiver } from '../helpers/otlpReceiver.ts';
import { capsemOnPath, runCapsemAsync, spawnCapsem, USER_FOLDER, type CliResult } from '../helpers/runCapsem.ts';
import { tempHome } from '../helpers/tempHome.ts';
import { vmTestHome, vmUnavailable } from '../helpers/vmTestHome.ts';

// Every capsem command as a user runs it: `capsem` found on the PATH through a symlink (what
// `npm link` makes), from the user's own project folder outside this checkout, each doing its
// real job. That folder is a TypeScript project whose tsconfig.json maps bare imports to its own
// src/, where zod, ws and better-sqlite3 stand in: capsem must load its own packages, not these.
// The VM commands cost three boots of the minimal image (about 3 s each under TCG): `run` writes a
// file in a named session's workspace, `resume` boots that session again and shows the file while
// `owner` names it and `stop` ends it; `shell` boots a new one with its input piped in.

const noVm = vmUnavailable();
const home = vmTestHome();
const onPath = capsemOnPath();
const upstreamHome = tempHome();
const HOST = 'api.anywhere.test';
let upstream: Upstream;
let upstreamEnv: NodeJS.ProcessEnv;
/** The commands this file has run, to hold against the ones `capsem --help` lists. */
const ran = new Set<string>();

function capsem(args: readonly string[], env: NodeJS.ProcessEnv = {}): Promise<CliResult> {
  ran.add(args[0]!);
  return runCapsemAsync(home.root, args, env, { onPath, timeoutMs: 120_000 });
}

function started(args: readonly string[]) {
  ran.add(args[0]!);
  const child = spawnCapsem(home.root, args, {}, { onPath });
  const output = { stdout: '', stderr: '' };
  child.stdout.on('data', (c: Buffer) => (output.stdout += c.toString()));
  child.stderr.on('data', (c: Buffer) => (output.stderr += c.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('close', resolve));
  return { child, output, exited };
}

/** The child's exit code, or 'still running' after `ms`: a test that waits must not outlive its child's hang. */
function exitWithin(exited: Promise<number | null>, ms: number): Promise<number | null | 'still running'> {
  return Promise.race([exited, new Promise<'still running'>((r) => setTimeout(() => r('still running'), ms).unref())]);
}

async function until<T>(what: string, probe: () => T | null | undefined | false, timeoutMs = 60_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const value = probe();
    if (value) return value;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

beforeAll(async () => {
  writeFileSync(join(USER_FOLDER, 'package.json'), JSON.stringify({ name: 'my-project', type: 'commonjs' }));
  writeFileSync(join(USER_FOLDER, 'tsconfig.json'), JSON.stringify({ compilerOptions: { baseUrl: '.', paths: { '*': ['./src/*'] } } }));
  for (const shadowed of ['zod', 'ws', 'better-sqlite3']) {
    mkdirSync(join(USER_FOLDER, 'src', shadowed), { recursive: true });
    writeFileSync(
      join(USER_FOLDER, 'src', shadowed, 'index.ts'),
      `throw new Error('capsem loaded the project\\'s own src/${shadowed}');\n`,
    );
  }
  upstream = await startUpstream(upstreamHome, [HOST], (req, _body, res) => json(res, 200, { hello: 'from upstream', path: req.url }));
  const caFile = join(upstreamHome.root, 'upstream-ca.pem');
  writeFileSync(caFile, upstream.caPem);
  upstreamEnv = { CAPSEM_RESOLVE: `${HOST}:443=127.0.0.1:${upstream.port}`, CAPSEM_UPSTREAM_CA_FILE: caFile };
}, 60_000);

afterAll(async () => {
  for (const made of ['package.json', 'tsconfig.json', 'src', 'mine.capsem'])
    rmSync(join(USER_FOLDER, made), { recursive: true, force: true });
  await upstream?.close();
  onPath.remove();
  upstreamHome.remove();
  home.remove();
});

describe("capsem on the PATH, run from a user's project folder", () => {
  let seeded: { id: string; name: string }[] = [];

  it('seeds sessions, lists, checks and queries them, and renames one', async () => {
    const seed = await capsem(['dev', 'seed', '--sessions', '2', '--events', '60', '--seed', '7']);
    expect(seed.code, seed.stderr).toBe(0);
    seeded = seed.stdout
      .trim()
      .split('\n')
      .slice(0, 2)
      .map((line) => {
        const [id, name] = line.split(/\s+/);
        return { id: id!, name: name! };
      });
    expect(seeded[0]!.name).toBe('co-work1');
    const listed = JSON.parse((await capsem(['list', '--json'])).stdout) as { id: string }[];
    expect(listed.map((s) => s.id).sort()).toEqual(seeded.map((s) => s.id).sort());
    const check = await capsem(['check', 'co-work1']);
    expect(check.code, check.stderr).toBe(0);
    expect(check.stdout).toContain('Findings: none');
    const sql = await capsem(['sql', 'co-work1', 'SELECT count(*) AS n FROM net_events', '--json']);
    expect((JSON.parse(sql.stdout) as { n: number }[])[0]!.n).toBeGreaterThan(0);
    const rename = await capsem(['rename', 'co-work1', 'mine']);
    expect(rename.stdout.trim()).toBe(`renamed ${seeded[0]!.id} from co-work1 to mine`);
  }, 120_000);

  it("exports to a relative path, which lands in the user's folder, imports it from there, and vacuums the import", async () => {
    const exported = await capsem(['export', 'mine', '-o', 'mine.capsem']);
    expect(exported.code, exported.stderr).toBe(0);
    expect(exported.stdout).toContain(`to ${join(USER_FOLDER, 'mine.capsem')}:`);
    expect(existsSync(join(USER_FOLDER, 'mine.capsem'))).toBe(true);
    const imported = await capsem(['import', 'mine.capsem']);
    expect(imported.code, imported.stderr).toBe(0);
    const importedId = /^Imported session (\S+) \(mine-2\) from archive /m.exec(imported.stdout)?.[1];
    expect(importedId, imported.stdout).toBeDefined();
    const vacuumed = await capsem(['vacuum', '--older-than', '0d']);
    expect(vacuumed.code, vacuumed.stderr).toBe(0);
    expect(vacuumed.stdout).toContain(`vacuumed ${importedId} (mine-2)`);
    expect(vacuumed.stdout).toMatch(/^1 session vacuumed/m);
  }, 120_000);

  it('sends a session to an OpenTelemetry endpoint and says what it sent', async () => {
    const receiver = await OtlpReceiver.start();
    try {
      const sent = await capsem(['otel', 'export', 'mine', '--endpoint', receiver.url]);
      expect(sent.code, sent.stderr).toBe(0);
      expect(receiver.spans.find((s) => s.parentSpanId === null)?.attributes['capsem.session.name']).toBe('mine');
      const status = await capsem(['otel', 'status', '--endpoint', receiver.url]);
      expect(status.stdout).toContain(`Sent: ${receiver.spans.length} spans`);
    } finally {
      await receiver.close();
    }
  }, 120_000);

  it("records a program's HTTPS request through the proxy", async () => {
    const program = `const r = await fetch('https://${HOST}/hello'); console.log(r.status, await r.text());`;
    const recorded = await capsem(['record', '--name', 'rec', '--', process.execPath, '--input-type=module', '-e', program], upstreamEnv);
    expect(recorded.code, recorded.stderr).toBe(0);
    expect(recorded.stdout).toBe('200 {"hello":"from upstream","path":"/hello"}\n');
    const rows = await capsem(['sql', 'rec', 'SELECT domain, path, status_code FROM net_events', '--json']);
    expect(JSON.parse(rows.stdout)).toEqual([{ domain: HOST, path: '/hello', status_code: 200 }]);
  }, 120_000);

  it('owner and doctor look at this CAPSEM_HOME', async () => {
    expect((await capsem(['owner'])).stdout).toBe('no owner running\n');
    const doctor = await capsem(['doctor']);
    expect(doctor.stdout).toMatch(new RegExp(`^OK\\s+owner\\s+nobody owns ${home.root}`, 'm'));
    expect(doctor.code, doctor.stdout).toBe(/^FAIL/m.test(doctor.stdout) ? 1 : 0);
    const keys = await capsem(['keys', 'list']);
    expect(keys.code, keys.stderr).toBe(0);
    expect(keys.stdout).toMatch(/anthropic/i);
  }, 120_000);

  it('api serves the sessions until SIGTERM', async () => {
    const api = started(['api', '--port', '0']);
    try {
      const url = await until("the API's address", () => /Capsem API: (http:\/\/127\.0\.0\.1:\d+)/.exec(api.output.stdout)?.[1], 30_000);
      const body = (await (await fetch(`${url}/v1/sessions`)).json()) as { sessions: { id: string; name: string | null }[] };
      expect(body.sessions.map((s) => s.name)).toEqual(expect.arrayContaining(['mine', 'rec', seeded[1]!.name]));
    } finally {
      api.child.kill('SIGTERM');
    }
    expect(await exitWithin(api.exited, 30_000)).toBe(0);
  }, 60_000);

  it('prints what a session changed in its workspace as a patch, and reverts a file of it', async () => {
    expect((await capsem(['dev', 'seed', '--sessions', '0', '--changes'])).code).toBe(0);
    const patch = await capsem(['diff', 'changes', 'notes.txt']);
    expect(patch.code, patch.stderr).toBe(0);
    expect(patch.stdout).toMatch(/^diff --git a\/notes.txt b\/notes.txt\nnew file mode 100644\n/);
    const reverted = await capsem(['revert', 'changes', 'notes.txt']);
    expect(reverted.code, reverted.stderr).toBe(0);
    expect(reverted.stdout).toBe('removed  "notes.txt"\n');
    expect((await capsem(['diff', 'changes', 'notes.txt'])).stdout).toBe('');
  }, 60_000);
});

describe.skipIf(noVm !== null)(`VM commands from a user's project folder${noVm ? ` (skipped: ${noVm})` : ''}`, () => {
  it('run writes into a named session, resume boots it again with the file there, owner names it, stop ends it', async () => {
    const run = await capsem([
      'run',
      '--image',
      'minimal',
      '--name',
      'anywhere',
      '--',
      'sh',
      '-c',
      'echo made-by-run > /workspace/made.txt; uname -s',
    ]);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toBe('Linux\n');

    const resume = started(['resume', 'anywhere']);
    try {
      resume.child.stdin.write('cat /workspace/made.txt\n');
      await until('the file in the resumed session', () => resume.output.stdout.includes('made-by-run'), 120_000);
      const owner = await capsem(['owner']);
      expect(owner.stdout).toMatch(/^command: capsem resume anywhere$/m);
      const stop = await capsem(['stop', 'anywhere']);
      expect(stop.stdout).toMatch(/^stopped [0-9a-f-]{36} \(anywhere\)\n$/);
      expect(await exitWithin(resume.exited, 30_000)).not.toBe('still running');
    } finally {
      resume.child.kill('SIGKILL');
    }
    const sessions = JSON.parse((await capsem(['list', '--json'])).stdout) as { name: string | null; status: string }[];
    expect(sessions.find((s) => s.name === 'anywhere')).toMatchObject({ status: 'stopped' });
  }, 240_000);

  it('shell boots a new VM and takes input piped in while it boots', async () => {
    const shell = started(['shell', '--image', 'minimal']);
    let code: Awaited<ReturnType<typeof exitWithin>>;
    try {
      shell.child.stdin.end('echo typed-ahead-$((6*7))\nexit 3\n');
      code = await exitWithin(shell.exited, 120_000);
    } finally {
      shell.child.kill('SIGKILL');
    }
    expect(code, shell.output.stdout).toBe(3);
    expect(shell.output.stdout).toContain('typed-ahead-42');
    const sessions = JSON.parse((await capsem(['list', '--json'])).stdout) as { status: string }[];
    expect(sessions.filter((s) => s.status === 'running')).toEqual([]);
  }, 180_000);
});

it('ran every command capsem --help lists', async () => {
  const overview = await capsem(['--help']);
  const listed = [...overview.stdout.matchAll(/^ {2}(\S+) {2,}/gm)].map((m) => m[1]!);
  expect(listed.length).toBeGreaterThan(10);
  const needVm = ['run', 'shell', 'resume', 'stop'];
  const expected = listed.filter((c) => noVm === null || !needVm.includes(c));
  expect(expected.filter((c) => !ran.has(c))).toEqual([]);
});
