// npm test's test step: vitest's two projects (vitest.config.ts), the files that boot real VMs and
// all the others, run side by side as two vitest processes, each one file at a time. One process
// with two workers could put two VM files together, whose guests then starve each other under TCG.
// Each line says which stream printed it; the run fails when either stream fails.
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const vitest = fileURLToPath(new URL('../node_modules/vitest/vitest.mjs', import.meta.url));
const STREAMS = ['vm', 'host'];
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

const runs = STREAMS.map(run);
// A signal to this process reaches both streams, and it waits for them to end.
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => started.forEach((child) => child.kill(signal)));
const results = await Promise.all(runs);
for (const { project, code, signal, err } of results) {
  const how = err ? `could not start: ${err.message}` : signal ? `killed by ${signal}` : code === 0 ? 'passed' : `failed (exit ${code})`;
  process.stdout.write(`tests: the ${project} stream ${how}\n`);
}
process.exitCode = results.some((r) => r.code !== 0) ? 1 : 0;
