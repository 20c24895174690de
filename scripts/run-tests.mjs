// npm test's test step: vitest's projects (vitest.config.ts) as vitest processes, each one file at
// a time: the files that boot real VMs beside all the others but the browser tests, then the
// browser tests alone. One process with two workers could put two VM files together, whose guests
// then starve each other under TCG. Each line says which stream printed it; the run fails when any
// stream fails, and the browser tests run whatever the first two gave.
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const vitest = fileURLToPath(new URL('../node_modules/vitest/vitest.mjs', import.meta.url));
/** Streams in a phase run side by side; the phases run one after the other. */
const PHASES = [['vm', 'host'], ['e2e']];
const STREAMS = PHASES.flat();
const width = Math.max(...STREAMS.map((s) => s.length));

const started = [];

function run(project) {
  // Arguments name files or tests to run, which one stream may not have.
  const filters = process.argv.slice(2);
  const args = ['run', '--project', project, ...(filters.length > 0 ? ['--passWithNoTests', ...filters] : [])];
  const child = spawn(process.execPath, [vitest, ...args], {
    cwd: root,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, FORCE_COLOR: process.env.FORCE_COLOR ?? (process.stdout.isTTY ? '1' : '0') },
  });
  started.push(child);
  const label = `${project.padEnd(width)} │ `;
  for (const [from, to] of [
    [child.stdout, process.stdout],
    [child.stderr, process.stderr],
  ]) {
    createInterface({ input: from, crlfDelay: Infinity }).on('line', (line) => to.write(`${label}${line}\n`));
  }
  return new Promise((resolve) => {
    child.on('close', (code, signal) => resolve({ project, code: code ?? (signal ? 1 : 0), signal }));
    child.on('error', (err) => resolve({ project, code: 1, signal: null, err }));
  });
}

// A signal to this process reaches the running streams, and it waits for them to end.
let stopped = false;
for (const signal of ['SIGINT', 'SIGTERM'])
  process.on(signal, () => {
    stopped = true;
    started.forEach((child) => child.kill(signal));
  });
const results = [];
for (const phase of PHASES) {
  if (stopped) break;
  results.push(...(await Promise.all(phase.map(run))));
}
for (const { project, code, signal, err } of results) {
  const how = err ? `could not start: ${err.message}` : signal ? `killed by ${signal}` : code === 0 ? 'passed' : `failed (exit ${code})`;
  process.stdout.write(`tests: the ${project} stream ${how}\n`);
}
process.exitCode = results.some((r) => r.code !== 0) ? 1 : 0;
