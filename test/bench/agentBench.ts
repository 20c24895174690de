import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { imageCacheDir } from '../../electron/store/paths.ts';
import { agentTerminal } from '../../electron/vm/codingAgents.ts';
import { findQemu, QemuBackend } from '../../electron/vm/qemuBackend.ts';
import { VmHost } from '../../electron/vm/vmHost.ts';
import { agentBinary } from '../../electron/vm/agentBinary.ts';
import { ensureImage } from '../../electron/vm/image/guestImage.ts';
import { anthropicStream, json, sse, startUpstream } from '../helpers/mockUpstreams.ts';
import { runCapsemAsync, spawnCapsem } from '../helpers/runCapsem.ts';
import { tempHome } from '../helpers/tempHome.ts';
import { capsemTerminal, CLAUDE_PROMPT, screenText } from '../helpers/terminalText.ts';
import { cpuMs } from './processCpu.ts';
import { READ_AHEAD_PATHS, type PreparedVm } from '../../electron/vm/preparedVm.ts';
import { agentImageUnavailable, guestRun, vmTestHome } from '../helpers/vmTestHome.ts';
import { figure, median, printFigures } from './report.ts';

// Start to Claude Code's prompt on screen (`capsem run --agent claude`, the agent image cached),
// against what it cannot beat, measured in the same run: a bare boot of the same image through
// the same CLI (`capsem run --image agent -- true`) plus Claude Code's own start to its prompt,
// run in the same guest without Capsem's terminal (a pty of its own, the same settings and
// upstream), on its first run after boot as the prompt's run has it, and against its second run
// in the same guest: reading the agents' layer is to cost the first start nothing more; and the same
// two starts in a session that adopted a spare, whose read-ahead and warm-up (agentWarmUp.ts) are
// to make the first cost what the second does. Its `--version` is printed
// beside, on the host and in the guest: under TCG the guest runs the agent about ten times slower
// than the host, and `--version` returns before the agent loads what its prompt needs, so neither
// says what the agent itself takes to start here. Beside them, warm exec round trips in a running
// agent VM. Then, unless CAPSEM_BENCH_FIRST_SESSION=0, a new user's first session: a clean
// CAPSEM_HOME and HOME to Claude Code's prompt, the image build included, beside the build's stages.

const RUNS = 5;
/** The native Claude Code the agent image runs, in its agents' layer. */
const CLAUDE_BINARY = 'opt/capsem/agents/node_modules/@anthropic-ai/claude-code-linux-x64/claude';
const EXECS = 60;
const KEY = 'sk-ant-api03-capsem-bench-key-0123456789';
const NO_KEYS = { ANTHROPIC_API_KEY: '', OPENAI_API_KEY: '', GEMINI_API_KEY: '', GOOGLE_API_KEY: '' };
const ms = (v: number): string => `${v.toFixed(0)} ms`;
const mib = (bytes: number): string => `${(bytes / 2 ** 20).toFixed(0)} MiB`;
/** Half of the 7 minutes a first session took here before the image was built in two layers side by side. */
const FIRST_SESSION_CEILING_MS = 210_000;
/** The agents' first start after boot is to cost what a later one does, within the run-to-run noise here. */
const FIRST_START_CEILING = 1.15;
/** The agent image's read-only layers, in its folder. */
const LAYERS = ['rootfs.sqfs', 'agents.sqfs'];
/** How long the spare's idle memory and CPU are watched, once its read-ahead has ended. */
const IDLE_SAMPLE_MS = 10_000;
/** The target for start to the prompt with a spare: the agent's own warm start in the guest plus this. */
const SPARE_SLACK_MS = 1500;

