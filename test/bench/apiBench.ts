import Database from 'better-sqlite3';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect, createServer, type AddressInfo, type Socket } from 'node:net';
import { fileURLToPath } from 'node:url';
import { peerOf } from '../../electron/platform/socketTable.ts';
import { DEFAULT_BODY_CAP } from '../../electron/proxy/exchange.ts';
import { SessionRecorder } from '../../electron/recording/sessionRecorder.ts';
import { SessionEventStore } from '../../electron/sessions/sessionEventStore.ts';
import { readTimeline } from '../../electron/sessions/timeline.ts';
import { seedSessions } from '../../electron/dev/seedSessions.ts';
import { openMainDb } from '../../electron/store/mainDb.ts';
import { capsemHome, sessionPaths, type CapsemHome } from '../../electron/store/paths.ts';
import { registerSession } from '../../electron/store/registry.ts';
import { writeRollup } from '../../electron/store/rollup.ts';
import { SessionWriter } from '../../electron/store/sessionWriter.ts';
import { call } from '../helpers/apiClient.ts';
import { recordFileChange } from '../helpers/sessionFixture.ts';
import { figure, median, printFigures } from './report.ts';

// The session events API against the same reads done as plain SQL in the same run, on a
// generated 10,000-event session holding over 100 MB of bodies.

const CHILD = fileURLToPath(new URL('./apiServerChild.ts', import.meta.url));

async function startServer(home: CapsemHome): Promise<{ url: string; child: ChildProcess }> {
  const child = spawn(process.execPath, ['--import', 'tsx', CHILD], {
    env: { ...process.env, CAPSEM_HOME: home.root },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout!.once('data', (c: Buffer) => resolve(c.toString().trim()));
    child.once('exit', (code) => reject(new Error(`API server exited (${code})`)));
  });
  return { url, child };
}

const kib = (line: string | undefined): number => Number(/(\d+) kB/.exec(line ?? '')?.[1] ?? 0) / 1024;
function memory(pid: number): { rss: number; peak: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8').split('\n');
  return { rss: kib(status.find((l) => l.startsWith('VmRSS'))), peak: kib(status.find((l) => l.startsWith('VmHWM'))) };
}

async function timed<T>(fn: () => Promise<T> | T): Promise<[number, T]> {
  const started = performance.now();
  const value = await fn();
  return [performance.now() - started, value];
}

/** Median of `runs` timed calls after one untimed warm-up call. */
async function medianMs(runs: number, fn: () => Promise<unknown> | unknown): Promise<number> {
  await fn();
  const times: number[] = [];
  for (let i = 0; i < runs; i++) times.push((await timed(fn))[0]);
  return median(times);
}

function thousandSessions(home: CapsemHome): void {
  const db = openMainDb(home);
  db.transaction(() => {
    for (let i = 0; i < 1000; i++) {
      const record = registerSession(db, { name: `bulk-${i}`, createdAt: new Date(Date.UTC(2026, 9, 1) + i * 60_000).toISOString() });
      writeRollup(
        db,
        record.id,
        {
          totals: {
            requests: 10,
            allowedRequests: 9,
            deniedRequests: 1,
            modelCalls: 3,
            inputTokens: 1000,
            outputTokens: 100,
            costUsd: 0.01,
            toolCalls: 4,
            mcpCalls: 1,
            fileEvents: 2,
            execCount: 0,
            events: 20,
          },
          activity: { lastEventAt: record.createdAt, inferenceHost: 'api.anthropic.com', agent: 'claude' },
          aiUsage: [],
          toolUsage: [],
          mcpUsage: [],
        },
        { status: 'stopped' },
      );
      const dir = sessionPaths(home, record.id).dir;
      mkdirSync(dir, { recursive: true });
      writeFileSync(join(dir, 'session.db'), '');
    }
  })();
  db.close();
}

/**
 * What the owner check costs one connection (socketTable.ts reads the kernel's whole table of TCP
 * sockets, or until the peer's row): the median over connections spread through the table, with
 * `connections` loopback pairs open in this process besides whatever the machine has.
 */
