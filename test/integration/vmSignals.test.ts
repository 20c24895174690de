import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { json, startUpstream, upstreamEnv, type Upstream } from '../helpers/mockUpstreams.ts';
import { runCapsemAsync, spawnCapsem } from '../helpers/runCapsem.ts';
import { sessionRows } from '../helpers/sessionRows.ts';
import { startedChildren } from '../helpers/startedChildren.ts';
import { tempHome } from '../helpers/tempHome.ts';
import { until } from '../helpers/until.ts';
import { agentImageUnavailable, vmTestHome } from '../helpers/vmTestHome.ts';

// A guest looping requests while the process that owns its VM is told to stop (SIGTERM, SIGINT):
// `capsem run` owning it, and browser mode owning it for a `capsem run` that went through it. The
// VM stops in order and every exchange that reached the upstream is a row, the session `stopped`.
// The guest prints each answer it got; those are the rows' first ones (the guest may be stopped
// between an answer and its print, so the last row can be one the guest never printed).

const noAgentImage = agentImageUnavailable();
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const HOST = 'api.guest-loop.example';
const LOOP = `i=0; while :; do i=$((i+1)); curl -sf -o /dev/null https://${HOST}/n/$i && echo "answer $i"; done`;

describe.skipIf(noAgentImage !== null)(
  `real VM, agent image: an owner told to stop writes every row first${noAgentImage ? ` (skipped: ${noAgentImage})` : ''}`,
  () => {
    const home = vmTestHome();
    const upstreamHome = tempHome();
    let upstream: Upstream;
    let env: NodeJS.ProcessEnv;
    const started = startedChildren();

    beforeAll(async () => {
      upstream = await startUpstream(upstreamHome, [HOST], (req, _body, res) => json(res, 200, { path: req.url }));
      env = upstreamEnv(upstream, [HOST], upstreamHome.root);
    }, 60_000);

    afterAll(async () => {
      await upstream?.close();
      upstreamHome.remove();
      home.remove();
    });

    /** `capsem run` of the loop; resolves once the guest has printed `answers` answers. */
    async function loopUnderRun(name: string, answers = 20) {
      const run = spawnCapsem(home.root, ['run', '--image', 'agent', '--name', name, '--', 'sh', '-c', LOOP], env);
      started.add(run);
      let stdout = '';
      let stderr = '';
      run.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
      run.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
      const exited = new Promise<number | null>((r) => run.once('exit', (code) => r(code)));
      const printed = (): number[] => [...stdout.matchAll(/^answer (\d+)$/gm)].map((m) => Number(m[1]));
      await until(`${answers} answers from the guest`, () => printed().length >= answers, 600_000);
      const id = /capsem: session ([0-9a-f-]{36})/.exec(stderr)![1]!;
      return { run, id, exited, printed, stderr: () => stderr };
    }

    /** Every exchange the upstream saw is a row, the guest's answers come first among them, and the session is stopped. */
    async function expectEveryRow(id: string, printed: number[], upstreamBefore: number) {
      const rows = sessionRows<{ path: string }>(
        join(home.root, 'run/sessions', id, 'session.db'),
        'SELECT path FROM net_events ORDER BY id',
      ).map((r) => Number(r.path.slice('/n/'.length)));
      expect(rows.length).toBe(upstream.requests.length - upstreamBefore);
      expect(rows.slice(0, printed.length)).toEqual(printed);
      expect(rows.length - printed.length).toBeLessThanOrEqual(1);
      const listed = JSON.parse((await runCapsemAsync(home.root, ['list', '--json', '-n', '0'])).stdout) as {
        id: string;
        status: string;
      }[];
      expect(listed.find((s) => s.id === id)).toMatchObject({ status: 'stopped' });
    }

    for (const [signal, code] of [
      ['SIGTERM', 143],
      ['SIGINT', 130],
    ] as const) {
      it(`capsem run owning its VM, on ${signal}: stops it in order, every exchange a row`, async () => {
        const before = upstream.requests.length;
        const loop = await loopUnderRun(`run-${signal.toLowerCase()}`);
        loop.run.kill(signal);
        expect(await loop.exited, loop.stderr()).toBe(code);
        await expectEveryRow(loop.id, loop.printed(), before);
      }, 900_000);
    }

    for (const signal of ['SIGTERM', 'SIGINT'] as const) {
      it(`browser mode owning the VM of a capsem run, on ${signal}: stops it in order, every exchange a row`, async () => {
        const browser = spawn(process.execPath, ['--import', 'tsx', 'electron/app/browserMain.ts', '--reason', 'test'], {
          cwd: ROOT,
          env: { ...process.env, ...env, CAPSEM_HOME: home.root, CAPSEM_UI_PORT: '0' },
          stdio: ['ignore', 'pipe', 'pipe'],
        });
        started.add(browser);
        let browserErr = '';
        browser.stderr!.on('data', (c: Buffer) => (browserErr += c.toString()));
        let browserOut = '';
        browser.stdout!.on('data', (c: Buffer) => (browserOut += c.toString()));
        await until('browser mode to serve', () => browserOut.includes('Capsem UI: '), 120_000);
        const browserExit = new Promise<number | null>((r) => browser.once('exit', (code) => r(code)));
        const before = upstream.requests.length;
        const loop = await loopUnderRun(`browser-${signal.toLowerCase()}`);
        expect((await runCapsemAsync(home.root, ['owner', '--json'])).stdout).toContain('"kind":"app"');
        browser.kill(signal);
        expect(await browserExit, browserErr).toBe(0);
        await loop.exited;
        await expectEveryRow(loop.id, loop.printed(), before);
      }, 900_000);
    }
  },
);
