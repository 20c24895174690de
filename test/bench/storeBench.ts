import Database from 'better-sqlite3';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openSessionDbForWriting, openSessionDbReadOnly } from '../../electron/store/sessionDb.ts';
import type { RowOf, SessionTable } from '../../electron/store/sessionSchema.ts';
import { EventIdMinter } from '../../electron/store/eventIds.ts';
import { layoutOf } from '../../electron/store/rowLayout.ts';
import { DEFAULT_WRITER_LIMITS, SessionWriter } from '../../electron/store/sessionWriter.ts';
import { figure, median, percentile, printFigures, roundRatios, rssSampler } from './report.ts';

// Events/s through the session writer for a realistic mix, against raw batched better-sqlite3
// inserts of the same rows into the same schema, measured in the same run.

// Short rounds, many of them: on a shared machine the load shifts within seconds, and the two
// paths of a round are compared only with each other. Odd, for a middle ratio; each round runs
// both paths, in alternating order so neither always goes first.
const EVENTS = 100_000;
const ROUNDS = 11;
const STORED = ['net_events', 'model_calls', 'tool_calls', 'event_body_blobs'] as const;
const BODY = Buffer.from(
  `{"model":"claude-sonnet-4-20250514","stream":true,"messages":[${'{"role":"user","content":"the agent reads the failing test then edits the retry budget"},'.repeat(60)}`,
).subarray(0, 4096);

type Mixed = { [T in SessionTable]: [T, RowOf<T>] }[SessionTable];

/** The mix per 10 events: 3 net_events, 2 model_calls, 3 tool_calls, 2 body blobs of 4 KiB. */
function mixedRow(i: number, lastEventId: string, eventId: () => string): Mixed {
  const ts = new Date(1_780_000_000_000 + i).toISOString();
  switch (i % 10) {
    case 0:
    case 3:
    case 6:
      return [
        'net_events',
        {
          event_id: eventId(),
          trace_id: 'a1b2c3d4e5f60718',
          turn_id: 'feedfacecafe0001',
          timestamp: ts,
          domain: 'api.anthropic.com',
          decision: 'allowed',
          process_name: 'claude',
          pid: 412,
          method: 'POST',
          path: '/v1/messages',
          status_code: 200,
          bytes_sent: 5123,
          bytes_received: 20480,
          duration_ms: 830,
          ttfb_ms: 210,
          matched_rule: 'default.allow-public',
          request_headers: '{"content-type":"application/json","x-api-key":"sha256:5e884898da280471"}',
          response_headers: '{"content-type":"text/event-stream"}',
          request_body_preview: '{"model":"claude-sonnet-4","messages":[{"role":"user","content":"fix the retry budget"}]}',
          response_body_preview: 'event: message_start\ndata: {"type":"message_start"}',
        },
      ];
    case 1:
    case 7:
      return [
        'model_calls',
        {
          event_id: eventId(),
          trace_id: 'a1b2c3d4e5f60718',
          turn_id: 'feedfacecafe0001',
          timestamp: ts,
          provider: 'anthropic',
          model: 'claude-sonnet-4-20250514',
          process_name: 'claude',
          pid: 412,
          method: 'POST',
          path: '/v1/messages',
          stream: 1,
          messages_count: 12,
          tools_count: 9,
          request_bytes: 5123,
          message_id: 'msg_01ABCDEF',
          status_code: 200,
          text_content: 'I will run the tests first and then edit the retry budget.',
          stop_reason: 'tool_use',
          input_tokens: 12000,
          output_tokens: 340,
          duration_ms: 830,
          response_bytes: 20480,
          estimated_cost_usd: 0.0411,
          usage_details: '{"cache_read":9000,"cache_write":120}',
        },
      ];
    case 2:
    case 5:
    case 8:
      return [
        'tool_calls',
        {
          event_id: eventId(),
          trace_id: 'a1b2c3d4e5f60718',
          turn_id: 'feedfacecafe0001',
          timestamp: ts,
          model_call_id: 1,
          provider: 'anthropic',
          status: 'requested',
          call_index: i % 3,
          call_id: `toolu_${i}`,
          tool_name: 'Bash',
          arguments: '{"command":"npm test"}',
          origin: 'native',
          decision: 'allowed',
        },
      ];
    default:
      return [
        'event_body_blobs',
        {
          event_id: lastEventId,
          source_table: 'net_events',
          direction: i % 10 === 4 ? 'request' : 'response',
          content_type: 'application/json',
          original_bytes: BODY.length,
          stored_bytes: BODY.length,
          truncated: 0,
          body_hash: 'e3b0c44298fc1c149afbf4c8996fb924',
          body: BODY,
          created_at: ts,
        },
      ];
  }
}

