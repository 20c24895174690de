import Database from 'better-sqlite3';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isSameProcessAlive } from '../../electron/platform/processIdentity.ts';
import { ABANDONED_REASON } from '../../electron/store/abandonedSessions.ts';
import { call } from '../helpers/apiClient.ts';
import { json, startUpstream, upstreamEnv, type Upstream } from '../helpers/mockUpstreams.ts';
import { runCapsemAsync, spawnCapsem, USER_FOLDER } from '../helpers/runCapsem.ts';
import { sessionRows } from '../helpers/sessionRows.ts';
import { startedChildren } from '../helpers/startedChildren.ts';
import { tempHome } from '../helpers/tempHome.ts';
import { until } from '../helpers/until.ts';

// `capsem record` with a client looping requests, ended each way a process is ended. Told to stop
// (SIGTERM, SIGINT) it passes the signal on, waits for the client, and writes every row before it
// exits: the client's answers and the rows are equal. Killed (SIGKILL), it can write nothing more:
// the first command that looks shows the session crashed, ended at its last row, and only the
// rows of the writer's last batch are missing.

const HOST = 'api.loop.example';
const home = tempHome();
const upstreamHome = tempHome();
let upstream: Upstream;
let env: NodeJS.ProcessEnv;
const started = startedChildren();

// Sequential requests until told to stop: each answer is appended with the time it arrived, and a
// signal ends the loop after the request in flight, as a well-behaved program does.
const CLIENT = `
import { appendFileSync, writeFileSync } from 'node:fs';
const [host, answers] = process.argv.slice(2);
writeFileSync(answers + '.pid', String(process.pid));
let stop = false;
for (const signal of ['SIGTERM', 'SIGINT']) process.on(signal, () => (stop = true));
for (let i = 1; !stop; i++) {
  try {
    const res = await fetch('https://' + host + '/n/' + i);
    await res.text();
    appendFileSync(answers, i + ' ' + Date.now() + '\\n');
  } catch {
    process.exit(3);
  }
}
`;

beforeAll(async () => {
  upstream = await startUpstream(upstreamHome, [HOST], (req, _body, res) => json(res, 200, { path: req.url }));
  env = upstreamEnv(upstream, [HOST], upstreamHome.root);
  writeFileSync(join(USER_FOLDER, 'loop.mjs'), CLIENT);
}, 60_000);

afterAll(async () => {
  await upstream?.close();
  upstreamHome.remove();
  home.remove();
});

interface Answer {
  readonly n: number;
  readonly at: number;
}

function answersIn(file: string): Answer[] {
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .trim()
    .split('\n')
    .filter(Boolean)
    .map((line) => {
      const [n, at] = line.split(' ');
      return { n: Number(n), at: Number(at) };
    });
}

/** Starts `capsem record` on the loop and waits until the client has `answers` answers. */
async function loopUnderRecord(tag: string, answers = 150) {
  const file = join(USER_FOLDER, `answers-${tag}`);
  const capsem = spawnCapsem(home.root, ['record', '--name', tag, '--', process.execPath, 'loop.mjs', HOST, file], env);
  started.add(capsem);
  let stderr = '';
  capsem.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  capsem.stdout.resume();
  const exited = new Promise<number | null>((r) => capsem.once('exit', (code) => r(code)));
  await until(`${answers} answers`, () => answersIn(file).length >= answers);
  const id = /capsem record: session ([0-9a-f-]{36})/.exec(stderr)![1]!;
  const clientPid = Number(readFileSync(`${file}.pid`, 'utf8'));
  return { capsem, id, file, clientPid, exited, stderr: () => stderr };
}

/** The request numbers recorded in the session, in order. */
function recorded(id: string): number[] {
  return sessionRows<{ path: string }>(join(home.root, 'run/sessions', id, 'session.db'), 'SELECT path FROM net_events ORDER BY id').map(
    (r) => Number(r.path.slice('/n/'.length)),
  );
}

/** main.db's row as it is on disk, read without capsem (which would end an abandoned session as it opened main.db). */
function onDisk(id: string): { status: string; stopped_at: string | null } {
  const db = new Database(join(home.root, 'sessions/main.db'), { readonly: true });
  try {
    return db.prepare('SELECT status, stopped_at FROM sessions WHERE id = ?').get(id) as { status: string; stopped_at: string | null };
  } finally {
    db.close();
  }
}

