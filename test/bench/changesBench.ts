import { execFileSync } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, realpathSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { ContentStore, contentHash, contentStorePath } from '../../electron/changes/contentStore.ts';
import { GuestActivity } from '../../electron/recording/guestActivity.ts';
import { SessionRecorder } from '../../electron/recording/sessionRecorder.ts';
import type { FileDiff } from '../../electron/contract/appContract.ts';
import { asSessionId, type SessionId } from '../../electron/contract/ids.ts';
import { capsemHome, ensurePrivateDir, sessionPaths, type CapsemHome } from '../../electron/store/paths.ts';
import { openSessionDbForWriting } from '../../electron/store/sessionDb.ts';
import { SessionWriter } from '../../electron/store/sessionWriter.ts';
import { ChangeContents } from '../../electron/recording/changeContents.ts';
import { recordWorkspaceBaseline } from '../../electron/changes/workspaceBaseline.ts';
import { imageBootPlan } from '../../electron/vm/image/imagePlan.ts';
import { vmUnavailable } from '../helpers/vmTestHome.ts';
import { figure, median, percentile, printFigures, roundRatios, type Figure } from './report.ts';
import { execTimed, withBenchVms } from './vmHarness.ts';
import { WindowDiffs, type ShownDiff } from './windowDiffs.ts';

// What the agent changed (#31), its three figures:
// - a workspace baseline of a 20,000-file source tree the bench makes, against `git add -A` of the
//   same tree into a fresh repository, timed in alternating rounds of the same run;
// - the store's growth over 1,000 small edits of a 100 KB file, and a second session making the
//   same edits (content-addressed: nothing new);
// - a change's latency to its diff as the window reads it (live watch, sessions.changes,
//   sessions.diff): on the host from the write on disk, and in a real VM, when one boots, from the
//   host sending the guest a `sed -i` (an upper bound: the exec's round trip is in it, and printed).

