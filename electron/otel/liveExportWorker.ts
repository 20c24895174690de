import { existsSync } from 'node:fs';
import { constants, setPriority } from 'node:os';
import { parentPort, workerData } from 'node:worker_threads';
import { SessionEventStore } from '../sessions/sessionEventStore.ts';
import { nameThisThread } from '../platform/threadName.ts';
import { capsemHome, sessionPaths } from '../store/paths.ts';
import { ExportLedger } from './exportLedger.ts';
import type { LiveExportMessage, LiveExportReport, LiveExportStart } from './liveExportProtocol.ts';
import { capsemResource } from './otlpEncoding.ts';
import { queueSession } from './queueSession.ts';
import { secretRedactor } from './secretRedaction.ts';
import { SendLoop } from './sendLoop.ts';
import type { SessionFacts } from './sessionSpans.ts';

// The live export's thread: it reads each watched session's database (read-only, beside the
// writer) when it has changed, queues the spans that have ended since, and sends the queue. A
// read of a long session takes a while, so reads are spaced by twenty times the last one's
// length (2 s at the least): the export's share of a core stays near 5 % however long the
// session, and the recorder on the main thread never waits for it.

/**
 * The thread takes the CPU the recording leaves: on Linux a thread's nice value is its own, and
 * setpriority on 0 sets the calling thread's, so this one runs at the lowest priority while the
 * proxy and the writer run at theirs.
 */
function stepAside(): void {
  try {
    setPriority(0, constants.priority.PRIORITY_LOW);
  } catch {
    // Not Linux, or not allowed: it runs at the process's priority, spaced by its reads' length.
  }
}
stepAside();
nameThisThread('capsem-otel');

const start = workerData as LiveExportStart;
const port = parentPort!;
const home = capsemHome({ CAPSEM_HOME: start.root });
const ledger = ExportLedger.open(home);
const url = new URL(start.url);
const target = { url, headers: start.headers, content: start.content, from: 'Settings' as const };
const resource = capsemResource(start.version);
const report = (r: LiveExportReport): void => port.postMessage(r);
const loop = new SendLoop(ledger, url, { headers: start.headers, onEvent: (event) => report({ type: 'send', event }) });

const MIN_INTERVAL_MS = 2_000;
const SHARE = 20;
const TICK_MS = 250;

interface Watched {
  facts: SessionFacts;
  store: SessionEventStore | null;
  version: number;
  nextAt: number;
  /** The session has ended: one more read (with its root span), then it is let go. */
  final: boolean;
}

const watched = new Map<string, Watched>();
let secrets = new Set(start.secrets);
let redact = secretRedactor([...secrets]);
let closing = false;

function read(w: Watched): void {
  if (w.store === null) {
    const { dbPath } = sessionPaths(home, w.facts.id as never);
    if (!existsSync(dbPath)) return;
    w.store = SessionEventStore.open(w.facts.id, dbPath);
  }
  const version = w.store.dataVersion();
  if (version === w.version && !w.final) return;
  const started = performance.now();
  try {
    const result = queueSession(ledger, target, w.store, w.facts, redact, resource);
    if (result.queued > 0) loop.kick();
    report({ type: 'queued', sessionId: w.facts.id, queued: result.queued, open: result.open });
  } catch (err) {
    report({ type: 'failed', sessionId: w.facts.id, reason: (err as Error).message });
  }
  w.version = version;
  w.nextAt = Date.now() + Math.max(MIN_INTERVAL_MS, SHARE * (performance.now() - started));
  if (w.final) {
    w.store.close();
    watched.delete(w.facts.id);
  }
}

const timer = setInterval(() => {
  const now = Date.now();
  for (const w of watched.values()) if (w.nextAt <= now) read(w);
}, TICK_MS);

async function close(drainMs: number): Promise<void> {
  closing = true;
  clearInterval(timer);
  for (const w of watched.values()) if (w.final) read(w);
  for (const w of watched.values()) w.store?.close();
  const empty = await loop.drained(Date.now() + drainMs);
  await loop.stop();
  const status = ledger.status(url.href);
  ledger.close();
  report({ type: 'closed', drained: empty, queuedSpans: status.queuedSpans });
  port.close();
}

port.on('message', (message: LiveExportMessage) => {
  if (closing) return;
  switch (message.type) {
    case 'watch': {
      const added = message.secrets.filter((s) => !secrets.has(s));
      if (added.length > 0) {
        secrets = new Set([...secrets, ...added]);
        redact = secretRedactor([...secrets]);
      }
      watched.set(message.facts.id, { facts: message.facts, store: null, version: -1, nextAt: Date.now() + MIN_INTERVAL_MS, final: false });
      break;
    }
    case 'ended': {
      const w = watched.get(message.facts.id);
      if (w) {
        w.facts = message.facts;
        w.final = true;
        read(w);
      }
      report({ type: 'ended', sessionId: message.facts.id });
      break;
    }
    case 'close':
      void close(message.drainMs);
      break;
  }
});