async function ownerCheckMs(connections: number): Promise<{ ms: number; rows: number }> {
  const accepted: Socket[] = [];
  const server = createServer((s) => accepted.push(s));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  const clients: Socket[] = [];
  try {
    for (let i = 0; i < connections; i++)
      clients.push(
        await new Promise<Socket>((resolve) => {
          const socket = connect(port, '127.0.0.1', () => resolve(socket));
        }),
      );
    while (accepted.length < connections) await new Promise((r) => setTimeout(r, 5));
    const rows = readFileSync('/proc/net/tcp', 'latin1').split('\n').length - 2;
    const times: number[] = [];
    for (let i = 0; i < 41; i++) {
      const s = accepted[(i * 7919) % connections]!;
      const [ms, peer] = await timed(() =>
        peerOf({ address: s.localAddress!, port: s.localPort! }, { address: s.remoteAddress!, port: s.remotePort! }),
      );
      if (peer.kind !== 'user') throw new Error(`the owner check lost a live connection: ${JSON.stringify(peer)}`);
      times.push(ms);
    }
    return { ms: median(times), rows };
  } finally {
    for (const c of [...clients, ...accepted]) c.destroy();
    server.close();
  }
}

export async function apiBench(): Promise<boolean> {
  const root = mkdtempSync(join(tmpdir(), 'capsem-bench-api-'));
  const home = capsemHome({ CAPSEM_HOME: join(root, 'big') });
  const listHome = capsemHome({ CAPSEM_HOME: join(root, 'many') });
  let server: { url: string; child: ChildProcess } | null = null;
  try {
    console.log('  generating a 10,000-event session with 100+ MB of bodies and a 6,000-event one...');
    const [big] = await seedSessions(home, { sessions: 1, events: 10_000, bodyBytes: 64 << 10, seed: 5 });
    const [medium] = await seedSessions(capsemHome({ CAPSEM_HOME: join(root, 'medium') }), { sessions: 1, events: 6_000, seed: 6 });
    thousandSessions(listHome);
    const bigDb = new Database(sessionPaths(home, big!.id).dbPath, { readonly: true });
    const bodyMb = (bigDb.prepare('SELECT sum(length(body)) AS n FROM event_body_blobs').get() as { n: number }).n / 1e6;

    server = await startServer(home);
    const pid = server.child.pid!;
    const idle = memory(pid);
    writeFileSync(`/proc/${pid}/clear_refs`, '5');
    const q = 'Retry Budget so the request';
    const [searchMs, searchReply] = await timed(() => call(server!.url, `/v1/sessions/${big!.id}/search?q=${encodeURIComponent(q)}`));
    const searchPeak = memory(pid).peak;
    const hits = searchReply.json<{ seqs: number[] }>().seqs.length;
    const [rawScanMs] = await timed(() =>
      bigDb.prepare('SELECT count(*) AS n FROM event_body_blobs WHERE instr(lower(CAST(body AS TEXT)), lower(?)) > 0').get(q),
    );
    const pageMs = await medianMs(9, () => call(server!.url, `/v1/sessions/${big!.id}?limit=2000&view=summary`));
    const rawPageMs = await medianMs(5, () => {
      for (const t of ['net_events', 'model_calls', 'tool_calls', 'tool_responses', 'fs_events'])
        bigDb.prepare(`SELECT * FROM ${t} ORDER BY seq DESC LIMIT 2000`).all();
    });
    server.child.kill('SIGTERM');

    const mediumPath = sessionPaths(capsemHome({ CAPSEM_HOME: join(root, 'medium') }), medium!.id).dbPath;
    server = await startServer(capsemHome({ CAPSEM_HOME: join(root, 'medium') }));
    // "Cold" means the cache, not the JIT: warm the code paths, then make the cache stale the way
    // a live session does, with one new event, before each timed request.
    await call(server.url, `/v1/sessions/${medium!.id}/timeline`);
    const writer = await SessionWriter.open(mediumPath);
    const recorder = new SessionRecorder(writer, DEFAULT_BODY_CAP);
    const coldTimes: number[] = [];
    let timelineEvents = 0;
    for (let i = 0; i < 7; i++) {
      recordFileChange({ recorder }, `bench-${i}.txt`, { action: 'modified' });
      await writer.flush();
      const [ms, reply] = await timed(() => call(server!.url, `/v1/sessions/${medium!.id}/timeline`));
      coldTimes.push(ms);
      timelineEvents = reply.json<{ lastSeq: number }>().lastSeq;
    }
    await writer.close();
    const coldHttpMs = median(coldTimes);
    const cachedMs = await medianMs(20, () => call(server!.url, `/v1/sessions/${medium!.id}/timeline`));
    server.child.kill('SIGTERM');
    const store = SessionEventStore.open(medium!.id, mediumPath);
    const coldComputeMs = await medianMs(10, () => readTimeline(store, true));
    store.close();
    const mediumDb = new Database(mediumPath, { readonly: true });
    const rawTimelineMs = await medianMs(10, () => {
      for (const t of ['net_events', 'model_calls', 'tool_calls', 'tool_responses'])
        mediumDb.prepare(`SELECT * FROM ${t} ORDER BY seq`).all();
    });
    mediumDb.close();

    server = await startServer(listHome);
    const listMs = await medianMs(9, () => call(server!.url, '/v1/sessions?archived=true'));
    const listCount = (await call(server.url, '/v1/sessions')).json<{ sessions: unknown[] }>().sessions.length;
    const check = await ownerCheckMs(1000);
    const mainDb = new Database(listHome.mainDbPath, { readonly: true });
    const rawListMs = await medianMs(5, () => mainDb.prepare('SELECT * FROM sessions ORDER BY created_at DESC').all());
    mainDb.close();
    bigDb.close();

    const ratio = (a: number, b: number): string => `${(a / b).toFixed(1)}x raw SQL`;
    return printFigures(
      `api: ${bodyMb.toFixed(0)} MB of bodies in a 10,000-event session; timeline over ${timelineEvents} events; ${listCount} sessions listed`,
      [
        figure(
          'search (one pass, keys and values)',
          `${searchMs.toFixed(0)} ms, ${hits} hits, ${ratio(searchMs, rawScanMs)}`,
          searchMs < 500 && bodyMb >= 100,
          '< 500 ms on >= 100 MB',
        ),
        figure(
          'search peak RSS (server process)',
          `${searchPeak.toFixed(0)} MiB (idle ${idle.rss.toFixed(0)} MiB)`,
          searchPeak < 150,
          '< 150 MiB',
        ),
        figure(
          'timeline cold (median of 7), over HTTP',
          `${coldHttpMs.toFixed(1)} ms (compute alone ${coldComputeMs.toFixed(1)} ms, ${ratio(coldComputeMs, rawTimelineMs)})`,
          coldHttpMs < 50,
          '< 50 ms',
        ),
        figure('timeline cached, over HTTP', `${cachedMs.toFixed(2)} ms`, cachedMs < 5, '< 5 ms'),
        figure('2,000-event summary page', `${pageMs.toFixed(1)} ms, ${ratio(pageMs, rawPageMs)}`, pageMs < 100, '< 100 ms'),
        figure(
          'list 1,000 sessions',
          `${listMs.toFixed(1)} ms, ${ratio(listMs, rawListMs)}`,
          listMs < 100 && listCount === 1000,
          '< 100 ms',
        ),
        figure(
          'owner check, one new connection',
          `${check.ms.toFixed(2)} ms with ${check.rows} TCP sockets open`,
          check.ms < 10 && check.rows >= 2000,
          '< 10 ms at >= 2,000 sockets',
        ),
      ],
    );
  } finally {
    server?.child.kill('SIGTERM');
    rmSync(root, { recursive: true, force: true });
  }
}
