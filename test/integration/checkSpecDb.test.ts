import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCapsem } from '../helpers/runCapsem.ts';
import { readSpec, specCreateTables } from '../helpers/specSchema.ts';
import { tempHome } from '../helpers/tempHome.ts';

// `capsem check --db` on a session.db another Capsem tool wrote from the spec's own DDL (exactly
// its CREATE TABLE blocks): clean, it passes with notes; with a real defect planted, the defect is
// found with the cause that fits it, and nothing else is.

const home = tempHome();
afterAll(() => home.remove());

const MCP_CALL = JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'echo', arguments: { text: 'hi' } } });

/** A clean session as the spec describes it: a model call whose tool call is answered in the next one, an MCP call, files. */
const CLEAN = `
  INSERT INTO net_events (timestamp, domain, decision, process_name, method, path, status_code, request_body_preview) VALUES
    ('2026-05-01T10:00:00Z', 'api.anthropic.com', 'allowed', 'claude', 'POST', '/v1/messages', 200, '{"model":"claude-sonnet-4-20250514"}'),
    ('2026-05-01T10:00:05Z', 'api.anthropic.com', 'allowed', 'claude', 'POST', '/v1/messages', 200, '{"model":"claude-sonnet-4-20250514"}'),
    ('2026-05-01T10:00:03Z', 'mcp.example.test', 'allowed', 'claude', 'POST', '/mcp', 200, '${MCP_CALL}'),
    ('2026-05-01T10:00:04Z', '169.254.169.254', 'denied', 'curl', 'GET', '/latest/meta-data', 403, NULL);
  INSERT INTO model_calls (timestamp, provider, model, method, path, stream, status_code, stop_reason, input_tokens, output_tokens, estimated_cost_usd, trace_id, usage_details) VALUES
    ('2026-05-01T10:00:00Z', 'anthropic', 'claude-sonnet-4-20250514', 'POST', '/v1/messages', 1, 200, 'tool_use', 1200, 80, 0.0048, 'trace-1', '{"cache_read":0}'),
    ('2026-05-01T10:00:05Z', 'anthropic', 'claude-sonnet-4-20250514', 'POST', '/v1/messages', 1, 200, 'end_turn', 1500, 20, 0.0048, 'trace-1', '{}');
  INSERT INTO tool_calls (event_id, timestamp, model_call_id, provider, status, call_index, call_id, tool_name, arguments, origin, server_name, method, request_id, decision, trace_id) VALUES
    ('0123456789ab', '2026-05-01T10:00:01Z', 1, 'anthropic', 'responded', 0, 'toolu_A1', 'Bash', '{"command":"ls"}', 'native', NULL, NULL, NULL, 'allowed', 'trace-1'),
    ('0123456789ac', '2026-05-01T10:00:03Z', NULL, 'mcp', 'responded', 0, 'mcp-3', 'echo', '{"text":"hi"}', 'mcp', 'mock-mcp', 'tools/call', '3', 'allowed', 'trace-1');
  INSERT INTO tool_responses (model_call_id, call_id, content_preview, trace_id) VALUES (2, 'toolu_A1', 'README.md', 'trace-1');
  INSERT INTO fs_events (timestamp, action, path, size) VALUES ('2026-05-01T10:00:02Z', 'created', 'src/a.ts', 10), ('2026-05-01T10:00:06Z', 'deleted', 'old.txt', NULL);
`;

let made = 0;
function specDb(defect = ''): string {
  const path = `${home.root}/spec-${++made}.db`;
  const db = new Database(path);
  for (const ddl of specCreateTables(readSpec())) db.exec(ddl);
  db.exec(CLEAN);
  db.exec(defect);
  db.close();
  return path;
}

let clean: ReturnType<typeof runCapsem>;
beforeAll(() => {
  expect(specCreateTables(readSpec())).toHaveLength(5);
  clean = runCapsem(home.root, ['check', '--db', specDb()]);
});

describe('capsem check --db on a database built from the spec DDL alone', () => {
  it('passes a clean one, with notes on what the DDL leaves out', () => {
    expect(clean.stdout).toContain('Findings: none');
    expect(clean.stdout).toContain(
      "note: table net_events lacks columns the spec's prose names but its DDL leaves out: event_id, trace_id, turn_id, credential_ref",
    );
    expect(clean.stdout).toContain("note: table model_items is absent (the spec's prose describes it; its DDL does not define it)");
    expect(clean.stdout).toContain('note: table model_calls lacks columns this app adds: seq, net_event_id, host');
    expect(clean.code).toBe(0);
  });

  const defects: [string, string, string, RegExp][] = [
    [
      'an orphaned tool call',
      'DELETE FROM tool_responses',
      'orphaned tool_calls',
      /likely cause: The model invoked a tool but the next turn's tool results weren't captured/,
    ],
    [
      'a model call with NULL tokens',
      'UPDATE model_calls SET output_tokens = NULL WHERE id = 2',
      'NULL tokens',
      /likely cause: No usage could be read from the stream, and this file does not link model calls to their exchanges/,
    ],
    [
      'an answered model request without a model call',
      "INSERT INTO net_events (timestamp, domain, decision, method, path, status_code) VALUES ('2026-05-01T10:00:09Z', 'api.openai.com', 'allowed', 'POST', '/v1/chat/completions', 200)",
      'AI provider correlation',
      /likely cause: Requests went to a model API but no model_calls were recorded/,
    ],
    [
      'an MCP call outside tool_calls',
      "DELETE FROM tool_calls WHERE origin = 'mcp'",
      'MCP correlation',
      /likely cause: An MCP tools\/call was observed without a corresponding logical tool call[\s\S]*e\.g\. echo: 1 requested, 0 in tool_calls/,
    ],
  ];
  for (const [what, sql, check, cause] of defects) {
    it(`finds ${what}, and only that, with its cause`, () => {
      const result = runCapsem(home.root, ['check', '--db', specDb(sql)]);
      expect(result.stdout).toContain('Findings: 1');
      expect(result.stdout).toContain(`FINDING [${check}]`);
      expect(result.stdout).toMatch(cause);
      expect(result.code).toBe(1);
    });
  }
});