function lastRowAt(id: string): string {
  return sessionRows<{ at: string }>(join(home.root, 'run/sessions', id, 'session.db'), 'SELECT max(timestamp) AS at FROM net_events')[0]!
    .at;
}

describe('capsem record told to stop writes every row before it exits', () => {
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    it(`${signal}: the client's answers and the session's rows are equal, and the session is stopped`, async () => {
      const run = await loopUnderRecord(signal.toLowerCase());
      run.capsem.kill(signal);
      const code = await run.exited;
      expect(code, run.stderr()).toBe(0);
      const answers = answersIn(run.file);
      expect(recorded(run.id)).toEqual(answers.map((a) => a.n));
      expect(answers.length).toBeGreaterThanOrEqual(150);
      const listed = JSON.parse((await runCapsemAsync(home.root, ['list', '--json', '-n', '0'])).stdout) as {
        id: string;
        status: string;
      }[];
      expect(listed.find((s) => s.id === run.id)).toMatchObject({ status: 'stopped' });
    }, 120_000);
  }
});

describe('capsem record killed (SIGKILL) leaves a session that reads crashed', () => {
  /** Kills capsem mid-loop and waits for the client to notice its proxy is gone. */
  async function killMidLoop(tag: string) {
    const run = await loopUnderRecord(tag);
    const killedAt = Date.now();
    run.capsem.kill('SIGKILL');
    await run.exited;
    await until('the client to find its proxy gone', () => !isSameProcessAlive(run.clientPid, null), 30_000);
    return { ...run, killedAt };
  }

  it('is shown crashed by the API already running, then by list and check, ended at its last row, missing only the last batch', async () => {
    const api = spawnCapsem(home.root, ['api', '--port', '0']);
    started.add(api);
    const url = await new Promise<string>((resolve) => {
      let out = '';
      api.stdout.on('data', (c: Buffer) => {
        out += c.toString();
        const line = /Capsem API: (\S+)\n/.exec(out);
        if (line) resolve(line[1]!);
      });
    });
    const run = await killMidLoop('killed');
    expect(onDisk(run.id).status).toBe('running');

    const listed = (await call(url, '/v1/sessions')).json<{ sessions: { id: string; status: string }[] }>();
    expect(listed.sessions.find((s) => s.id === run.id)).toMatchObject({ status: 'crashed' });
    const last = lastRowAt(run.id);
    expect(onDisk(run.id)).toEqual({ status: 'crashed', stopped_at: last });

    // Its duration no longer counts up: it ended at its last row.
    const list = async () =>
      (JSON.parse((await runCapsemAsync(home.root, ['list', '--json', '-n', '0'])).stdout) as Record<string, unknown>[]).find(
        (s) => s.id === run.id,
      )!;
    const first = await list();
    await new Promise((r) => setTimeout(r, 1100));
    const second = await list();
    expect(first).toMatchObject({ status: 'crashed', statusReason: ABANDONED_REASON, stoppedAt: last });
    expect(second.durationMs).toBe(first.durationMs);

    // What the client had answered and the session lacks is the tail of the loop, from the moment
    // before the kill: the writer's last batch (50 ms) and the one its thread was committing.
    const answers = answersIn(run.file);
    const rows = recorded(run.id);
    expect(rows).toEqual(answers.slice(0, rows.length).map((a) => a.n));
    const missing = answers.slice(rows.length);
    for (const a of missing) expect(run.killedAt - a.at).toBeLessThan(1000);
    // Rolled up into main.db as any ended session is.
    expect((first.totals as { requests: number }).requests).toBe(rows.length);

    const check = await runCapsemAsync(home.root, ['check', run.id.slice(0, 8)]);
    expect(check.stdout).toContain(`Session ${run.id} (killed), status crashed`);
    expect(check.stdout).toMatch(/note: the process recording it ended without ending it .*up to one batch/);
    expect(check.code, check.stdout).toBe(0);
  }, 180_000);

  it('is ended by the command that takes the killed process’s lock over, before anything else reads it', async () => {
    const run = await killMidLoop('taken-over');
    expect(onDisk(run.id).status).toBe('running');
    const next = await runCapsemAsync(home.root, ['record', '--', process.execPath, '-e', ''], env);
    expect(next.code, next.stderr).toBe(0);
    expect(next.stderr).toMatch(/took over .* which is no longer running/);
    expect(onDisk(run.id)).toEqual({ status: 'crashed', stopped_at: lastRowAt(run.id) });
  }, 180_000);
});