/** The spare's processes' resident memory (MiB) and CPU (% of one core) over IDLE_SAMPLE_MS, its read-ahead and warm-up done. */
async function idleCost(spare: PreparedVm): Promise<{ rssMiB: number; cpuPercent: number; readAheadMs: number; warmUpMs: number }> {
  const readAhead = await spare.readAheadResult();
  if (readAhead.error) throw new Error(`the spare's read-ahead failed: ${readAhead.error}`);
  const warmUp = await spare.warmUpResult();
  if (!warmUp || warmUp.outcome !== 'prompt') throw new Error(`the spare's warm-up did not reach the prompt: ${JSON.stringify(warmUp)}`);
  await new Promise((r) => setTimeout(r, 2000));
  const cpu0 = spare.vm.pids.reduce((sum, pid) => sum + cpuMs(pid), 0);
  const t0 = performance.now();
  await new Promise((r) => setTimeout(r, IDLE_SAMPLE_MS));
  const cpu = spare.vm.pids.reduce((sum, pid) => sum + cpuMs(pid), 0) - cpu0;
  const elapsed = performance.now() - t0;
  const rssKiB = spare.vm.pids.reduce(
    (sum, pid) => sum + Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0),
    0,
  );
  return { rssMiB: rssKiB / 1024, cpuPercent: (cpu / elapsed) * 100, readAheadMs: readAhead.ms, warmUpMs: warmUp.ms };
}

/** From Start (VmHost.start with Claude Code, as the window calls it) to Claude Code's prompt on its terminal; then the session stops. */
async function spareToPrompt(host: VmHost): Promise<{ ms: number; adopted: boolean; adoptMs: number }> {
  const t = performance.now();
  const session = await host.start(
    { name: null, image: 'agent', command: ['claude'], agent: { name: 'claude', credentials: { ANTHROPIC_API_KEY: KEY } } },
    { status: () => {}, progress: () => {} },
  );
  try {
    const adopted = session.boot.vm_spare !== undefined;
    const { stream } = session.attachPty({ cols: 120, rows: 40 });
    let raw = '';
    stream.on('data', (c: Buffer) => (raw += c.toString('utf8')));
    const until = performance.now() + 300_000;
    while (!CLAUDE_PROMPT.test(screenText(raw))) {
      if (performance.now() > until)
        throw new Error(`no Claude Code prompt within 300 s; the screen showed:\n${screenText(raw).slice(-2000)}`);
      await new Promise((r) => setTimeout(r, 20));
    }
    return { ms: performance.now() - t, adopted, adoptMs: Number(session.boot.vm_adopt_ms ?? NaN) };
  } finally {
    await session.stop();
  }
}

function skip(reason: string): boolean {
  console.log(`\n== agent: skipped: ${reason}`);
  return true;
}

/**
 * One `capsem run --agent claude`: milliseconds from its start to the prompt on screen; then /exit.
 * `stages` gets the ✓ line of each image build stage the run finished, with the second it finished at.
 */
async function toPrompt(home: string, env: NodeJS.ProcessEnv, timeoutMs = 300_000, stages?: string[]): Promise<number> {
  const t = performance.now();
  const child = spawnCapsem(home, ['run', '--agent', 'claude'], env);
  child.stderr.on('data', (chunk: Buffer) => {
    for (const line of chunk.toString().split(/[\r\n]/)) {
      const done = /✓ (.+)$/.exec(line)?.[1];
      if (done) stages?.push(`${done} (done at ${((performance.now() - t) / 1000).toFixed(0)} s)`);
    }
  });
  const terminal = capsemTerminal(child);
  try {
    await terminal.waitFor("Claude Code's prompt", CLAUDE_PROMPT, timeoutMs);
    const took = performance.now() - t;
    await terminal.typeLine('/exit');
    await terminal.exited;
    return took;
  } finally {
    await terminal.close();
  }
}

/**
 * Runs the agent described in /workspace/agent.json (argv, env, settings files) on a pty of its
 * own in a fresh HOME (named by its argument), and prints the milliseconds until its prompt (Claude Code's banner, the
 * folder, its input box's rule) is drawn.
 */
