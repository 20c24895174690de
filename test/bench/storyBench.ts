import Database from 'better-sqlite3';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { seedStorySession } from '../../electron/dev/seedStory.ts';
import { DEFAULT_BODY_CAP } from '../../electron/proxy/exchange.ts';
import { SessionRecorder } from '../../electron/recording/sessionRecorder.ts';
import { SessionEventStore } from '../../electron/sessions/sessionEventStore.ts';
import { readTimeline, type Timeline } from '../../electron/sessions/timeline.ts';
import { capsemHome, sessionPaths } from '../../electron/store/paths.ts';
import { SessionWriter } from '../../electron/store/sessionWriter.ts';
import { call } from '../helpers/apiClient.ts';
import { recordFileChange } from '../helpers/sessionFixture.ts';
import { figure, median, printFigures, roundRatios } from './report.ts';

// The timeline route (GET /v1/sessions/{id}/timeline) on a seeded 10,000-turn Claude Code session
// with subagents, background jobs and returns (electron/dev/seedStory.ts, recorded through the
// pipeline), cold and cached, against a plain SELECT of the same rows timed in the same rounds (as
// the api benchmark times its timeline: every column of every table the route reads), and beside
// it a SELECT of only the columns the route reads. Cold may cost at most three times the plain SELECT.

const TURNS = 10_000;
const ROUNDS = 9;
const CHILD = fileURLToPath(new URL('./apiServerChild.ts', import.meta.url));

/** The rows the timeline reads, whole. */
const PLAIN_SELECTS = [
  'SELECT * FROM net_events ORDER BY seq',
  'SELECT * FROM model_calls ORDER BY seq',
  'SELECT * FROM tool_calls ORDER BY seq',
  'SELECT * FROM story_marks ORDER BY id',
];

/** The same rows with only the columns the timeline reads, nothing computed. */
const COLUMN_SELECTS = [
  `SELECT seq, event_id, timestamp, domain, port, path, conn_type, status_code, duration_ms, ttfb_ms, decision, error_kind, trace_id,
     agent_id, parent_agent_id, side_call, conversation_hash, request_headers FROM net_events ORDER BY seq`,
  'SELECT seq, id, net_event_id, model, stop_reason FROM model_calls ORDER BY seq',
  'SELECT seq, timestamp, call_id, tool_name, arguments, model_call_id, duration_ms, origin FROM tool_calls ORDER BY seq',
  'SELECT net_event_id, kind, call_id, ref, label FROM story_marks ORDER BY id',
];

async function startServer(root: string): Promise<{ url: string; child: ChildProcess }> {
  const child = spawn(process.execPath, ['--import', 'tsx', CHILD], {
    env: { ...process.env, CAPSEM_HOME: root },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout!.once('data', (c: Buffer) => resolve(c.toString().trim()));
    child.once('exit', (code) => reject(new Error(`API server exited (${code})`)));
  });
  return { url, child };
}

async function timed<T>(fn: () => Promise<T> | T): Promise<[number, T]> {
  const started = performance.now();
  const value = await fn();
  return [performance.now() - started, value];
}

export async function storyBench(): Promise<boolean> {
  const root = mkdtempSync(join(tmpdir(), 'capsem-bench-story-'));
  const home = capsemHome({ CAPSEM_HOME: root });
  let server: { url: string; child: ChildProcess } | null = null;
  try {
    console.log(`  seeding a ${TURNS.toLocaleString('en')}-turn Claude Code session with subagents, jobs and returns...`);
    const [seedMs, session] = await timed(() => seedStorySession(home, { turns: TURNS, seed: 7 }));
    const dbPath = sessionPaths(home, session.id).dbPath;
    const plain = new Database(dbPath, { readonly: true });
    const rowCount = PLAIN_SELECTS.reduce((n, sql) => n + plain.prepare(sql).all().length, 0);
    const selecting = (selects: readonly string[]) => (): void => {
      for (const sql of selects) plain.prepare(sql).all();
    };
    const selectRows = selecting(PLAIN_SELECTS);
    const selectColumns = selecting(COLUMN_SELECTS);

    server = await startServer(root);
    const route = `/v1/sessions/${session.id}/timeline`;
    const first = (await call(server.url, route)).json<Timeline>();
    // "Cold" means the cache, not the JIT: each round makes the cache stale as a live session does,
    // with one new event, then asks the route, and reads the same rows plainly beside it.
    const writer = await SessionWriter.open(dbPath);
    const recorder = new SessionRecorder(writer, DEFAULT_BODY_CAP);
    const cold: number[] = [];
    const selects: number[] = [];
    const columns: number[] = [];
    let bytes = 0;
    for (let round = 0; round < ROUNDS; round++) {
      recordFileChange({ recorder }, `bench-${round}.txt`, { action: 'modified' });
      await writer.flush();
      const [routeMs, reply] = await timed(() => call(server!.url, route));
      bytes = reply.body.length;
      cold.push(routeMs);
      selects.push((await timed(selectRows))[0]);
      columns.push((await timed(selectColumns))[0]);
    }
    await writer.close();
    const cached: number[] = [];
    for (let round = 0; round < ROUNDS * 2; round++) cached.push((await timed(() => call(server!.url, route)))[0]);
    server.child.kill('SIGTERM');
    server = null;

    const store = SessionEventStore.open(session.id, dbPath);
    const compute: number[] = [];
    const computeSelects: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      compute.push((await timed(() => readTimeline(store, true)))[0]);
      computeSelects.push((await timed(selectRows))[0]);
    }
    store.close();
    plain.close();

    const coldRatio = median(roundRatios(cold, selects));
    const coldColumnsRatio = median(roundRatios(cold, columns));
    const computeRatio = median(roundRatios(compute, computeSelects));
    const cachedMs = median(cached);
    const selectMs = median(selects);
    const subagents = first.agents.length - 1;
    return printFigures(
      `story: a ${first.turns.length.toLocaleString('en')}-turn timeline (${subagents} subagents, ${first.tools.length} tools, ${first.jobs.length} jobs, ${first.returns.length} returns, ${first.hosts.length} hosts; ${(bytes / 1e6).toFixed(1)} MB), seeded in ${(seedMs / 1000).toFixed(0)} s`,
      [
        figure(
          'timeline cold, over HTTP (median of rounds)',
          `${median(cold).toFixed(0)} ms, ${coldRatio.toFixed(2)}x the plain SELECT (${coldColumnsRatio.toFixed(2)}x its columns alone)`,
          coldRatio <= 3 && subagents > 0 && first.jobs.length > 0 && first.returns.length > 0,
          '<= 3x the plain SELECT',
        ),
        figure(
          'timeline computed alone',
          `${median(compute).toFixed(0)} ms, ${computeRatio.toFixed(2)}x the plain SELECT`,
          computeRatio <= 3,
          '<= 3x',
        ),
        figure(
          'timeline cached, over HTTP',
          `${cachedMs.toFixed(1)} ms, ${(cachedMs / selectMs).toFixed(2)}x the plain SELECT`,
          cachedMs <= selectMs,
          '<= the plain SELECT',
        ),
        figure(
          'plain SELECT of the same rows',
          `${selectMs.toFixed(0)} ms, ${rowCount.toLocaleString('en')} rows of 4 tables (${median(columns).toFixed(0)} ms for the columns it reads)`,
          true,
          'the baseline',
        ),
      ],
    );
  } finally {
    server?.child.kill('SIGTERM');
    rmSync(root, { recursive: true, force: true });
  }
}
