import { existsSync, mkdirSync, readdirSync, readFileSync, realpathSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ContentStore } from '../../electron/changes/contentStore.ts';
import { runCapsemAsync, spawnCapsem, USER_FOLDER, type CliResult } from '../helpers/runCapsem.ts';
import { tempHome } from '../helpers/tempHome.ts';
import { agentImageUnavailable, vmTestHome, vmUnavailable } from '../helpers/vmTestHome.ts';

// `capsem run|shell --workspace DIR` as a user runs it from their own folder: the folder shared at
// /workspace with the files already in it, what the guest makes appearing there, fs_events paths
// relative to /workspace with the churn of node_modules/ and .git/ summarised, resume sharing the
// same folder again (and saying so when it has gone), and the folders refused before anything starts.

const noVm = vmUnavailable();
const noAgentImage = agentImageUnavailable();

type FsRow = { action: string; path: string; size: number | null; entries: number | null };

async function sql<T>(home: string, name: string, query: string): Promise<T[]> {
  const r = await runCapsemAsync(home, ['sql', name, query, '--json']);
  expect(r.code, r.stderr).toBe(0);
  return JSON.parse(r.stdout) as T[];
}

/** A project folder in the user's folder, with a file the user already had. */
function projectFolder(name: string): string {
  const dir = join(USER_FOLDER, name);
  mkdirSync(join(dir, 'notes'), { recursive: true });
  writeFileSync(join(dir, 'notes', 'had.txt'), 'written on the host\n');
  return dir;
}

describe('capsem run --workspace refuses a folder it must not share, before anything starts', () => {
  const home = tempHome();
  afterAll(() => home.remove());
  const aFile = join(USER_FOLDER, 'a-file.txt');
  writeFileSync(aFile, 'not a folder\n');

  it.each([
    [
      'a folder that does not exist',
      ['--workspace', 'no-such-project'],
      {},
      `the project folder ${join(USER_FOLDER, 'no-such-project')} does not exist; create it (mkdir -p ${join(USER_FOLDER, 'no-such-project')}) or name another folder`,
    ],
    [
      'a file',
      ['--workspace', 'a-file.txt'],
      {},
      `${aFile} is a file, not a folder; share the folder that holds it (${realpathSync(USER_FOLDER)})`,
    ],
    [
      '/',
      ['--workspace', '/'],
      {},
      "/ is the whole computer: every key, token and project in it would be open to the agent; share your project's folder instead, or add --yes-whole-home if you mean it",
    ],
    [
      'the home folder it is run from',
      ['--workspace', '.'],
      { HOME: USER_FOLDER },
      `${USER_FOLDER} is your whole home folder: every key, token and project in it would be open to the agent; share your project's folder instead, or add --yes-whole-home if you mean it`,
    ],
  ] as const)('refuses %s with one line saying what to do, exit 2, and no session', async (_what, args, env, message) => {
    for (const command of [
      ['run', '--image', 'minimal', ...args, '--', 'true'],
      ['shell', '--image', 'minimal', ...args],
    ]) {
      const r = await runCapsemAsync(home.root, command, env);
      expect(r.stderr).toBe(`capsem: ${message}\n`);
      expect(r.code).toBe(2);
      expect(r.stdout).toBe('');
    }
    const list = await runCapsemAsync(home.root, ['list', '--json']);
    expect(JSON.parse(list.stdout)).toEqual([]);
    expect(existsSync(home.sessionsRunDir) ? readdirSync(home.sessionsRunDir) : []).toEqual([]);
  });
});

