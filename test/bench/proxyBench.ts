import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import type { ServerResponse } from 'node:http';
import { createServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { Agent, ProxyAgent, request, type Dispatcher } from 'undici';
import { CertificateAuthority } from '../../electron/proxy/certificateAuthority.ts';
import { tempHome } from '../helpers/tempHome.ts';
import { coldFigures, coldResolve, serveSizedBody } from './proxyColdBench.ts';
import { cpuPer, interleavedRounds, writerQuiet, type CpuSpent, type DrivenPath } from './processCpu.ts';
import { figure, median, percentile, printFigures, roundRatios } from './report.ts';

// The recording proxy against direct requests to the same local upstream and against mockttp,
// all measured in this run. Our proxy records every exchange into a real session while measured.

const HOST = 'api.bench.test';
/** The proxy's own CPU (every thread, recording included) per small recorded request, with room for a loaded machine. */
const PROXY_CPU_PER_REQUEST_US = 400;
/**
 * Floors against the bare TLS relay measured in the same run (bareRelayChild.ts): what ending and
 * reopening TLS alone allows on this machine, so a slower or busier host moves both alike.
 */
const RELAY_RPS_FLOOR = 0.85;
/** One-second slices per path; a path is set against another by the median of the slices' ratios, as every other figure here. */
const THROUGHPUT_SLICES = 5;
const RELAY_BIG_FLOOR = 0.9;
const here = (f: string): string => fileURLToPath(new URL(f, import.meta.url));

function child(script: string, env: NodeJS.ProcessEnv): Promise<{ proc: ChildProcess; line: string }> {
  const proc = spawn(process.execPath, ['--import', 'tsx', here(script)], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  return new Promise((resolve, reject) => {
    proc.stdout!.once('data', (c: Buffer) => resolve({ proc, line: c.toString().trim() }));
    proc.once('exit', (code) => reject(new Error(`${script} exited (${code})`)));
  });
}

/** Resident memory now (VmRSS): the target is the proxy's size while it holds 200 streams, not its peak during the 10 MB transfers before. */
function residentMb(pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8')
    .split('\n')
    .find((l) => l.startsWith('VmRSS'));
  return Number(/(\d+)/.exec(line ?? '')?.[1] ?? 0) / 1024;
}

async function get(dispatcher: Dispatcher, origin: string, path: string): Promise<number> {
  const res = await request(`${origin}${path}`, { dispatcher });
  let n = 0;
  for await (const chunk of res.body) n += (chunk as Buffer).length;
  return n;
}

async function latencies(dispatcher: Dispatcher, origin: string, n: number): Promise<number[]> {
  for (let i = 0; i < 50; i++) await get(dispatcher, origin, '/small');
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    await get(dispatcher, origin, '/small');
    out.push(performance.now() - t);
  }
  return out;
}

interface Path extends DrivenPath {
  readonly dispatcher: Dispatcher;
  readonly origin: string;
}

interface Throughput {
  readonly rps: number;
  /** Requests/s in each one-second slice, to set against another path's in the same round. */
  readonly slices: readonly number[];
  /** CPU per request, in us. */
  readonly cpu: CpuSpent;
}

/**
 * Requests/s at a concurrency for each path, timed in interleaved one-second slices after an
 * untimed one: load on this shared machine drifts over seconds, and interleaving lets the drift
 * fall on every path alike.
 * The CPU each request costs is counted beside: on two cores, the client, the upstream and the
 * proxy share them, so requests/s follows the sum.
 */
async function throughputs(paths: readonly Path[], concurrency: number, slices: number): Promise<Throughput[]> {
  const slice = async (path: Path): Promise<number> => {
    const end = performance.now() + 1000;
    let n = 0;
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (performance.now() < end) {
          await get(path.dispatcher, path.origin, '/small');
          n += 1;
        }
      }),
    );
    return n;
  };
  // An untimed slice first: a path's first second compiles its code and read 0.3-0.6x its later ones.
  const { values, cpu } = await interleavedRounds(paths, slices, slice);
  return values.map((counts, i) => {
    const n = counts.reduce((a, b) => a + b, 0);
    return { rps: n / slices, slices: counts, cpu: cpuPer(cpu[i]!, n, 1000) };
  });
}

interface BigBody {
  readonly rate: number;
  /** Against direct. */
  readonly ratio: number;
  /** Each round's rate, to set against another path's in the same round. */
  readonly rates: readonly number[];
  /** CPU per transfer, in ms. */
  readonly cpu: CpuSpent;
}

