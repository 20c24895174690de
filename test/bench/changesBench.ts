import Database from 'better-sqlite3';
import { createTwoFilesPatch } from 'diff';
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, realpathSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { ContentStore, contentHash, contentStorePath } from '../../electron/changes/contentStore.ts';
import { GuestActivity } from '../../electron/recording/guestActivity.ts';
import { SessionRecorder } from '../../electron/recording/sessionRecorder.ts';
import { capsemHome, ensurePrivateDir, type CapsemHome } from '../../electron/store/paths.ts';
import { openSessionDbForWriting } from '../../electron/store/sessionDb.ts';
import { SessionWriter } from '../../electron/store/sessionWriter.ts';
import { ChangeContents } from '../../electron/changes/changeContents.ts';
import { recordWorkspaceBaseline } from '../../electron/changes/workspaceBaseline.ts';
import { figure, median, percentile, printFigures, roundRatios, type Figure } from './report.ts';

// What the agent changed (#31), its three figures:
// - a workspace baseline of a 20,000-file source tree the bench makes, against `git add -A` of the
//   same tree into a fresh repository, timed in alternating rounds of the same run;
// - the store's growth over 1,000 small edits of a 100 KB file, and a second session making the
//   same edits (content-addressed: nothing new);
// - a change's latency, from the write on disk to its row committed and its diff computed from the
//   store's before and after contents.

const TRACKED_FILES = 20_000;
const BASELINE_ROUNDS = 3;
const EDITS = 1_000;
const EDITED_FILE_BYTES = 100 * 1024;
const LATENCY_WRITES = 30;

/** A seeded generator, so every run makes the same tree. */
function random(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
}

const WORDS = (
  'const let return function if else await async import export from value index result items config options error string number ' +
  'this new map filter reduce length push data path name user session request response handler props state render describe expect ' +
  'interface type readonly private public static class extends implements true false null undefined throw catch try finally for of'
).split(' ');

/** Lines that read like source code: a pool each file draws from, as a project repeats its idioms. */
function linePool(rnd: () => number, n: number): string[] {
  return Array.from({ length: n }, () => {
    const indent = '  '.repeat(Math.floor(rnd() * 4));
    const words = Array.from({ length: 2 + Math.floor(rnd() * 10) }, () => WORDS[Math.floor(rnd() * WORDS.length)]!);
    return `${indent}${words.join(' ')}${rnd() < 0.7 ? ';' : ' {'}`;
  });
}

function sourceText(rnd: () => number, pool: readonly string[], bytes: number): string {
  const lines: string[] = [];
  let size = 0;
  while (size < bytes) {
    const line = pool[Math.floor(rnd() * pool.length)]!;
    lines.push(line);
    size += line.length + 1;
  }
  return `${lines.join('\n')}\n`;
}

/** Source files sized as a project's are: most a few KB, a tail of large ones (a median near 2.5 KB). */
const sourceSize = (rnd: () => number): number => Math.min(200_000, Math.round(Math.exp(7.8 + 1.1 * (rnd() + rnd() + rnd() - 1.5) * 1.6)));

interface Tree {
  readonly root: string;
  readonly tracked: number;
  readonly ignored: number;
  readonly bytes: number;
}

/**
 * A source tree: packages of src/ and test/ folders, docs, some images and a few files over the
 * content cap, and what a .gitignore leaves out (dist/, coverage/, *.log, node_modules/).
 */
function makeTree(root: string): Tree {
  const rnd = random(31);
  const pool = linePool(rnd, 4000);
  let bytes = 0;
  let tracked = 0;
  let ignored = 0;
  const put = (rel: string, content: string | Buffer, isIgnored = false): void => {
    const full = join(root, rel);
    mkdirSync(dirname(full), { recursive: true });
    writeFileSync(full, content);
    if (isIgnored) ignored++;
    else {
      tracked++;
      bytes += typeof content === 'string' ? Buffer.byteLength(content) : content.length;
    }
  };
  put('.gitignore', 'dist/\ncoverage/\n*.log\nnode_modules/\n');
  put('README.md', sourceText(rnd, pool, 6000));
  put('package.json', '{ "name": "bench-tree", "private": true }\n');
  for (let i = 0; i < 4; i++) put(`assets/video-${i}.bin`, Buffer.alloc(3 << 20, i + 1));
  for (let i = 0; tracked < TRACKED_FILES; i++) {
    const pkg = `packages/pkg-${Math.floor(i / 400)}`;
    const r = rnd();
    if (r < 0.03) {
      // Compressed already, as an image is: random bytes.
      put(`${pkg}/assets/img-${i}.png`, randomBytes(5_000 + Math.floor(rnd() * 150_000)));
    } else if (r < 0.08) put(`${pkg}/docs/page-${i}.md`, sourceText(rnd, pool, sourceSize(rnd)));
    else if (r < 0.3) put(`${pkg}/test/mod-${Math.floor(i / 25)}/case-${i}.test.ts`, sourceText(rnd, pool, sourceSize(rnd)));
    else put(`${pkg}/src/mod-${Math.floor(i / 30)}/file-${i}.ts`, sourceText(rnd, pool, sourceSize(rnd)));
    if (i % 20 === 0) put(`${pkg}/dist/file-${i}.js`, sourceText(rnd, pool, 3000), true);
    if (i % 200 === 0) put(`${pkg}/build-${i}.log`, sourceText(rnd, pool, 2000), true);
    if (i % 10 === 0) put(`node_modules/dep-${Math.floor(i / 100)}/lib/f-${i}.js`, sourceText(rnd, pool, 2500), true);
  }
  return { root, tracked, ignored, bytes };
}