/**
 * The bench's rows, built once: both paths store the very same objects, and neither pays for
 * making them. Event ids come with the rows, so both files can be compared whole.
 */
function mixedRows(): Mixed[] {
  const ids = new EventIdMinter(0);
  const rows: Mixed[] = [];
  let lastEventId = '';
  for (let i = 0; i < EVENTS; i++) {
    const row = mixedRow(i, lastEventId, () => ids.mint());
    if (row[0] === 'net_events') lastEventId = row[1].event_id!;
    rows.push(row);
  }
  return rows;
}

async function throughWriter(path: string, rows: readonly Mixed[]): Promise<number> {
  const writer = await SessionWriter.open(path);
  const started = performance.now();
  for (const [table, row] of rows) {
    writer.append(table, row as never);
    if (writer.needsDrain) await writer.drained();
  }
  await writer.flush();
  const seconds = (performance.now() - started) / 1000;
  await writer.close();
  return rows.length / seconds;
}

/** The writer's cells for the same rows (its columns, defaults, ids and seqs), straight into better-sqlite3 in batches of its size. */
function rawInserts(path: string, rows: readonly Mixed[]): number {
  const db = openSessionDbForWriting(path);
  const statements = new Map<SessionTable, Database.Statement>();
  for (const table of STORED) {
    const { columns } = layoutOf(table);
    statements.set(table, db.prepare(`INSERT INTO ${table} (${columns.join(', ')}) VALUES (${columns.map(() => '?').join(', ')})`));
  }
  const tableIds = new Map<SessionTable, number>();
  let seq = 0;
  const insertBatch = db.transaction((batch: readonly Mixed[]) => {
    for (const [table, row] of batch) {
      const { columns, defaults, idIndex, seqIndex } = layoutOf(table);
      const values = row as Record<string, unknown>;
      const cells: unknown[] = [];
      for (let c = 0; c < columns.length; c++) cells.push(values[columns[c]!] ?? defaults[c]);
      if (idIndex >= 0) tableIds.set(table, (cells[idIndex] = (tableIds.get(table) ?? 0) + 1));
      if (seqIndex >= 0) cells[seqIndex] = ++seq;
      // Spread, as the writer thread binds: better-sqlite3 binds an array argument about a tenth slower.
      statements.get(table)!.run(...cells);
    }
  });
  const started = performance.now();
  for (let from = 0; from < rows.length; from += DEFAULT_WRITER_LIMITS.maxBatchRows)
    insertBatch(rows.slice(from, from + DEFAULT_WRITER_LIMITS.maxBatchRows));
  const seconds = (performance.now() - started) / 1000;
  db.close();
  return rows.length / seconds;
}

/** Rows in one file and not the other, either way, over the tables the bench writes. */
function differingRows(writerPath: string, rawPath: string): number {
  const db = new Database(writerPath, { readonly: true });
  try {
    db.prepare('ATTACH DATABASE ? AS raw').run(rawPath);
    let differing = 0;
    for (const table of STORED) {
      const columns = layoutOf(table).columns.join(', ');
      const count = (sql: string): number => (db.prepare(`SELECT count(*) AS n FROM (${sql})`).get() as { n: number }).n;
      differing += count(`SELECT ${columns} FROM main.${table} EXCEPT SELECT ${columns} FROM raw.${table}`);
      differing += count(`SELECT ${columns} FROM raw.${table} EXCEPT SELECT ${columns} FROM main.${table}`);
    }
    return differing;
  } finally {
    db.close();
  }
}