describe.skipIf(noVm !== null)(`capsem run --workspace in a real VM, minimal image${noVm ? ` (skipped: ${noVm})` : ''}`, () => {
  const home = vmTestHome();
  const project = projectFolder('my-project');
  afterAll(() => {
    home.remove();
    rmSync(project, { recursive: true, force: true });
    rmSync(`${project}-moved`, { recursive: true, force: true });
  });

  it('shares the folder at /workspace: the guest reads and changes the files there, what it makes appears on the host, fs_events has it relative to /workspace and node_modules/ churn as a summary', async () => {
    const script = [
      'pwd',
      'cat notes/had.txt',
      'echo changed in the guest >> notes/had.txt',
      'mkdir out && echo made > out/new.txt',
      // An install's worth of files: one summary row, not 300.
      'mkdir -p node_modules/pkg/lib && i=0 && while [ $i -lt 300 ]; do echo x > node_modules/pkg/lib/f$i.js; i=$((i+1)); done',
      'sleep 1',
    ].join('; ');
    const r = await runCapsemAsync(home.root, [
      'run',
      '--image',
      'minimal',
      '--name',
      'proj1',
      '--workspace',
      'my-project',
      '--',
      'sh',
      '-c',
      script,
    ]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toBe('/workspace\nwritten on the host\n');
    expect(readFileSync(join(project, 'notes', 'had.txt'), 'utf8')).toBe('written on the host\nchanged in the guest\n');
    expect(readFileSync(join(project, 'out', 'new.txt'), 'utf8')).toBe('made\n');
    expect(readdirSync(join(project, 'node_modules', 'pkg', 'lib'))).toHaveLength(300);

    const own = await sql<FsRow>(
      home.root,
      'proj1',
      "SELECT action, path, size, entries FROM fs_events WHERE path NOT LIKE 'node_modules%' ORDER BY seq",
    );
    expect(own).toEqual([
      { action: 'modified', path: 'notes/had.txt', size: 41, entries: null },
      { action: 'created', path: 'out', size: expect.any(Number), entries: null },
      { action: 'created', path: 'out/new.txt', size: 5, entries: null },
    ]);
    // The folder as the session found it, and each change's content before and after, read on the host.
    expect(await sql(home.root, 'proj1', 'SELECT path, size FROM workspace_files')).toEqual([{ path: 'notes/had.txt', size: 20 }]);
    const versions = await sql<{ path: string; before_hash: string | null; after_hash: string | null }>(
      home.root,
      'proj1',
      "SELECT path, before_hash, after_hash FROM fs_events WHERE path IN ('notes/had.txt', 'out/new.txt') ORDER BY seq",
    );
    const store = ContentStore.open(home);
    try {
      const text = (hash: string | null) => (hash === null ? null : (store.get(hash)?.toString() ?? 'not kept'));
      expect(versions.map((v) => [v.path, text(v.before_hash), text(v.after_hash)])).toEqual([
        ['notes/had.txt', 'written on the host\n', 'written on the host\nchanged in the guest\n'],
        ['out/new.txt', null, 'made\n'],
      ]);
    } finally {
      store.close();
    }
    const churn = await sql<FsRow>(
      home.root,
      'proj1',
      "SELECT action, path, size, entries FROM fs_events WHERE path LIKE 'node_modules%' ORDER BY seq",
    );
    // One row per batch, and how the guest's writes fall into batches depends on the host's load
    // (CI once saw 6); one row per file would be 303.
    expect(churn.length).toBeLessThanOrEqual(10);
    // On a loaded host the guest's watcher may see a file's write apart from its creation: a
    // 'modified' summary then follows the 'created' one, still one row and not one per file.
    expect(
      churn.every((row) => row.path === 'node_modules/' && (row.action === 'created' || row.action === 'modified')),
      JSON.stringify(churn),
    ).toBe(true);
    const created = churn.filter((row) => row.action === 'created');
    // node_modules, pkg, lib and the 300 files.
    expect(created.reduce((n, row) => n + row.entries!, 0)).toBe(303);
    if (created.length === churn.length) expect(created.reduce((n, row) => n + row.size!, 0)).toBe(600);
    expect(await sql(home.root, 'proj1', "SELECT value FROM session_meta WHERE key = 'vm_workspace'")).toEqual([
      { value: realpathSync(project) },
    ]);
  }, 180_000);

  it('resume shares the same folder again; once it is gone, resume says so in one line and boots nothing', async () => {
    const resume = spawnCapsem(home.root, ['resume', 'proj1']);
    let stdout = '';
    resume.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    resume.stderr.resume();
    resume.stdin.end('cat /workspace/out/new.txt\necho again > /workspace/resumed.txt\nexit 5\n');
    const code = await new Promise<number | null>((r) => resume.once('exit', r));
    expect(code, stdout).toBe(5);
    expect(stdout).toContain('made');
    expect(readFileSync(join(project, 'resumed.txt'), 'utf8')).toBe('again\n');

    renameSync(project, `${project}-moved`);
    const gone: CliResult = await runCapsemAsync(home.root, ['resume', 'proj1']);
    expect(gone.stderr).toMatch(
      /^capsem: session [0-9a-f-]{36} \(proj1\) shared the project folder \S+my-project, which is gone; put the folder back there and resume again, or start a new session on another folder\n$/,
    );
    expect(gone.code).toBe(1);
    const sessions = JSON.parse((await runCapsemAsync(home.root, ['list', '--json'])).stdout) as { name: string; status: string }[];
    expect(sessions.map((s) => [s.name, s.status])).toEqual([['proj1', 'stopped']]);
    renameSync(`${project}-moved`, project);
  }, 180_000);
});

describe.skipIf(noAgentImage !== null)(
  `capsem run --workspace with git, agent image${noAgentImage ? ` (skipped: ${noAgentImage})` : ''}`,
  () => {
    const home = vmTestHome();
    const project = projectFolder('git-project');
    afterAll(() => {
      home.remove();
      rmSync(project, { recursive: true, force: true });
    });

    it("records git init and a commit as a few .git/ summary rows beside the user's own file", async () => {
      const script = [
        'git init -q',
        'echo "# readme" > README.md',
        'git add -A',
        'git -c user.name=t -c user.email=t@example.com commit -q -m first',
        'git log --format=%s',
        'sleep 1',
      ].join(' && ');
      const r = await runCapsemAsync(home.root, ['run', '--name', 'git1', '--workspace', 'git-project', '--', 'sh', '-c', script]);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toBe('first\n');
      expect(existsSync(join(project, '.git', 'HEAD'))).toBe(true);
      const rows = await sql<FsRow>(home.root, 'git1', 'SELECT action, path, size, entries FROM fs_events ORDER BY seq');
      expect(rows.filter((row) => !row.path.startsWith('.git'))).toEqual([
        { action: 'created', path: 'README.md', size: 9, entries: null },
      ]);
      const git = rows.filter((row) => row.path.startsWith('.git'));
      expect(git.every((row) => row.path === '.git/')).toBe(true);
      expect(git.length).toBeLessThanOrEqual(6);
      // The objects, refs, logs, hooks and config of a new repository: dozens of paths.
      expect(git.reduce((n, row) => n + row.entries!, 0)).toBeGreaterThan(20);
    }, 900_000);
  },
);
