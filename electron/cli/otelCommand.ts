import { existsSync } from 'node:fs';
import { ExportLedger } from '../otel/exportLedger.ts';
import { hostSecrets } from '../otel/hostSecrets.ts';
import { capsemResource } from '../otel/otlpEncoding.ts';
import { otelTarget, parseOtlpHeaders, type OtelTarget } from '../otel/otelTarget.ts';
import { tracesUrl } from '../otel/otlpSender.ts';
import { queueSession } from '../otel/queueSession.ts';
import { secretRedactor } from '../otel/secretRedaction.ts';
import { sessionFactsOf } from '../otel/sessionFacts.ts';
import { SendLoop } from '../otel/sendLoop.ts';
import { capsemVersion } from '../platform/capsemVersion.ts';
import { SessionEventStore } from '../sessions/sessionEventStore.ts';
import { openMainDb } from '../store/mainDb.ts';
import { sessionPaths } from '../store/paths.ts';
import { allSessions, getSession, type SessionRecord } from '../store/registry.ts';
import { resolveSession } from '../store/resolver.ts';
import { parseCommandArgs, UsageError, type CliContext, type Command } from './context.ts';
import { progressLine } from './progressLine.ts';

const DEFAULT_WAIT_S = 60;

function targetOf(ctx: CliContext, values: { endpoint?: string; header?: string[]; content?: boolean }): OtelTarget {
  if (values.endpoint !== undefined)
    return {
      url: tracesUrl(values.endpoint),
      headers: parseOtlpHeaders((values.header ?? []).join(','), '--header'),
      content: values.content === true,
      from: 'the command line',
    };
  const target = otelTarget(ctx.home);
  if (target === null) throw new UsageError('no OTLP endpoint: set CAPSEM_OTLP_ENDPOINT, save one in Settings, or pass --endpoint URL');
  return values.content === true ? { ...target, content: true } : target;
}

function sessionsOf(ctx: CliContext, positionals: readonly string[], all: boolean, since: string | undefined): SessionRecord[] {
  const mainDb = openMainDb(ctx.home);
  try {
    if (all) {
      const from = since === undefined ? -Infinity : Date.parse(since);
      if (Number.isNaN(from)) throw new UsageError(`--since takes a date or time (2026-12-01, 2026-12-01T09:00Z), not "${since}"`);
      return allSessions(mainDb)
        .filter((s) => Date.parse(s.createdAt) >= from)
        .reverse();
    }
    if (since !== undefined) throw new UsageError('--since goes with --all');
    if (positionals.length === 0) throw new UsageError('otel export takes sessions by id or name, or --all (see capsem otel --help)');
    return positionals.map((p) => getSession(mainDb, resolveSession(ctx.home, mainDb, p))!);
  } finally {
    mainDb.close();
  }
}

async function exportSessions(ctx: CliContext, argv: readonly string[]): Promise<number> {
  const { values, positionals } = parseCommandArgs(otelCommand, argv, {
    all: { type: 'boolean' },
    since: { type: 'string' },
    endpoint: { type: 'string' },
    header: { type: 'string', multiple: true },
    content: { type: 'boolean' },
    wait: { type: 'string' },
  });
  const waitS = values.wait === undefined ? DEFAULT_WAIT_S : Number(values.wait);
  if (!Number.isFinite(waitS) || waitS < 0) throw new UsageError(`--wait takes seconds, not "${values.wait as string}"`);
  const target = targetOf(ctx, values as { endpoint?: string; header?: string[]; content?: boolean });
  const sessions = sessionsOf(ctx, positionals, values.all === true, values.since as string | undefined);
  const endpoint = target.url.href;
  const ledger = ExportLedger.open(ctx.home);
  const line = progressLine(process.stderr);
  try {
    const redact = secretRedactor(hostSecrets(ctx.home, process.env));
    const resource = capsemResource(capsemVersion());
    let queued = 0;
    let already = 0;
    let open = 0;
    const skipped: string[] = [];
    for (const [i, record] of sessions.entries()) {
      const label = record.name ? `${record.id} (${record.name})` : record.id;
      const { dbPath } = sessionPaths(ctx.home, record.id);
      if (!existsSync(dbPath)) {
        skipped.push(`${label}: its session.db is gone (vacuumed)`);
        continue;
      }
      line.update({ stage: 'read', message: `reading ${label}, ${i + 1} of ${sessions.length}`, fraction: i / sessions.length / 2 });
      const store = SessionEventStore.open(record.id, dbPath);
      try {
        const result = queueSession(ledger, target, store, sessionFactsOf(record), redact, resource);
        queued += result.queued;
        already += result.ended - result.queued;
        open += result.open;
      } finally {
        store.close();
      }
    }
    const before = ledger.status(endpoint);
    let lastReason = '';
    const loop = new SendLoop(ledger, target.url, {
      headers: target.headers,
      onEvent: (event) => {
        if (event.kind === 'retry') lastReason = `${event.reason}; trying again in ${(event.pauseMs / 1000).toFixed(1)} s`;
        const now = ledger.status(endpoint);
        const total = Math.max(1, before.queuedSpans);
        const done = before.queuedSpans - now.queuedSpans;
        line.update({
          stage: 'send',
          message: `sent ${done} of ${before.queuedSpans} spans to ${target.url.host}${event.kind === 'retry' ? ` (${lastReason})` : ''}`,
          fraction: 0.5 + done / total / 2,
        });
      },
    });
    await loop.drained(Date.now() + waitS * 1000);
    await loop.stop();
    line.finish();
    const after = ledger.status(endpoint);
    const sent = after.sentSpans - before.sentSpans;
    const dropped = after.droppedSpans - before.droppedSpans;
    ctx.out(
      [
        `Exported ${sessions.length - skipped.length} session${sessions.length - skipped.length === 1 ? '' : 's'} to ${endpoint} (from ${target.from}): ${queued} spans queued now, ${already} queued before, ${sent} sent in this run${open > 0 ? `; ${open} spans not ended yet go out once they end` : ''}`,
        ...skipped.map((s) => `Skipped ${s}`),
        ...(dropped > 0 ? after.drops.slice(-5).map((d) => `Dropped ${d.spans} spans of ${d.sessionId}: ${d.reason}`) : []),
      ].join('\n'),
    );
    if (after.queuedSpans > 0) {
      ctx.err(
        `capsem: ${after.queuedSpans} spans are still queued for ${endpoint} after ${waitS} s${lastReason ? ` (${lastReason})` : ''}; they are kept on disk and sent by the next export or the app`,
      );
      return 1;
    }
    return 0;
  } finally {
    line.finish();
    ledger.close();
  }
}