async function timed<T>(work: () => Promise<T> | T): Promise<[number, T]> {
  const started = performance.now();
  const value = await work();
  return [performance.now() - started, value];
}

/** A session's database and a store of its own: each round starts from an empty CAPSEM_HOME, as a first session does. */
function freshHome(under: string, name: string): { home: CapsemHome; dbPath: string } {
  const home = capsemHome({ CAPSEM_HOME: join(under, name) });
  ensurePrivateDir(home.root);
  const dbPath = join(home.root, 'session.db');
  openSessionDbForWriting(dbPath).close();
  return { home, dbPath };
}

const git = (cwd: string, args: readonly string[]): string =>
  execFileSync('git', ['-c', 'init.defaultBranch=main', '-c', 'core.autocrlf=false', ...args], {
    cwd,
    encoding: 'utf8',
    env: { ...process.env, GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null' },
    maxBuffer: 64 << 20,
  });

async function baselineFigures(scratch: string): Promise<Figure[]> {
  const tree = makeTree(join(scratch, 'tree'));
  console.log(
    `  made a tree of ${tree.tracked.toLocaleString('en')} files (${(tree.bytes / 2 ** 20).toFixed(0)} MiB) and ${tree.ignored.toLocaleString('en')} ignored ones`,
  );
  const ours: number[] = [];
  const gits: number[] = [];
  let files = 0;
  let gitFiles = 0;
  for (let round = 0; round < BASELINE_ROUNDS; round++) {
    const { home, dbPath } = freshHome(scratch, `home-${round}`);
    const store = ContentStore.open(home);
    const [ms, summary] = await timed(() => recordWorkspaceBaseline(dbPath, tree.root, store));
    store.close();
    ours.push(ms);
    files = summary.files;
    rmSync(home.root, { recursive: true, force: true });
    const [gitMs] = await timed(() => {
      git(tree.root, ['init', '-q']);
      git(tree.root, ['add', '-A']);
    });
    gits.push(gitMs);
    gitFiles = git(tree.root, ['ls-files', '-z']).split('\0').filter(Boolean).length;
    rmSync(join(tree.root, '.git'), { recursive: true, force: true });
  }
  const ratio = median(roundRatios(ours, gits));
  return [
    figure('baseline, ms (median)', `${median(ours).toFixed(0)} (${files.toLocaleString('en')} files)`, true, 'measured'),
    figure(
      'git init + add -A, ms (median)',
      `${median(gits).toFixed(0)} (${gitFiles.toLocaleString('en')} files)`,
      files === gitFiles,
      'the same files as the baseline',
    ),
    figure(
      'baseline / git add -A',
      `${ratio.toFixed(2)}x (rounds ${roundRatios(ours, gits)
        .map((r) => r.toFixed(2))
        .join(', ')})`,
      ratio <= 1.5,
      '<= 1.5x',
    ),
  ];
}

/** A 100 KB source file and 1,000 small edits of it (a line changed each time), written where a session reads them. */
async function growthFigures(scratch: string): Promise<Figure[]> {
  const rnd = random(7);
  const pool = linePool(rnd, 800);
  const lines = sourceText(rnd, pool, EDITED_FILE_BYTES).split('\n');
  const workspace = join(scratch, 'growth-workspace');
  mkdirSync(workspace);
  const versions: Buffer[] = [];
  for (let i = 0; i < EDITS; i++) {
    const at = Math.floor(rnd() * (lines.length - 1));
    lines[at] = `${lines[at]} // edit ${i}`;
    versions.push(Buffer.from(lines.join('\n')));
  }
  const { home } = freshHome(scratch, 'growth-home');
  const store = ContentStore.open(home);
  const root = realpathSync(workspace);
  const session = async (): Promise<void> => {
    const contents = new ChangeContents(root, store);
    for (const version of versions) {
      writeFileSync(join(workspace, 'app.ts'), version);
      await contents.read([{ action: 'modified', path: 'app.ts', size: version.length, is_dir: false, ts_ms: Date.now() }]);
    }
  };
  await session();
  const first = store.totals();
  await session();
  const second = store.totals();
  store.close();
  const distinct = new Map(versions.map((v) => [contentHash(v), v.length]));
  const distinctBytes = [...distinct.values()].reduce((a, b) => a + b, 0);
  const naive = EDITS * EDITED_FILE_BYTES;
  const fileBytes = statSync(contentStorePath(home)).size;
  const kb = (n: number): string => `${(n / 1024).toFixed(0)} KiB`;
  console.log(
    `  ${EDITS.toLocaleString('en')} edits: ${distinct.size.toLocaleString('en')} distinct versions, ${kb(distinctBytes)}; each edit stored ${kb(first.storedBytes / EDITS)}: versions are deflated whole, without deltas between them`,
  );
  return [
    figure(
      'store growth, 1,000 edits of 100 KB',
      `${kb(first.storedBytes)} = ${((100 * first.storedBytes) / naive).toFixed(1)}% of 1,000 x 100 KB`,
      true,
      'measured',
    ),
    figure(
      "  against the versions' distinct bytes",
      `${((100 * first.storedBytes) / distinctBytes).toFixed(1)}% (content.db on disk: ${kb(fileBytes)})`,
      first.storedBytes <= distinctBytes / 3,
      '<= 33%: source text deflates 3-5x',
    ),
    figure(
      'a second session, the same edits',
      `+${second.storedBytes - first.storedBytes} bytes, +${second.objects - first.objects} objects`,
      second.storedBytes === first.storedBytes && second.objects === first.objects,
      '+0: each content kept once',
    ),
  ];
}

/**
 * A change's way to the Files view, as far as it runs outside a VM: the file written, the change
 * read and its content kept, its row through GuestActivity and the recorder to the writer, committed,
 * seen by a reader, its before and after contents read from the store and diffed.
 */
async function latencyFigures(scratch: string): Promise<Figure[]> {
  const workspace = join(scratch, 'latency-workspace');
  mkdirSync(workspace);
  const root = realpathSync(workspace);
  const { home, dbPath } = freshHome(scratch, 'latency-home');
  const store = ContentStore.open(home);
  const writer = await SessionWriter.open(dbPath, { session_id: 'changes-bench' });
  const recorder = new SessionRecorder(writer, 1 << 20);
  const activity = new GuestActivity(recorder);
  const contents = new ChangeContents(root, store);
  const reader = new Database(dbPath, { readonly: true });
  const readerStore = ContentStore.open(home);
  const latest = reader.prepare("SELECT before_hash, after_hash FROM fs_events WHERE path = 'src/app.ts' ORDER BY seq DESC LIMIT 1");
  const rnd = random(11);
  const lines = sourceText(rnd, linePool(rnd, 500), EDITED_FILE_BYTES).split('\n');
  const times: number[] = [];
  try {
    mkdirSync(join(workspace, 'src'));
    for (let i = 0; i <= LATENCY_WRITES; i++) {
      lines[Math.floor(rnd() * lines.length)] += ` // edit ${i}`;
      const content = Buffer.from(lines.join('\n'));
      const started = performance.now();
      writeFileSync(join(workspace, 'src/app.ts'), content);
      activity.fs(
        await contents.read([{ action: 'modified', path: 'src/app.ts', size: content.length, is_dir: false, ts_ms: Date.now() }]),
      );
      const hash = contentHash(content);
      let row = latest.get() as { before_hash: string | null; after_hash: string | null } | undefined;
      while (row?.after_hash !== hash) {
        await sleep(2);
        row = latest.get() as typeof row;
      }
      const after = readerStore.get(row.after_hash)!;
      const before = row.before_hash ? readerStore.get(row.before_hash)! : Buffer.alloc(0);
      createTwoFilesPatch('a/src/app.ts', 'b/src/app.ts', before.toString('utf8'), after.toString('utf8'));
      // The first write has no before in this session: it warms the path, and is not counted.
      if (i > 0) times.push(performance.now() - started);
      await sleep(100);
    }
  } finally {
    reader.close();
    readerStore.close();
    await writer.close();
    store.close();
  }
  console.log(
    "  measured on the host: write on disk -> change read, content kept -> GuestActivity -> recorder -> row committed -> before/after from the store -> unified diff (the diff library; the read model adds its own step when merged). No VM here (no /dev/kvm): the guest agent's report of the write is not in it",
  );
  return [
    figure('change to diff, ms (median / p95)', `${median(times).toFixed(0)} / ${percentile(times, 95).toFixed(0)}`, true, 'measured'),
    figure(
      'change to diff, ms (max)',
      `${Math.max(...times).toFixed(0)} over ${times.length} writes`,
      Math.max(...times) <= 1000,
      '<= 1000',
    ),
  ];
}

export async function changesBench(): Promise<boolean> {
  const scratch = mkdtempSync(join(tmpdir(), 'capsem-bench-changes-'));
  try {
    const figures = [...(await baselineFigures(scratch)), ...(await growthFigures(scratch)), ...(await latencyFigures(scratch))];
    return printFigures('changes: workspace baseline, store growth, change latency', figures);
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}
