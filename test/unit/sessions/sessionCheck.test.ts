import Database from 'better-sqlite3';
import { copyFileSync, readFileSync, writeFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seedSessions } from '../../../electron/dev/seedSessions.ts';
import { seedStorySession } from '../../../electron/dev/seedStory.ts';
import { sessionPaths } from '../../../electron/store/paths.ts';
import { checkSessionDb } from '../../../electron/sessions/sessionCheck.ts';
import { readSpec, specCreateTables } from '../../helpers/specSchema.ts';
import { tempHome } from '../../helpers/tempHome.ts';

const home = tempHome();
let clean: string;
let copies = 0;
beforeAll(async () => {
  const [session] = await seedSessions(home, { sessions: 1, events: 400, seed: 7 });
  clean = sessionPaths(home, session!.id).dbPath;
});
afterAll(() => home.remove());

/** A copy of the clean session with one defect seeded by `sql`. */
function withDefect(sql: string): string {
  const path = `${home.root}/defect-${++copies}.db`;
  copyFileSync(clean, path);
  const db = new Database(path);
  db.exec(sql);
  db.close();
  return path;
}

describe('capsem check', () => {
  it('reports nothing on a clean Claude Code session whose subagents hand back, run in the background and notify', async () => {
    const story = await seedStorySession(home, { turns: 300, seed: 3 });
    const report = checkSessionDb(sessionPaths(home, story.id).dbPath);
    expect(report.findings).toEqual([]);
    const db = new Database(sessionPaths(home, story.id).dbPath, { readonly: true });
    const handbacks = (db.prepare("SELECT count(*) AS n FROM tool_calls WHERE tool_name = 'SubagentHandback'").get() as { n: number }).n;
    db.close();
    expect(handbacks).toBeGreaterThan(0);
  });

  it('reports nothing on a clean session', () => {
    const report = checkSessionDb(clean);
    expect(report.findings).toEqual([]);
    expect(report.notes).toEqual([]);
    expect(report.tables.model_calls!.rows).toBeGreaterThan(10);
    // Every call the model asked for is answered; an MCP call's answer is its own exchange's response.
    const db = new Database(clean, { readonly: true });
    const mcpCalls = (db.prepare("SELECT count(*) AS n FROM tool_calls WHERE origin = 'mcp'").get() as { n: number }).n;
    db.close();
    expect(mcpCalls).toBeGreaterThan(0);
    expect(report.tables.tool_responses!.rows).toBe(report.tables.tool_calls!.rows! - mcpCalls);
  });

  // Each defect is planted in a recorded session's file by SQL: no recording makes one, which is
  // what `capsem check` is there to find.
  const defects: [string, string, RegExp][] = [
    [
      'orphaned tool_calls',
      'DELETE FROM tool_responses WHERE id = (SELECT min(id) FROM tool_responses)',
      /session may have ended before the tool result/,
    ],
    [
      'orphaned tool_responses',
      "INSERT INTO tool_responses (seq, event_id, timestamp, model_call_id, call_id, trace_id) VALUES (99999, 'aaaaaaaaaaaa', 't', 1, 'toolu_ghost', 'x')",
      /never recorded/,
    ],
    ['tool call parents', 'UPDATE tool_calls SET model_call_id = 424242 WHERE id = 1', /model call row was lost/],
    [
      'AI provider correlation',
      // An exchange the recorder read as a model call (it carries a trace) whose model_calls row was lost.
      "INSERT INTO net_events (seq, event_id, trace_id, timestamp, domain, decision, method, path, status_code) VALUES (99999, 'bbbbbbbbbbbb', 'lost', 't', 'api.openai.com', 'allowed', 'POST', '/v1/chat/completions', 200)",
      /stream parsing may have failed/,
    ],
    ['NULL model', 'UPDATE model_calls SET model = NULL WHERE id = 1', /request body > SSE stream > response JSON > URL path/],
    [
      'NULL tokens',
      `UPDATE model_calls SET input_tokens = NULL, stream = 1 WHERE id = 1;
      UPDATE net_events SET error_kind = 'decode_error', error_message = 'gzip: incorrect header check' WHERE event_id = (SELECT net_event_id FROM model_calls WHERE id = 1)`,
      /Gzip bug: the response's Content-Encoding could not be undone \(decode_error: gzip: incorrect header check\)/,
    ],
    [
      'NULL tokens',
      `UPDATE model_calls SET output_tokens = NULL, stream = 1, usage_details = '{"incomplete":true}' WHERE id = 1`,
      /^The stream ended before its final event with no error on its exchange: the upstream ended it early, or it passed the recorder's body cap/,
    ],
    [
      'NULL tokens',
      'UPDATE model_calls SET input_tokens = NULL, stream = 1 WHERE id = 1',
      /^The stream ended normally and its body was decoded, yet no usage could be read/,
    ],
    ['NULL tokens', 'UPDATE model_calls SET output_tokens = NULL, stream = 0 WHERE id = 1', /tokens come from the response JSON/],
    ['NULL critical field', "UPDATE fs_events SET path = '' WHERE id = 1", /VM shut down before the proxy flushed/],
    [
      'MCP correlation',
      "INSERT INTO security_rule_events (event_id, timestamp, event_type, event_json) VALUES ('cccccccccccc', 't', 'mcp.tool_call', '{}')",
      /MCP tools\/call was observed without/,
    ],
    ['zero cost', "UPDATE model_calls SET estimated_cost_usd = 0 WHERE provider = 'anthropic'", /not in the pricing table/],
    [
      'writer losses',
      "INSERT INTO session_meta (key, value) VALUES ('writer_dropped', '5') ON CONFLICT(key) DO UPDATE SET value = '5'",
      /outran the disk/,
    ],
    ['tables', 'DROP TABLE fs_events', /written by an older or different tool/],
    ['columns', 'ALTER TABLE net_events DROP COLUMN query', /written by an older or different tool/],
  ];
  for (const [check, sql, cause] of defects) {
    it(`reports ${check} (${sql.slice(0, 48)}...) with its likely cause`, () => {
      const report = checkSessionDb(withDefect(sql));
      const finding = report.findings.find((f) => f.check === check);
      expect(finding, `findings were: ${report.findings.map((f) => f.check).join(', ')}`).toBeDefined();
      expect(finding!.cause).toMatch(cause);
      expect(finding!.count).toBeGreaterThan(0);
    });
  }

  it('takes a stream whose provider reported no usage, and a request abandoned before any answer, for what they are: notes, not findings', () => {
    const report = checkSessionDb(
      withDefect(`
      UPDATE model_calls SET input_tokens = NULL, output_tokens = NULL, stream = 1, usage_details = '{"usage":"unreported"}' WHERE id IN (1, 2);
      INSERT INTO net_events (seq, event_id, trace_id, timestamp, domain, decision, method, path, error_kind) VALUES (99998, 'dddddddddddd', 'asked', 't', 'api.anthropic.com', 'allowed', 'POST', '/v1/messages', 'client_canceled')`),
    );
    expect(report.findings).toEqual([]);
    expect(report.notes).toEqual([
      '1 model API request ended before any response (client_canceled: 1): nothing came back, so there is no model call to record',
      '2 streamed model calls have no token counts because the provider reported none (an OpenAI Chat Completions stream reports usage only when the request sets stream_options.include_usage): nothing was lost, the tokens are unknown',
    ]);
  });

  it('notes a response cut short with its cause recorded, and reports neither its missing usage nor the call it never finished asking for', () => {
    const cut = "(SELECT model_call_id FROM tool_calls WHERE origin = 'native' ORDER BY id LIMIT 1)";
    const defect = `
      UPDATE model_calls SET output_tokens = NULL, stream = 1, usage_details = '{"incomplete":true}' WHERE id = ${cut};
      DELETE FROM tool_responses WHERE call_id IN (SELECT call_id FROM tool_calls WHERE model_call_id = ${cut})`;
    const timedOut = `UPDATE net_events SET error_kind = 'upstream_timeout', error_message = 'api.example:443 did not answer in time'
      WHERE event_id = (SELECT net_event_id FROM model_calls WHERE id = ${cut})`;
    const report = checkSessionDb(withDefect(`${defect}; ${timedOut}`));
    expect(report.findings).toEqual([]);
    expect(report.notes).toEqual([
      '1 model API response was cut short (upstream_timeout: api.example:443 did not answer in time): everything that arrived is recorded; what would have come after (the usage, the rest of the text, the tool calls still being asked for) never did, so nothing the recorder could keep was lost',
    ]);
    // Without the cause on its exchange, the same rows are findings.
    expect(
      checkSessionDb(withDefect(defect))
        .findings.map((f) => f.check)
        .sort(),
    ).toEqual(['NULL tokens', 'orphaned tool_calls']);
  });

  it('names what a disk failure cost and why, from the marker the writer left', () => {
    const report = checkSessionDb(
      withDefect(
        "INSERT INTO session_meta (key, value) VALUES ('writer_unwritable', 'cannot write session.db: disk I/O error'), ('writer_lost', '7'), ('writer_lost_net_events', '2') ON CONFLICT(key) DO UPDATE SET value = excluded.value",
      ),
    );
    const finding = report.findings.find((f) => f.check === 'disk failure');
    expect(finding).toMatchObject({ count: 7, message: 'cannot write session.db: disk I/O error; 2 exchanges (7 rows) not recorded' });
    expect(finding!.cause).toMatch(/disk holding session.db filled up or failed/);
  });

  it('reports a damaged database through integrity_check', () => {
    const path = withDefect('CREATE INDEX fs_events_path_probe ON fs_events(path)');
    const db = new Database(path, { readonly: true });
    const { rootpage } = db.prepare("SELECT rootpage FROM sqlite_master WHERE name = 'fs_events_path_probe'").get() as { rootpage: number };
    const pageSize = db.pragma('page_size', { simple: true }) as number;
    db.close();
    // Rewrite the keys inside the index page so they no longer match their table rows.
    const file = readFileSync(path);
    const page = file.subarray((rootpage - 1) * pageSize, rootpage * pageSize);
    let rewritten = 0;
    for (let i = page.indexOf('src/'); i >= 0; i = page.indexOf('src/', i + 1)) {
      page[i + 2] = 'd'.charCodeAt(0);
      rewritten += 1;
    }
    expect(rewritten).toBeGreaterThan(0);
    writeFileSync(path, file);
    const finding = checkSessionDb(path).findings.find((f) => f.check === 'integrity');
    expect(finding?.message).toMatch(/fs_events_path_probe/);
  });

  it('requires of a database built from the spec alone only what its DDL defines, and says what else it lacks', () => {
    const path = `${home.root}/spec-only.db`;
    const db = new Database(path);
    for (const ddl of specCreateTables(readSpec())) db.exec(ddl);
    db.exec(`INSERT INTO net_events (timestamp, domain, decision, method, path, status_code, request_body_preview) VALUES
      ('t', 'mcp.example.test', 'allowed', 'POST', '/mcp', 200, '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","argu')`);
    db.close();
    const report = checkSessionDb(path);
    expect(report.findings).toEqual([]);
    expect(report.notes).toEqual(
      expect.arrayContaining([
        'table net_events lacks columns this app adds: seq, ttfb_ms, error_kind, error_message, parse_error, agent_id, parent_agent_id, side_call, conversation_hash',
        "table tool_responses lacks columns the spec's prose names but its DDL leaves out: event_id, turn_id",
        "table security_rule_events is absent (the spec's prose describes it; its DDL does not define it)",
        'table session_meta is absent (this app adds it; other tools do not write it)',
        'MCP correlation: 1 request preview mentions tools/call but is not whole JSON (cut short for display), so it was not counted',
      ]),
    );
  });

  it('still calls a table or column the spec DDL defines missing', () => {
    const path = `${home.root}/spec-short.db`;
    const db = new Database(path);
    for (const ddl of specCreateTables(readSpec())) db.exec(ddl);
    db.exec('DROP TABLE fs_events; ALTER TABLE tool_calls DROP COLUMN server_name');
    db.close();
    expect(checkSessionDb(path).findings.map((f) => f.message)).toEqual([
      'table tool_calls lacks columns: server_name',
      'table fs_events is missing',
    ]);
  });

  it('refuses a file that is not SQLite with a clear error', () => {
    expect(() => checkSessionDb('/etc/hostname')).toThrow(/not a readable SQLite database/);
    expect(() => checkSessionDb(`${home.root}/nope.db`)).toThrow(/no session database/);
  });
});