function status(ctx: CliContext, argv: readonly string[]): number {
  const { values } = parseCommandArgs(otelCommand, argv, { endpoint: { type: 'string' } });
  const target = targetOf(ctx, values as { endpoint?: string });
  const ledger = ExportLedger.open(ctx.home);
  try {
    const s = ledger.status(target.url.href);
    ctx.out(
      [
        `Endpoint: ${target.url.href} (from ${target.from})${target.content ? ', message contents included' : ''}`,
        `Sent: ${s.sentSpans} spans in ${s.sentRequests} requests`,
        `Queued: ${s.queuedSpans} spans in ${s.queuedBatches} requests (${(s.queuedBytes / 2 ** 20).toFixed(1)} MiB)`,
        `Dropped: ${s.droppedSpans} spans`,
        ...s.drops.slice(-10).map((d) => `  ${d.at} ${d.spans} spans of ${d.sessionId}: ${d.reason}`),
      ].join('\n'),
    );
    return 0;
  } finally {
    ledger.close();
  }
}

export const otelCommand: Command = {
  name: 'otel',
  summary: 'send sessions to an OpenTelemetry backend as GenAI traces (OTLP)',
  usage: `capsem otel export ID|NAME... | --all [--since DATE] [--endpoint URL] [--header K=V]... [--content] [--wait S]
capsem otel status [--endpoint URL]

export  sends each session as one trace: the session is the root span, each model call a chat
        span with the GenAI attributes (tokens, cost as capsem.cost_usd), each tool call an
        execute_tool span under it, a subagent under the tool call that spawned it, MCP calls,
        HTTP exchanges and denials, commands, and file changes as events. A span already sent
        (live, or by an earlier export) is not sent again. Keys and stand-ins are redacted.
status  what was sent, what is queued, and what was dropped and why

The endpoint is CAPSEM_OTLP_ENDPOINT (headers in CAPSEM_OTLP_HEADERS as key=value,key=value;
CAPSEM_OTLP_CONTENT=1 adds message contents), else the one saved in Settings, else --endpoint.
A bare endpoint gets /v1/traces (OTLP/HTTP, protobuf).

  --all      every session (with --since, those started since DATE)
  --header   a header for every request (an API key), repeatable
  --content  include message contents, tool arguments and results (off by default)
  --wait S   how long to keep trying a backend that does not answer (default ${DEFAULT_WAIT_S}); what is
             left stays queued on disk`,
  async run(ctx, argv) {
    const [sub, ...rest] = argv;
    if (sub === 'export') return exportSessions(ctx, rest);
    if (sub === 'status') return status(ctx, rest);
    if (sub === '--help' || sub === '-h') {
      ctx.out(this.usage);
      return 0;
    }
    throw new UsageError(`otel takes export or status${sub === undefined ? '' : `, not "${sub}"`} (see capsem otel --help)`);
  },
};