const OWN_START = `
import fcntl, json, os, pty, select, struct, sys, termios, time
spec = json.load(open('/workspace/agent.json'))
home = '/tmp/own-start-home-' + sys.argv[1]
for f in spec['homeFiles']:
    path = os.path.join(home, f['path'])
    os.makedirs(os.path.dirname(path), exist_ok=True)
    open(path, 'w').write(f['content'])
env = dict(os.environ, **spec['env'], HOME=home, TERM='xterm-256color')
t = time.monotonic()
pid, fd = pty.fork()
if pid == 0:
    os.chdir('/workspace')
    os.execvpe(spec['argv'][0], spec['argv'], env)
fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack('HHHH', 24, 80, 0, 0))
screen = b''
while time.monotonic() - t < 300:
    if select.select([fd], [], [], 0.02)[0]:
        try:
            screen += os.read(fd, 65536)
        except OSError:
            break
    if b'Claude Code' in screen and b'/workspace' in screen and b'\\xe2\\x94\\x80' * 20 in screen:
        print(round((time.monotonic() - t) * 1000))
        sys.exit(0)
sys.exit(4)
`;

/** OWN_START twice in the guest, each in a HOME of its own: the agent's first and second start, one time a line. */
const TWO_STARTS = 'python3 /workspace/own-start.py 1 && python3 /workspace/own-start.py 2';

/** The first and second start's milliseconds TWO_STARTS printed; `where` says which run, when it printed none. */
function startTimes(out: string, where: string): [number, number] {
  const [first, second] = out.trim().split(/\s+/).map(Number);
  if (!Number.isFinite(first) || !Number.isFinite(second)) throw new Error(`Claude Code's own start ${where} printed no time: ${out}`);
  return [first!, second!];
}

/**
 * Claude Code's `--version` on the host, its binary taken out of the image's root (the package
 * runs without Node); the median of RUNS, or why it could not run.
 */
function claudeVersionOnHost(rootfs: string, scratch: string): string {
  const out = join(scratch, 'unsquashed');
  const extracted = spawnSync('unsquashfs', ['-q', '-n', '-d', out, rootfs, CLAUDE_BINARY], { encoding: 'utf8' });
  if (extracted.status !== 0)
    return `not run: unsquashfs failed: ${(extracted.stderr || extracted.error?.message || '').trim().slice(0, 200)}`;
  const times: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const t = performance.now();
    const r = spawnSync(join(out, CLAUDE_BINARY), ['--version'], { encoding: 'utf8' });
    if (r.status !== 0) return `not run: claude --version exited ${r.status}: ${(r.stderr || r.error?.message || '').trim().slice(0, 200)}`;
    times.push(performance.now() - t);
  }
  rmSync(out, { recursive: true, force: true });
  return ms(median(times));
}

/** Milliseconds of one `capsem run --image agent -- ARGV`, failing on a non-zero exit. */
async function timedRun(
  home: string,
  env: NodeJS.ProcessEnv,
  argv: string[],
  workspace?: string,
): Promise<{ ms: number; stdout: string; stderr: string }> {
  const t = performance.now();
  const r = await runCapsemAsync(home, ['run', '--image', 'agent', ...(workspace ? ['--workspace', workspace] : []), '--', ...argv], env, {
    timeoutMs: 600_000,
  });
  if (r.code !== 0) throw new Error(`capsem run -- ${argv.join(' ')} exited ${r.code}: ${r.stderr.slice(-2000)}`);
  return { ms: performance.now() - t, stdout: r.stdout, stderr: r.stderr };
}

/**
 * A new user's first session: a clean CAPSEM_HOME and HOME (no image cache, no npm cache) to Claude
 * Code's prompt, the agent image built on the way; with each build stage's span from the run's start.
 */
async function firstSession(env: NodeJS.ProcessEnv): Promise<{ ms: number; stages: string }> {
  const clean = tempHome();
  const userHome = mkdtempSync(join(tmpdir(), 'capsem-first-home-'));
  const stages: string[] = [];
  try {
    // A new user's image cache is empty: it lives under their HOME, not in the checkout's.
    const fresh = { ...env, HOME: userHome, CAPSEM_IMAGE_CACHE: join(userHome, '.cache', 'capsem', 'images') };
    const took = await toPrompt(clean.root, fresh, 900_000, stages);
    return {
      ms: took,
      stages: stages.join(', '),
    };
  } finally {
    clean.remove();
    rmSync(userHome, { recursive: true, force: true });
  }
}