/**
 * A 10 MB body through each path: 31 interleaved rounds (one transfer per path per round) after
 * three untimed transfers per path, which let each path's code warm up first. A path is set against
 * another by the median over rounds of its rate divided by the other's in the same round
 * (roundRatios): the machine's speed drifts by 2x between seconds, and a pair timed side by side
 * shares the drift. A transfer takes about 30 ms, so where the scheduler puts the client, the
 * proxy and the upstream swings one round's ratio between 0.3x and 2x: over 9 rounds the median
 * of ours against the bare relay read 0.62x and 1.20x in two quiet runs, over 21 rounds 0.93x and 0.99x.
 */
async function bigBodies(paths: readonly Path[]): Promise<BigBody[]> {
  const rounds = 31;
  const { values: rates, cpu } = await interleavedRounds(
    paths,
    rounds,
    async (path) => {
      const t = performance.now();
      const bytes = await get(path.dispatcher, path.origin, '/big');
      const rate = bytes / 1e6 / ((performance.now() - t) / 1000);
      // Untimed but counted: the checkpoint our writer runs once idle is this transfer's, not the next path's.
      if (path.pid !== undefined) await writerQuiet(path.pid);
      return rate;
    },
    { warmups: 3 },
  );
  return rates.map((r, i) => ({ rate: median(r), ratio: median(roundRatios(r, rates[0]!)), rates: r, cpu: cpuPer(cpu[i]!, rounds, 1) }));
}

