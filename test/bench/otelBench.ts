import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { seedStorySession } from '../../electron/dev/seedStory.ts';
import { ExportLedger } from '../../electron/otel/exportLedger.ts';
import { LiveOtelExport } from '../../electron/otel/liveExport.ts';
import { capsemResource } from '../../electron/otel/otlpEncoding.ts';
import { tracesUrl } from '../../electron/otel/otlpSender.ts';
import type { OtelTarget } from '../../electron/otel/otelTarget.ts';
import { queueSession } from '../../electron/otel/queueSession.ts';
import { secretRedactor } from '../../electron/otel/secretRedaction.ts';
import { sessionFactsOf } from '../../electron/otel/sessionFacts.ts';
import { SendLoop } from '../../electron/otel/sendLoop.ts';
import { SessionEventStore } from '../../electron/sessions/sessionEventStore.ts';
import { readTimeline } from '../../electron/sessions/timeline.ts';
import { openMainDb } from '../../electron/store/mainDb.ts';
import { capsemHome, sessionPaths } from '../../electron/store/paths.ts';
import { getSession } from '../../electron/store/registry.ts';
import { figure, median, printFigures, roundRatios } from './report.ts';

// OpenTelemetry export of a 10,000-turn Claude Code session (electron/dev/seedStory.ts, recorded
// through the pipeline) to an OTLP/HTTP endpoint in a process of its own: spans per second from
// session.db to the endpoint, against reading the session's timeline alone in the same run; and
// the recorder's pace with the live export on against off, in alternating rounds of the same
// seeded session (it must keep 0.95 of its pace: the export must not cost the recorder).

const TURNS = 10_000;
const ROUNDS = 5;
const SINK = fileURLToPath(new URL('./otlpSinkChild.ts', import.meta.url));

async function startSink(): Promise<{ url: string; child: ChildProcess }> {
  const child = spawn(process.execPath, ['--import', 'tsx', SINK], { stdio: ['ignore', 'pipe', 'inherit'] });
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout!.once('data', (c: Buffer) => resolve(c.toString().trim()));
    child.once('exit', (code) => reject(new Error(`OTLP sink exited (${code})`)));
  });
  return { url, child };
}

export async function otelBench(): Promise<boolean> {
  const root = mkdtempSync(join(tmpdir(), 'capsem-otel-bench-'));
  const home = capsemHome({ CAPSEM_HOME: root });
  const sink = await startSink();
  try {
    const target: OtelTarget = { url: tracesUrl(sink.url), headers: {}, content: false, from: 'the command line' };
    // The recorder's pace, live export off and on in turn.
    const off: number[] = [];
    const on: number[] = [];
    let lastId = '';
    for (let round = 0; round < ROUNDS; round++)
      for (const live of [false, true]) {
        const exporter = live ? new LiveOtelExport(home, target, {}) : null;
        const started = performance.now();
        const record = await seedStorySession(home, {
          turns: TURNS,
          seed: 7,
          onRecording: (r) => exporter?.watch(sessionFactsOf(r), []),
        });
        const ms = performance.now() - started;
        (live ? on : off).push(ms);
        if (exporter) {
          const mainDb = openMainDb(home);
          const ended = getSession(mainDb, record.id)!;
          mainDb.close();
          await exporter.ended(sessionFactsOf(ended));
        }
        lastId = record.id;
        console.log(`  round ${round + 1}, live export ${live ? 'on ' : 'off'}: ${TURNS} turns recorded in ${(ms / 1000).toFixed(1)} s`);
      }
    // The recorder's speed with the export on over its speed with it off, round by round.
    const pace = median(roundRatios(off, on));
    const liveLedger = ExportLedger.open(home);
    const live = liveLedger.status(target.url.href);
    liveLedger.close();

    // Export of one whole session after the fact, to a fresh endpoint key so nothing counts as sent.
    const mainDb = openMainDb(home);
    const record = getSession(mainDb, lastId as never)!;
    mainDb.close();
    const store = SessionEventStore.open(record.id, sessionPaths(home, record.id).dbPath);
    const exportTarget = { ...target, url: new URL(`${sink.url}/bench/v1/traces`) };
    const ledger = ExportLedger.open(home);
    let readMs = Infinity;
    for (let i = 0; i < 3; i++) {
      const t = performance.now();
      readTimeline(store, true, Number.MAX_SAFE_INTEGER);
      readMs = Math.min(readMs, performance.now() - t);
    }
    const started = performance.now();
    const queued = queueSession(ledger, exportTarget, store, sessionFactsOf(record), secretRedactor([]), capsemResource('bench'));
    const queuedMs = performance.now() - started;
    const loop = new SendLoop(ledger, exportTarget.url, { headers: {} });
    await loop.drained(Date.now() + 120_000);
    await loop.stop();
    const exportMs = performance.now() - started;
    const sent = ledger.status(exportTarget.url.href);
    ledger.close();
    store.close();
    const spansPerSecond = sent.sentSpans / (exportMs / 1000);

    return printFigures(`otel: export of a ${TURNS.toLocaleString('en')}-turn session over OTLP/HTTP`, [
      figure(
        'export, session.db to the endpoint',
        `${Math.round(spansPerSecond).toLocaleString('en')} spans/s (${sent.sentSpans.toLocaleString('en')} spans, ${(exportMs / 1000).toFixed(2)} s; read+queue ${(queuedMs / 1000).toFixed(2)} s)`,
        queued.queued === sent.sentSpans && exportMs <= 4 * readMs + 2000,
        `every span sent; at most 4x the timeline read alone (${(readMs / 1000).toFixed(2)} s) + 2 s`,
      ),
      figure(
        'recording pace, live export on / off',
        `${pace.toFixed(3)}x (off ${(median(off) / 1000).toFixed(1)} s, on ${(median(on) / 1000).toFixed(1)} s; ${live.sentSpans.toLocaleString('en')} spans sent live)`,
        pace >= 0.95 && live.sentSpans > 0,
        '>= 0.95x',
      ),
    ]);
  } finally {
    sink.child.kill();
    rmSync(root, { recursive: true, force: true });
  }
}