/** How long after `append` a row is visible to another connection, with no flush. */
async function visibilityLatencies(path: string): Promise<number[]> {
  const writer = await SessionWriter.open(path);
  const reader = openSessionDbReadOnly(path);
  const probe = reader.prepare('SELECT 1 FROM fs_events WHERE seq = ?');
  const latencies: number[] = [];
  for (let i = 0; i < 60; i++) {
    const { seq } = writer.append('fs_events', { timestamp: new Date().toISOString(), action: 'modified', path: `f${i}` })!;
    const started = performance.now();
    while (!probe.get(seq)) await new Promise((r) => setImmediate(r));
    latencies.push(performance.now() - started);
    await new Promise((r) => setTimeout(r, 5));
  }
  reader.close();
  await writer.close();
  return latencies;
}

/** A row is due to a reader within the writer's batch delay; this much more allows for its commit. */
const COMMIT_ALLOWANCE_MS = 25;

export async function storeBench(): Promise<boolean> {
  const dir = mkdtempSync(join(tmpdir(), 'capsem-bench-store-'));
  try {
    const rows = mixedRows();
    const writerRates: number[] = [];
    const rawRates: number[] = [];
    const rss = rssSampler();
    let differing = 0;
    for (let round = 0; round < ROUNDS; round++) {
      const roundDir = join(dir, `round-${round}`);
      mkdirSync(roundDir);
      const raw = (): void => void rawRates.push(rawInserts(join(roundDir, 'raw.db'), rows));
      const writer = async (): Promise<void> => void writerRates.push(await throughWriter(join(roundDir, 'writer.db'), rows));
      if (round % 2 === 0) {
        raw();
        await writer();
      } else {
        await writer();
        raw();
      }
      if (round === 0) differing = differingRows(join(roundDir, 'writer.db'), join(roundDir, 'raw.db'));
      rmSync(roundDir, { recursive: true, force: true });
    }
    const peakRss = rss.stop();
    const ratios = roundRatios(writerRates, rawRates);
    console.log(`  writer / raw by round: ${ratios.map((r) => r.toFixed(2)).join(' ')}`);
    const ratio = median(ratios);
    const visible = await visibilityLatencies(join(dir, 'visible.db'));
    const p50 = percentile(visible, 50);
    const p99 = percentile(visible, 99);
    const visibleWithin = DEFAULT_WRITER_LIMITS.maxBatchDelayMs + COMMIT_ALLOWANCE_MS;
    return printFigures(
      `store: ${EVENTS.toLocaleString('en')} events per round (3 net_events, 2 model_calls, 3 tool_calls, 2 x 4 KiB body blobs per 10), median of ${ROUNDS}`,
      [
        figure('writer throughput', `${Math.round(median(writerRates)).toLocaleString('en')} events/s`, true, 'printed'),
        figure('raw better-sqlite3 baseline', `${Math.round(median(rawRates)).toLocaleString('en')} events/s`, true, 'baseline'),
        figure('same rows stored', `${differing} rows differ`, differing === 0, 'none differ'),
        figure(
          'writer / raw',
          `${ratio.toFixed(2)}x (rounds ${Math.min(...ratios).toFixed(2)}-${Math.max(...ratios).toFixed(2)})`,
          ratio >= 0.9,
          '>= 0.9x, median of rounds',
        ),
        figure(
          'row visible to a reader',
          `p50 ${p50.toFixed(1)} ms, p99 ${p99.toFixed(1)} ms`,
          p99 < visibleWithin,
          `p99 < ${visibleWithin} ms, the batch delay + ${COMMIT_ALLOWANCE_MS}`,
        ),
        figure('peak RSS', `${peakRss.toFixed(0)} MiB`, true, 'printed'),
      ],
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