export async function proxyBench(): Promise<boolean> {
  const upHome = tempHome();
  const proxyHome = tempHome();
  const procs: ChildProcess[] = [];
  try {
    const upCa = await CertificateAuthority.load(upHome);
    const leaf = await upCa.issueLeaf(HOST);
    const leafTimes: number[] = [];
    // Untimed first leaves: the X.509 code's first calls are compiled then, once per process.
    for (let i = 0; i < 10; i++) await upCa.issueLeaf(`warm-${i}.bench.test`);
    for (let i = 0; i < 50; i++) {
      const t = performance.now();
      await upCa.issueLeaf(`leaf-${i}.bench.test`);
      leafTimes.push(performance.now() - t);
    }
    const small = Buffer.from(JSON.stringify({ id: 'msg_1', content: 'x'.repeat(160) }));
    const chunk = Buffer.alloc(64 << 10, 0x61);
    const held: ServerResponse[] = [];
    const upstream = createServer({ cert: leaf.certPem + upCa.certPem, key: leaf.keyPem }, (req, res) => {
      if (serveSizedBody(req, res)) return;
      if (req.url === '/big') {
        res.writeHead(200, { 'content-type': 'application/octet-stream' });
        let sent = 0;
        const pump = (): void => {
          while (sent < 10 << 20) {
            sent += chunk.length;
            if (!res.write(chunk)) return void res.once('drain', pump);
          }
          res.end();
        };
        return pump();
      }
      if (req.url === '/stream') {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write('data: open\n\n');
        held.push(res);
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': small.length });
      res.end(small);
    });
    await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
    const upPort = (upstream.address() as AddressInfo).port;
    const caFile = `${upHome.root}/up-ca.pem`;
    writeFileSync(caFile, upCa.certPem);

    const proxyEnv = {
      CAPSEM_HOME: proxyHome.root,
      CAPSEM_RESOLVE: `${HOST}:443=127.0.0.1:${upPort},${coldResolve(upPort)}`,
      CAPSEM_UPSTREAM_CA_FILE: caFile,
    };
    const ours = await child('./proxyChild.ts', proxyEnv);
    procs.push(ours.proc);
    // After ours: it uses the CA ours made in the same home.
    const relay = await child('./bareRelayChild.ts', proxyEnv);
    procs.push(relay.proc);
    const unrecorded = await child('./unrecordedProxyChild.ts', proxyEnv);
    procs.push(unrecorded.proc);
    const mock = await child('./mockttpChild.ts', { BENCH_UPSTREAM: `127.0.0.1:${upPort}` });
    procs.push(mock.proc);
    const mockInfo = JSON.parse(mock.line) as { url: string; ca: string };

    const origin = `https://${HOST}`;
    const direct = new Agent({
      connect: { ca: upCa.certPem, servername: HOST, lookup: (_h, _o, cb) => cb(null, [{ address: '127.0.0.1', family: 4 }]) },
      connections: 16,
    });
    const directOrigin = `https://${HOST}:${upPort}`;
    const proxyCa = (await CertificateAuthority.load(proxyHome)).certPem;
    const viaOurs = new ProxyAgent({ uri: ours.line, requestTls: { ca: proxyCa }, connections: 16 });
    const viaRelay = new ProxyAgent({ uri: relay.line, requestTls: { ca: proxyCa }, connections: 16 });
    const viaUnrecorded = new ProxyAgent({ uri: unrecorded.line, requestTls: { ca: proxyCa }, connections: 16 });
    const viaMock = new ProxyAgent({ uri: mockInfo.url.replace(/^https:/, 'http:'), requestTls: { ca: mockInfo.ca }, connections: 16 });

    console.log('  latency (sequential small HTTPS GETs)...');
    const phase = <T>(name: string, p: Promise<T>): Promise<T> =>
      p.catch((err: Error) => {
        throw new Error(`${name}: ${err.message}`);
      });
    const dLat = await phase('direct', latencies(direct, directOrigin, 1000));
    const oLat = await phase('capsem proxy', latencies(viaOurs, origin, 1000));
    const mLat = await phase('mockttp', latencies(viaMock, origin, 1000));
    const paths: Path[] = [
      { dispatcher: direct, origin: directOrigin },
      { dispatcher: viaOurs, origin, pid: ours.proc.pid! },
      { dispatcher: viaMock, origin, pid: mock.proc.pid! },
      { dispatcher: viaRelay, origin, pid: relay.proc.pid! },
      { dispatcher: viaUnrecorded, origin, pid: unrecorded.proc.pid! },
    ];
    console.log('  throughput at concurrency 10...');
    const [dRun, oRun, mRun, rRun, uRun] = (await throughputs(paths, 10, THROUGHPUT_SLICES)) as [
      Throughput,
      Throughput,
      Throughput,
      Throughput,
      Throughput,
    ];
    const [dRps, oRps, mRps] = [dRun.rps, oRun.rps, mRun.rps];
    console.log('  10 MB streamed body...');
    const [dBig, oBig, mBig, rBig, uBig] = (await bigBodies(paths)) as [BigBody, BigBody, BigBody, BigBody, BigBody];
    console.log('  200 concurrent streams...');
    const streamAgent = new ProxyAgent({ uri: ours.line, requestTls: { ca: proxyCa }, connections: 256 });
    const streams = await Promise.all(Array.from({ length: 200 }, () => request(`${origin}/stream`, { dispatcher: streamAgent })));
    await new Promise((r) => setTimeout(r, 500));
    const streamRss = residentMb(ours.proc.pid!);
    for (const r of held) r.end('data: bye\n\n');
    await Promise.all(
      streams.map(async (s) => {
        for await (const _ of s.body) void _;
      }),
    );
    const cold = await coldFigures({
      upstream,
      upCa,
      upPort,
      proxyCa,
      ours: { url: ours.line, pid: ours.proc.pid! },
      relay: { url: relay.line, pid: relay.proc.pid! },
      unrecorded: { url: unrecorded.line, pid: unrecorded.proc.pid! },
      warmHost: HOST,
    });
    const added = (p: number): string =>
      `${(percentile(oLat, p) - percentile(dLat, p)).toFixed(2)} ms (mockttp ${(percentile(mLat, p) - percentile(dLat, p)).toFixed(2)} ms)`;
    const rpsRatios = roundRatios(oRun.slices, rRun.slices);
    const rpsToRelay = median(rpsRatios);
    const bigRatios = roundRatios(oBig.rates, rBig.rates);
    const bigToRelay = median(bigRatios);
    const ok = printFigures('proxy: small HTTPS requests, recording on, against direct and mockttp in the same run', [
      figure('direct p50 / p95', `${percentile(dLat, 50).toFixed(2)} / ${percentile(dLat, 95).toFixed(2)} ms`, true, 'baseline'),
      figure(
        'added latency p50',
        added(50),
        percentile(oLat, 50) - percentile(dLat, 50) <= percentile(mLat, 50) - percentile(dLat, 50),
        "<= mockttp's",
      ),
      figure('added latency p95', added(95), percentile(oLat, 95) - percentile(dLat, 95) <= 5, '<= +5 ms'),
      figure(
        'requests/s at concurrency 10',
        `${oRps.toFixed(0)} = ${rpsToRelay.toFixed(2)}x the bare TLS relay's ${rRun.rps.toFixed(0)}, middle half of slices ${percentile(rpsRatios, 25).toFixed(2)}-${percentile(rpsRatios, 75).toFixed(2)} (direct ${dRps.toFixed(0)}, mockttp ${mRps.toFixed(0)})`,
        rpsToRelay >= RELAY_RPS_FLOOR,
        `>= ${RELAY_RPS_FLOOR}x the bare relay`,
      ),
      figure(
        '  CPU per request, all processes',
        `direct ${dRun.cpu.bench.toFixed(0)} us (client and upstream); ours ${(oRun.cpu.bench + oRun.cpu.proxy).toFixed(0)} us = ${oRun.cpu.bench.toFixed(0)} client and upstream + ${oRun.cpu.proxy.toFixed(0)} proxy (main thread ${oRun.cpu.main.toFixed(0)}); bare relay ${rRun.cpu.proxy.toFixed(0)} proxy; mockttp ${(mRun.cpu.bench + mRun.cpu.proxy).toFixed(0)} us`,
        oRun.cpu.proxy <= PROXY_CPU_PER_REQUEST_US,
        `proxy <= ${PROXY_CPU_PER_REQUEST_US} us`,
      ),
      figure(
        '  ours with the recording off',
        `${uRun.rps.toFixed(0)} requests/s = ${median(roundRatios(uRun.slices, rRun.slices)).toFixed(2)}x the bare relay (${uRun.cpu.proxy.toFixed(0)} us proxy CPU each), 10 MB at ${median(roundRatios(uBig.rates, rBig.rates)).toFixed(2)}x the relay: the same proxy throwing each exchange away`,
        true,
        'context',
      ),
      figure(
        '10 MB streamed body',
        `${oBig.rate.toFixed(0)} MB/s = ${bigToRelay.toFixed(2)}x the bare TLS relay's ${rBig.rate.toFixed(0)}, middle half of rounds ${percentile(bigRatios, 25).toFixed(2)}-${percentile(bigRatios, 75).toFixed(2)} (${oBig.ratio.toFixed(2)}x direct; mockttp ${mBig.ratio.toFixed(2)}x direct)`,
        bigToRelay >= RELAY_BIG_FLOOR,
        `>= ${RELAY_BIG_FLOOR}x the bare relay`,
      ),
      figure(
        '  CPU per 10 MB transfer, all processes',
        `direct ${dBig.cpu.bench.toFixed(0)} ms; ours ${(oBig.cpu.bench + oBig.cpu.proxy).toFixed(0)} ms = ${oBig.cpu.bench.toFixed(0)} client and upstream + ${oBig.cpu.proxy.toFixed(0)} proxy (main thread ${oBig.cpu.main.toFixed(0)}, recording writer thread ${oBig.cpu.writer.toFixed(0)}, the rest ${(oBig.cpu.proxy - oBig.cpu.main - oBig.cpu.writer).toFixed(0)}); bare relay ${rBig.cpu.proxy.toFixed(0)} proxy`,
        true,
        'context',
      ),
      figure(
        '  bare TLS relay: no HTTP, no recording',
        `${rRun.rps.toFixed(0)} requests/s (${(rRun.cpu.bench + rRun.cpu.proxy).toFixed(0)} us CPU each), 10 MB at ${rBig.ratio.toFixed(2)}x direct: what ending and reopening TLS alone allows here`,
        true,
        'context',
      ),
      figure('proxy RSS with 200 open streams', `${streamRss.toFixed(0)} MiB`, streamRss < 300, '< 300 MiB'),
      figure(
        'new leaf certificate',
        `p50 ${percentile(leafTimes, 50).toFixed(1)} ms, p95 ${percentile(leafTimes, 95).toFixed(1)} ms`,
        percentile(leafTimes, 50) < 5,
        'p50 < 5 ms',
      ),
      ...cold,
    ]);
    await Promise.all([direct.close(), viaOurs.close(), viaMock.close(), viaRelay.close(), viaUnrecorded.close(), streamAgent.close()]);
    upstream.close();
    return ok;
  } finally {
    // Our proxy rolls its session up as it stops: removing its home before it exits fails that.
    const exited = procs.map((p) => new Promise((r) => (p.exitCode !== null || p.signalCode !== null ? r(null) : p.once('exit', r))));
    for (const p of procs) p.kill('SIGTERM');
    await Promise.race([Promise.all(exited), new Promise((r) => setTimeout(r, 30_000).unref())]);
    upHome.remove();
    proxyHome.remove();
  }
}
