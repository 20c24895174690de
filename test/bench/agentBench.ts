import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { findQemu, QemuBackend } from '../../electron/vm/qemuBackend.ts';
import { VmHost } from '../../electron/vm/vmHost.ts';
import { anthropicStream, json, sse, startUpstream } from '../helpers/mockUpstreams.ts';
import { runCapsemAsync, spawnCapsem } from '../helpers/runCapsem.ts';
import { tempHome } from '../helpers/tempHome.ts';
import { screenText, until } from '../helpers/terminalText.ts';
import { agentImageUnavailable, guestRun, vmTestHome } from '../helpers/vmTestHome.ts';
import { figure, median, printFigures } from './report.ts';

// Start to Claude Code's prompt on screen (`capsem run --agent claude`, the agent image cached),
// against what it cannot beat, measured in the same run: a bare boot of the same image through
// the same CLI (`capsem run --image agent -- true`) plus Claude Code's own start (`claude
// --version`). The host has Node 20 and the image's Claude Code needs Node 22, so its start is
// timed inside the guest, on its first run after boot as the prompt's run has it. Beside them,
// warm exec round trips in a running agent VM.

const RUNS = 3;
const EXECS = 60;
const KEY = 'sk-ant-api03-capsem-bench-key-0123456789';
const NO_KEYS = { ANTHROPIC_API_KEY: '', OPENAI_API_KEY: '', GEMINI_API_KEY: '', GOOGLE_API_KEY: '' };
/** Claude Code's banner, then its input box's rule, drawn once it takes input. */
const PROMPT = /Claude Code[\s\S]*\/workspace[\s\S]*─{20}/;
const ms = (v: number): string => `${v.toFixed(0)} ms`;

function skip(reason: string): boolean {
  console.log(`\n== agent: skipped: ${reason}`);
  return true;
}

/** One `capsem run --agent claude`: milliseconds from its start to the prompt on screen; then /exit. */
async function toPrompt(home: string, env: NodeJS.ProcessEnv): Promise<number> {
  const t = performance.now();
  const child = spawnCapsem(home, ['run', '--agent', 'claude'], env);
  let raw = '';
  child.stdout.on('data', (c: Buffer) => (raw += c.toString()));
  let stderr = '';
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  const exited = new Promise<number | null>((r) => child.once('exit', r));
  try {
    await until("Claude Code's prompt", () => PROMPT.test(screenText(raw)), 300_000, () => `${screenText(raw)}\n--- stderr:\n${stderr}`);
    const took = performance.now() - t;
    child.stdin.write('/exit');
    await new Promise((r) => setTimeout(r, 500));
    child.stdin.write('\r');
    await exited;
    return took;
  } finally {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      await exited;
    }
  }
}

/** Milliseconds of one `capsem run --image agent -- ARGV`, failing on a non-zero exit. */
async function timedRun(home: string, env: NodeJS.ProcessEnv, argv: string[]): Promise<{ ms: number; stdout: string }> {
  const t = performance.now();
  const r = await runCapsemAsync(home, ['run', '--image', 'agent', '--', ...argv], env, { timeoutMs: 600_000 });
  if (r.code !== 0) throw new Error(`capsem run -- ${argv.join(' ')} exited ${r.code}: ${r.stderr.slice(-2000)}`);
  return { ms: performance.now() - t, stdout: r.stdout };
}

export async function agentBench(): Promise<boolean> {
  const unavailable = agentImageUnavailable();
  if (unavailable) return skip(unavailable);
  const home = vmTestHome();
  const upHome = tempHome();
  // Claude Code may ask its provider something at start: a local Anthropic upstream answers.
  const anthropic = await startUpstream(upHome, ['api.anthropic.com'], (req, body, res) => {
    if (!req.url?.startsWith('/v1/messages') || req.url.startsWith('/v1/messages/count_tokens')) return json(res, 404, { type: 'error', error: { type: 'not_found_error', message: 'not here' } });
    const model = (body as { model?: string } | null)?.model ?? 'claude-sonnet-4-6';
    sse(res, anthropicStream(model, 'Hello.', [], { input: 10, output: 2 }));
  });
  const caFile = join(home.root, 'upstream-ca.pem');
  writeFileSync(caFile, anthropic.caPem);
  const env = { ...NO_KEYS, ANTHROPIC_API_KEY: KEY, CAPSEM_RESOLVE: `api.anthropic.com:443=127.0.0.1:${anthropic.port}`, CAPSEM_UPSTREAM_CA_FILE: caFile };
  try {
    console.log('  agent image: building or finding it cached (untimed)...');
    await timedRun(home.root, env, ['true']);

    console.log(`  bare boot: ${RUNS} x capsem run --image agent -- true...`);
    const bare: number[] = [];
    for (let i = 0; i < RUNS; i++) bare.push((await timedRun(home.root, env, ['true'])).ms);

    console.log(`  claude --version in the guest, first run after boot, ${RUNS} boots...`);
    const version: number[] = [];
    const script = 'a=$(date +%s%N); claude --version >/dev/null 2>&1 || exit 3; b=$(date +%s%N); echo $(( (b - a) / 1000000 ))';
    for (let i = 0; i < RUNS; i++) version.push(Number((await timedRun(home.root, env, ['sh', '-c', script])).stdout.trim()));
    if (version.some((v) => !Number.isFinite(v))) throw new Error(`claude --version in the guest printed no time: ${version.join(', ')}`);

    console.log(`  start to Claude Code's prompt: ${RUNS} x capsem run --agent claude...`);
    const prompt: number[] = [];
    for (let i = 0; i < RUNS; i++) prompt.push(await toPrompt(home.root, env));

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

    const baseline = median(bare) + median(version);
    return printFigures(`agent: Claude Code in the agent image (${RUNS} runs each, medians)`, [
      figure('bare boot, capsem run --image agent -- true', ms(median(bare)), true, 'baseline'),
      figure('claude --version in the guest (no Node 22 on the host)', ms(median(version)), true, 'baseline'),
      figure("start to Claude Code's prompt", `${ms(median(prompt))} (${(median(prompt) / baseline).toFixed(2)}x)`, median(prompt) <= 1.5 * baseline, `<= 1.5 x ${ms(baseline)}`),
      figure('warm exec p50, true in the agent VM', ms(median(execs)), median(execs) < 50, '< 50 ms'),
    ]);
  } finally {
    await anthropic.close();
    upHome.remove();
    home.remove();
  }
}