const TRACKED_FILES = 20_000;
const BASELINE_ROUNDS = 3;
const EDITS = 1_000;
const EDITED_FILE_BYTES = 100 * 1024;
const LATENCY_WRITES = 30;
const VM_WRITES = 30;
const VM_EXECS = 20;
const APP_TS = 'src/app.ts';
/** A change that has not reached the window by then is lost, not late. */
const CHANGE_TIMEOUT_MS = 10_000;

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
function freshHome(under: string, name: string): { home: CapsemHome; id: SessionId; dbPath: string } {
  const home = capsemHome({ CAPSEM_HOME: join(under, name) });
  const { id, dir, dbPath } = sessionPaths(home, asSessionId(randomUUID()));
  ensurePrivateDir(dir);
  openSessionDbForWriting(dbPath).close();
  return { home, id, dbPath };
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
    `  ${EDITS.toLocaleString('en')} edits: ${distinct.size.toLocaleString('en')} distinct versions, ${kb(distinctBytes)}; each edit stored ${kb(first.storedBytes / EDITS)}: a version keeps the chunks it does not share with the ones before`,
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
      first.storedBytes <= distinctBytes / 10,
      '<= 10%: deflate alone gives 17%; a version must cost its changed chunk, not itself',
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
 * and its diff read as the window reads it (WindowDiffs: the live watch, sessions.changes, sessions.diff).
 */
async function hostLatencyFigures(scratch: string): Promise<Figure[]> {
  const workspace = join(scratch, 'latency-workspace');
  mkdirSync(join(workspace, 'src'), { recursive: true });
  const root = realpathSync(workspace);
  const { home, id, dbPath } = freshHome(scratch, 'latency-home');
  const store = ContentStore.open(home);
  const writer = await SessionWriter.open(dbPath, { session_id: id });
  const recorder = new SessionRecorder(writer, 1 << 20);
  const activity = new GuestActivity(recorder);
  const contents = new ChangeContents(root, store);
  const window = new WindowDiffs(home, id);
  const rnd = random(11);
  const lines = sourceText(rnd, linePool(rnd, 500), EDITED_FILE_BYTES).split('\n');
  const times: number[] = [];
  let after = 0;
  try {
    for (let i = 0; i <= LATENCY_WRITES; i++) {
      const marker = `// edit ${i}`;
      lines[Math.floor(rnd() * lines.length)] += ` ${marker}`;
      const content = Buffer.from(lines.join('\n'));
      const started = performance.now();
      const shown = window.next(APP_TS, after, CHANGE_TIMEOUT_MS);
      writeFileSync(join(workspace, APP_TS), content);
      activity.fs(await contents.read([{ action: 'modified', path: APP_TS, size: content.length, is_dir: false, ts_ms: Date.now() }]));
      // The first write has no before in this session (no baseline here): the file added. It warms the path, and is not counted.
      after = shownEdit(await shown, marker, i === 0 ? 'added' : 'modified');
      if (i > 0) times.push(performance.now() - started);
      await sleep(100);
    }
  } finally {
    window.close();
    await writer.close();
    store.close();
  }
  console.log(
    '  on the host: write on disk -> change read, content kept -> GuestActivity -> recorder -> row committed -> live watch -> sessions.changes -> sessions.diff (WorkspaceChanges over its own connection)',
  );
  return [
    figure(
      'change to diff on the host, ms (median / p95)',
      `${median(times).toFixed(0)} / ${percentile(times, 95).toFixed(0)}`,
      true,
      'measured',
    ),
    figure(
      'change to diff on the host, ms (max)',
      `${Math.max(...times).toFixed(0)} over ${times.length} writes`,
      Math.max(...times) <= 1000,
      '<= 1000',
    ),
  ];
}

/** The seq of the change the window shows, after checking its diff is the edit: one file, `status`, the marker's line added. */
function shownEdit(shown: ShownDiff, marker: string, status: FileDiff['status'] = 'modified'): number {
  const [diff, ...more] = shown.diffs;
  const added = diff?.hunks.some((h) => h.lines.some((l) => l.startsWith('+') && l.endsWith(marker))) ?? false;
  if (more.length > 0 || diff?.path !== APP_TS || diff.status !== status || !added)
    throw new Error(`change ${shown.seq} does not show the edit "${marker}": ${JSON.stringify(shown.diffs).slice(0, 400)}`);
  return shown.seq;
}

/**
 * The same in a real VM (minimal image) sharing a workspace, baseline recorded at start: the host
 * sends `sed -i` of one line of a 100 KB file in /workspace, and the clock stops when the window's
 * diff of the change is there. The guest's watcher (100 ms quiet), its report, the host reading the
 * file and the row's way to the window are in it, and so is the exec round trip, timed alone too.
 */
async function vmLatencyFigures(scratch: string): Promise<Figure[]> {
  const unavailable = vmUnavailable();
  if (unavailable) {
    console.log(`  no VM figure: a VM cannot boot here (${unavailable}); the host figure above stands alone`);
    return [];
  }
  let figures: Figure[] = [];
  try {
    await withBenchVms('changes', async (vms) => {
      await vms.image('minimal');
      const workspace = join(scratch, 'vm-workspace');
      mkdirSync(join(workspace, 'src'), { recursive: true });
      const rnd = random(13);
      const lines = sourceText(rnd, linePool(rnd, 500), EDITED_FILE_BYTES).split('\n');
      writeFileSync(join(workspace, APP_TS), lines.join('\n'));
      const session = await vms.start(imageBootPlan(vms.home, 'minimal'), { projectFolder: realpathSync(workspace) });
      const window = new WindowDiffs(vms.home, session.id);
      const noop: number[] = [];
      const edits: number[] = [];
      const sedExecs: number[] = [];
      try {
        for (let i = 0; i < VM_EXECS + 5; i++) {
          const r = await execTimed(session, ['true']);
          if (r.code !== 0) throw new Error(`true in the guest exited ${r.code}: ${r.err}`);
          if (i >= 5) noop.push(r.ms);
        }
        let after = 0;
        for (let i = 0; i <= VM_WRITES; i++) {
          const marker = `// guest edit ${i}`;
          const line = 1 + Math.floor(rnd() * (lines.length - 1));
          const started = performance.now();
          const shown = window.next(APP_TS, after, CHANGE_TIMEOUT_MS).then((s) => ({ s, at: performance.now() }));
          const sed = await execTimed(session, ['sed', '-i', `${line}s|$| ${marker}|`, `/workspace/${APP_TS}`]);
          if (sed.code !== 0) throw new Error(`sed in the guest exited ${sed.code}: ${sed.err}`);
          const { s, at } = await shown;
          after = shownEdit(s, marker);
          // The first edit warms the path (the host's first read of the file), and is not counted.
          if (i > 0) {
            edits.push(at - started);
            sedExecs.push(sed.ms);
          }
          await sleep(300);
        }
      } finally {
        window.close();
        await session.stop();
      }
      const p95 = percentile(edits, 95);
      figures = [
        figure(
          `change to diff in a VM (${vms.accel.accel}), ms (median / p95)`,
          `${median(edits).toFixed(0)} / ${p95.toFixed(0)} over ${edits.length} edits`,
          p95 <= 1000,
          '<= 1000 p95, from the exec sent',
        ),
        figure(
          '  of which: exec `true` round trip, ms',
          `${median(noop).toFixed(0)} / ${percentile(noop, 95).toFixed(0)} (the sed exec: ${median(sedExecs).toFixed(0)} / ${percentile(sedExecs, 95).toFixed(0)})`,
          true,
          'context, median / p95',
        ),
      ];
      return true;
    });
  } catch (err) {
    console.log(
      `  no VM figure: the VM did not boot or run (${(err as Error).message.split('\n')[0]}); the host figure above stands alone`,
    );
    return [];
  }
  return figures;
}

export async function changesBench(): Promise<boolean> {
  const scratch = mkdtempSync(join(tmpdir(), 'capsem-bench-changes-'));
  try {
    const figures = [
      ...(await baselineFigures(scratch)),
      ...(await growthFigures(scratch)),
      ...(await hostLatencyFigures(scratch)),
      ...(await vmLatencyFigures(scratch)),
    ];
    return printFigures('changes: workspace baseline, store growth, change latency', figures);
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}
