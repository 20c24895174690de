import { copyFileSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { exportSession } from '../../electron/archive/exportSession.ts';
import { importSession } from '../../electron/archive/importSession.ts';
import type { SessionId } from '../../electron/contract/ids.ts';
import { prose, Rng } from '../../electron/dev/seedSessions.ts';
import { EventIdMinter, firstEventId } from '../../electron/store/eventIds.ts';
import { openMainDb } from '../../electron/store/mainDb.ts';
import { ensurePrivateDir, sessionPaths } from '../../electron/store/paths.ts';
import { registerSession } from '../../electron/store/registry.ts';
import { rollUpSession } from '../../electron/store/rollup.ts';
import { openSessionDbForWriting } from '../../electron/store/sessionDb.ts';
import { tempHome } from '../helpers/tempHome.ts';
import { figure, printFigures, rssSampler } from './report.ts';

// Export and import of a large session: 100,000 events (net_events, model_calls and tool_calls)
// with 200 MB of bodies, written straight through SQL so building it takes seconds. The baseline
// is a plain file copy of the same session.db, measured in the same run: an archive cannot be
// written faster than its bytes can be copied, so the ratio says how much the format costs.

const EVENTS = 100_000;
const BODY_BYTES = 200_000_000;

function buildSession(dbPath: string): { bodies: number } {
  const db = openSessionDbForWriting(dbPath);
  const rng = new Rng(7);
  const ids = new EventIdMinter(firstEventId(null));
  // Three event kinds in turn; every net event carries a request and a response body.
  const netEvents = Math.ceil(EVENTS / 3);
  const bodySize = Math.floor(BODY_BYTES / (netEvents * 2));
  // Bodies vary (a pool of distinct prose, each stamped with its event) so compression is realistic.
  const pool = Array.from({ length: 256 }, () => prose(rng, bodySize - 40));
  const net =
    db.prepare(`INSERT INTO net_events (seq, event_id, trace_id, timestamp, domain, decision, process_name, method, path, status_code, bytes_sent, bytes_received, duration_ms, request_headers, response_headers)
    VALUES (?, ?, ?, ?, 'api.anthropic.com', 'allowed', 'claude', 'POST', '/v1/messages', 200, ?, ?, 800, '{"content-type":"application/json"}', '{"content-type":"application/json"}')`);
  const blob =
    db.prepare(`INSERT INTO event_body_blobs (event_id, source_table, direction, content_type, original_bytes, stored_bytes, body, created_at)
    VALUES (?, 'net_events', ?, 'application/json', ?, ?, ?, ?)`);
  const model =
    db.prepare(`INSERT INTO model_calls (seq, event_id, net_event_id, trace_id, timestamp, provider, model, method, path, input_tokens, output_tokens, estimated_cost_usd)
    VALUES (?, ?, ?, ?, ?, 'anthropic', 'claude-sonnet-4-20250514', 'POST', '/v1/messages', 1200, 300, 0.0081)`);
  const tool =
    db.prepare(`INSERT INTO tool_calls (seq, event_id, timestamp, model_call_id, provider, status, call_index, call_id, tool_name, arguments, decision, trace_id)
    VALUES (?, ?, ?, ?, 'anthropic', 'responded', 0, ?, 'Bash', '{"command":"npm test"}', 'allowed', ?)`);
  let bodies = 0;
  const start = 1_780_000_000_000;
  db.transaction(() => {
    let lastNet = '';
    let lastModel = 0;
    for (let seq = 1; seq <= EVENTS; seq++) {
      const ts = new Date(start + seq * 10).toISOString();
      const trace = `trace${Math.floor(seq / 30)}`;
      const eventId = ids.mint();
      if (seq % 3 === 1) {
        net.run(seq, eventId, trace, ts, bodySize, bodySize);
        for (const direction of ['request', 'response']) {
          const body = Buffer.from(`{"seq":${seq},"dir":"${direction}","text":"${pool[(seq + direction.length) % pool.length]!}"}`);
          blob.run(eventId, direction, body.length, body.length, body, ts);
          bodies += body.length;
        }
        lastNet = eventId;
      } else if (seq % 3 === 2) {
        lastModel = Number(model.run(seq, eventId, lastNet, trace, ts).lastInsertRowid);
      } else {
        tool.run(seq, eventId, ts, lastModel, `toolu_${seq}`, trace);
      }
    }
  })();
  db.pragma('wal_checkpoint(TRUNCATE)');
  db.close();
  return { bodies };
}

const seconds = (ms: number): string => `${(ms / 1000).toFixed(2)} s`;

export async function archiveBench(): Promise<boolean> {
  const home = tempHome();
  const mainDb = openMainDb(home);
  try {
    const record = registerSession(mainDb, { name: 'big', mode: 'bench' });
    const paths = sessionPaths(home, record.id as SessionId);
    ensurePrivateDir(paths.dir);
    let t = performance.now();
    const { bodies } = buildSession(paths.dbPath);
    rollUpSession(home, mainDb, record.id, { status: 'stopped' });
    const dbBytes = statSync(paths.dbPath).size;
    console.log(
      `  built ${EVENTS.toLocaleString('en')} events, ${(bodies / 1e6).toFixed(0)} MB of bodies, session.db ${(dbBytes / 2 ** 20).toFixed(0)} MiB in ${seconds(performance.now() - t)}`,
    );

    t = performance.now();
    copyFileSync(paths.dbPath, join(home.root, 'copy.db'));
    const copyMs = performance.now() - t;
    rmSync(join(home.root, 'copy.db'));

    const rss = rssSampler();
    const archive = join(home.root, 'big.capsem');
    t = performance.now();
    const exported = await exportSession(home, mainDb, record.id, { format: 'archive', out: archive });
    const exportMs = performance.now() - t;

    t = performance.now();
    const imported = await importSession(home, mainDb, archive);
    const importMs = performance.now() - t;
    const peak = rss.stop();

    const gzipped = join(home.root, 'big.capsem.gz');
    t = performance.now();
    const gz = await exportSession(home, mainDb, record.id, { format: 'archive', out: gzipped, gzip: true });
    const gzipMs = performance.now() - t;
    t = performance.now();
    await importSession(home, mainDb, gzipped);
    const gunzipMs = performance.now() - t;
    console.log(`  imported as ${imported.id} (${imported.name})`);

    return printFigures(
      `archive: ${EVENTS.toLocaleString('en')} events, ${(bodies / 1e6).toFixed(0)} MB of bodies (session.db ${(dbBytes / 2 ** 20).toFixed(0)} MiB)`,
      [
        figure('plain file copy (baseline)', seconds(copyMs), true, 'baseline'),
        figure('export (tar, backup API)', `${seconds(exportMs)} (${(exportMs / copyMs).toFixed(1)}x copy)`, exportMs < 5000, '< 5 s'),
        figure(
          'import (verify, stage, register)',
          `${seconds(importMs)} (${(importMs / copyMs).toFixed(1)}x copy)`,
          importMs < 5000,
          '< 5 s',
        ),
        figure('archive size', `${(exported.bytes / 2 ** 20).toFixed(0)} MiB`, true, 'printed'),
        figure('export --gzip', `${seconds(gzipMs)}, ${(gz.bytes / 2 ** 20).toFixed(0)} MiB`, true, 'printed'),
        figure('import of the gzip archive', seconds(gunzipMs), true, 'printed'),
        figure('peak RSS (export + import)', `${peak.toFixed(0)} MiB`, peak < 1024, '< 1 GiB'),
      ],
    );
  } finally {
    mainDb.close();
    home.remove();
  }
}