export async function agentBench(): Promise<boolean> {
  const unavailable = agentImageUnavailable();
  if (unavailable) return skip(unavailable);
  const home = vmTestHome();
  const upHome = tempHome();
  // Claude Code may ask its provider something at start: a local Anthropic upstream answers.
  const anthropic = await startUpstream(upHome, ['api.anthropic.com'], (req, body, res) => {
    if (!req.url?.startsWith('/v1/messages') || req.url.startsWith('/v1/messages/count_tokens'))
      return json(res, 404, { type: 'error', error: { type: 'not_found_error', message: 'not here' } });
    const model = (body as { model?: string } | null)?.model ?? 'claude-sonnet-4-6';
    sse(res, anthropicStream(model, 'Hello.', [], { input: 10, output: 2 }));
  });
  const caFile = join(home.root, 'upstream-ca.pem');
  writeFileSync(caFile, anthropic.caPem);
  const folder = mkdtempSync(join(tmpdir(), 'capsem-agent-bench-'));
  const env = {
    ...NO_KEYS,
    ANTHROPIC_API_KEY: KEY,
    CAPSEM_RESOLVE: `api.anthropic.com:443=127.0.0.1:${anthropic.port}`,
    CAPSEM_UPSTREAM_CA_FILE: caFile,
  };
  try {
    console.log('  agent image: building or finding it cached (untimed)...');
    const image = /\b(agent-[0-9a-f]{16})\b(?![\s\S]*\bagent-[0-9a-f]{16}\b)/.exec((await timedRun(home.root, env, ['true'])).stderr)?.[1];
    if (!image) throw new Error('capsem run did not name the agent image it booted');
    // The image the spares boot: the one the runs above booted (the cache's fingerprint file is shared with other checkouts).
    const imageHash = (await ensureImage(home, 'agent', { agentBinary: agentBinary() })).hash;
    const hostVersion = claudeVersionOnHost(join(imageCacheDir(), image, 'agents.sqfs'), folder);
    const layers = LAYERS.map((name) => `${name} ${mib(statSync(join(imageCacheDir(), image, name)).size)}`).join(', ');

    console.log(`  bare boot: ${RUNS} x capsem run --image agent -- true...`);
    const bare: number[] = [];
    for (let i = 0; i < RUNS; i++) bare.push((await timedRun(home.root, env, ['true'])).ms);

    console.log(`  claude --version in the guest, first run after boot, ${RUNS} boots...`);
    const version: number[] = [];
    const script = 'a=$(date +%s%N); claude --version >/dev/null 2>&1 || exit 3; b=$(date +%s%N); echo $(( (b - a) / 1000000 ))';
    for (let i = 0; i < RUNS; i++) version.push(Number((await timedRun(home.root, env, ['sh', '-c', script])).stdout.trim()));
    if (version.some((v) => !Number.isFinite(v))) throw new Error(`claude --version in the guest printed no time: ${version.join(', ')}`);

    console.log(`  Claude Code's own start to its prompt in the guest, first and second run after boot, ${RUNS} boots...`);
    // Not the session's stand-in (each boot draws a new one): a key of the same shape, approved in the same settings.
    const agent = agentTerminal('claude', [], { ANTHROPIC_API_KEY: 'sk-ant-api03-own-start-0123456789abcdefghijklmnop' });
    writeFileSync(join(folder, 'agent.json'), JSON.stringify({ argv: agent.argv, env: agent.env, homeFiles: agent.homeFiles }));
    writeFileSync(join(folder, 'own-start.py'), OWN_START);
    /**
     * Claude Code's first and second start after boot, each in a fresh HOME of its own (so the second differs from
     * the first only in what the guest has already read and run), RUNS boots; `before` runs first in the guest.
     */
    const twoStarts = async (before: string | null): Promise<{ first: number[]; second: number[] }> => {
      const first: number[] = [];
      const second: number[] = [];
      for (let i = 0; i < RUNS; i++) {
        const out = (await timedRun(home.root, env, ['sh', '-c', before ? `${before} && ${TWO_STARTS}` : TWO_STARTS], folder)).stdout;
        const [a, b] = startTimes(out, 'after boot');
        first.push(a);
        second.push(b);
      }
      return { first, second };
    };
    const { first: own, second: again } = await twoStarts(null);

    console.log(
      `  the same two starts after reading the agents' files in the guest first (as a spare's read-ahead does), ${RUNS} boots...`,
    );
    // What the first start pays for reading the agents' layer is the difference this makes; what is left is not the layer's.
    const { first: readOwn, second: readAgain } = await twoStarts(`for f in ${READ_AHEAD_PATHS.join(' ')}; do cat "$f" > /dev/null; done`);

    console.log(`  start to Claude Code's prompt: ${RUNS} x capsem run --agent claude...`);
    const prompt: number[] = [];
    for (let i = 0; i < RUNS; i++) prompt.push(await toPrompt(home.root, env));

    console.log(`  start to Claude Code's prompt with the VM booted ahead: ${RUNS} x Start (VmHost) adopting a spare...`);
    const spareHost = new VmHost({
      home,
      backend: () => new QemuBackend(findQemu()!),
      hostEnv: { ...process.env, ...env },
      spareVm: () => true,
      spareImageHash: () => imageHash,
    });
    const withSpare: number[] = [];
    const adoptions: number[] = [];
    const adoptedOwn: number[] = [];
    const adoptedAgain: number[] = [];
    let idle: Awaited<ReturnType<typeof idleCost>> | null = null;
    /** The spare waiting once it has booted; each Start waits as a person would: for its read-ahead and warm-up to have ended. */
    const idleSpare = async (): Promise<PreparedVm> => {
      const deadline = performance.now() + 300_000;
      while (!spareHost.waitingSpare && performance.now() < deadline) await new Promise((r) => setTimeout(r, 100));
      const spare = spareHost.waitingSpare;
      if (!spare) throw new Error('no spare VM booted within 300 s');
      await spare.readAheadResult();
      await spare.warmUpResult();
      return spare;
    };
    try {
      for (let i = 0; i < RUNS; i++) {
        const spare = await idleSpare();
        // Measured once.
        if (i === 0) idle = await idleCost(spare);
        const run = await spareToPrompt(spareHost);
        if (!run.adopted) throw new Error('the Start did not adopt the waiting spare');
        withSpare.push(run.ms);
        adoptions.push(run.adoptMs);
      }
      // The agent's own first and second start in a session that adopted a spare: what its warm-up left is to make them cost the same.
      for (let i = 0; i < RUNS; i++) {
        await idleSpare();
        const session = await spareHost.start(
          { name: null, image: 'agent', command: ['bench'], workspace: { path: folder, wholeHome: false } },
          { status: () => {}, progress: () => {} },
        );
        try {
          if (session.boot.vm_spare === undefined) throw new Error('the Start did not adopt the waiting spare');
          const r = await guestRun(session, ['sh', '-c', TWO_STARTS]);
          if (r.code !== 0) throw new Error(`Claude Code's own start in an adopted spare exited ${r.code}: ${r.out} ${r.err}`);
          const [first, second] = startTimes(r.out, 'in an adopted spare');
          adoptedOwn.push(first);
          adoptedAgain.push(second);
        } finally {
          await session.stop();
        }
      }
    } finally {
      await spareHost.stopAll();
    }

    console.log(`  warm exec: ${EXECS} x \`true\` in a running agent VM...`);
    const host = new VmHost({ home, backend: () => new QemuBackend(findQemu()!), hostEnv: { ...process.env, ...env } });
    const session = await host.start({ name: null, image: 'agent', command: ['bench'] }, { status: () => {}, progress: () => {} });
    const execs: number[] = [];
    try {
      for (let i = 0; i < 10; i++) await guestRun(session, ['true']);
      for (let i = 0; i < EXECS; i++) {
        const t = performance.now();
        const r = await guestRun(session, ['true']);
        if (r.code !== 0) throw new Error(`true in the guest exited ${r.code}: ${r.err}`);
        execs.push(performance.now() - t);
      }
    } finally {
      await session.stop();
    }

    let first: ReturnType<typeof figure>;
    if (process.env.CAPSEM_BENCH_FIRST_SESSION === '0') {
      console.log('  first session: skipped (CAPSEM_BENCH_FIRST_SESSION=0)');
      first = figure('first session, clean CAPSEM_HOME to the prompt', 'skipped (CAPSEM_BENCH_FIRST_SESSION=0)', true, 'not run');
    } else {
      console.log('  first session: clean CAPSEM_HOME and HOME to the prompt, the image built on the way...');
      const run = await firstSession(env);
      first = figure(
        `first session, clean CAPSEM_HOME to the prompt (the build's stages: ${run.stages})`,
        `${(run.ms / 1000).toFixed(1)} s`,
        run.ms <= FIRST_SESSION_CEILING_MS,
        `<= ${FIRST_SESSION_CEILING_MS / 1000} s`,
      );
    }

    const baseline = median(bare) + median(own);
    const spareCeiling = median(again) + SPARE_SLACK_MS;
    return printFigures(`agent: Claude Code in the agent image (${RUNS} runs each, medians)`, [
      figure('bare boot, capsem run --image agent -- true', ms(median(bare)), true, 'baseline'),
      figure("Claude Code's own start to its prompt in the guest", ms(median(own)), true, 'baseline'),
      figure(
        "Claude Code's first start after boot against its second, no spare",
        `${ms(median(own))} / ${ms(median(again))} (${(median(own) / median(again)).toFixed(2)}x)`,
        true,
        'for comparison',
      ),
      figure(
        "  the same, the agents' files read in the guest first (untimed)",
        `${ms(median(readOwn))} / ${ms(median(readAgain))} (${(median(readOwn) / median(readAgain)).toFixed(2)}x)`,
        true,
        "ceiling: the emulator's first run of the agent's code, which only running it removes",
      ),
      figure(
        "  of the first start, reading the agents' layer (first start less the same after the read), against the second",
        `${ms(median(own) - median(readOwn))} (${((median(own) - median(readOwn)) / median(again)).toFixed(2)}x)`,
        median(own) - median(readOwn) <= (FIRST_START_CEILING - 1) * median(again),
        `<= ${(FIRST_START_CEILING - 1).toFixed(2)}x`,
      ),
      figure('claude --version in the guest', ms(median(version)), true, 'for comparison'),
      figure('claude --version on the host', hostVersion, true, 'for comparison'),
      figure(
        "start to Claude Code's prompt",
        `${ms(median(prompt))} (${(median(prompt) / baseline).toFixed(2)}x)`,
        median(prompt) <= 1.5 * baseline,
        `<= 1.5 x ${ms(baseline)}`,
      ),
      figure(
        "start to Claude Code's prompt with the VM booted ahead",
        ms(median(withSpare)),
        median(withSpare) <= spareCeiling,
        `<= ${ms(median(again))} + ${ms(SPARE_SLACK_MS)} = ${ms(spareCeiling)}`,
      ),
      figure('  of it, adopting the spare (folder bound in, config sent, the agent ready)', ms(median(adoptions)), true, 'for information'),
      figure(
        "Claude Code's first start in an adopted spare against its second",
        `${ms(median(adoptedOwn))} / ${ms(median(adoptedAgain))} (${(median(adoptedOwn) / median(adoptedAgain)).toFixed(2)}x)`,
        median(adoptedOwn) <= FIRST_START_CEILING * median(adoptedAgain),
        `<= ${FIRST_START_CEILING}x`,
      ),
      figure("the spare's read-ahead of the agents' files, in the guest", ms(idle!.readAheadMs), true, 'for information'),
      figure(
        "the spare's warm-up, Claude Code started once in a HOME of its own to its prompt",
        ms(idle!.warmUpMs),
        true,
        'for information',
      ),
      figure(`the idle spare's memory (QEMU + virtiofsd RSS)`, `${idle!.rssMiB.toFixed(0)} MiB`, true, 'printed'),
      figure(`the idle spare's CPU over ${IDLE_SAMPLE_MS / 1000} s`, `${idle!.cpuPercent.toFixed(1)} % of a core`, true, 'printed'),
      figure('warm exec p50, true in the agent VM', ms(median(execs)), median(execs) < 50, '< 50 ms'),
      figure("the agent image's layers", layers, true, 'for the record'),
      first,
    ]);
  } finally {
    await anthropic.close();
    upHome.remove();
    home.remove();
    rmSync(folder, { recursive: true, force: true });
  }
}
