import Database from 'better-sqlite3';
import { existsSync } from 'node:fs';
import { CUT_SHORT_CALL_IDS, cutShortNotes } from './cutShortCalls.ts';
import { mcpWireCalls, providerOfPath, writtenByAnotherTool } from './foreignDatabases.ts';
import { nullTokenFindings, type NullTokenCall } from './nullTokenFindings.ts';
import { TOLD_AS_MCP, TOLD_BY_MODEL_CALL } from './sessionEventStore.ts';
import { lossReport } from '../store/diskFailure.ts';
import { existingTables } from '../store/rollup.ts';
import { SESSION_TABLE_NAMES, SESSION_TABLES, type TableDef } from '../store/sessionSchema.ts';
import { HANDBACK_TOOL } from '../telemetry/claudeCode.ts';
import { BUILT_IN_PROVIDERS } from '../telemetry/providers/index.ts';
import { LOCAL_PRICE, UNPRICED } from '../telemetry/providers/provider.ts';
import { columnsOf } from '../store/tableColumns.ts';

// Deep inspection of one session.db: the checks the spec's "Deep inspection" section lists, each
// finding worded with the likely cause from its "Common debugging scenarios". It adapts to what
// the file has, so a database written by another tool is checked as far as it can be. A session
// this app recorded is checked on what its recorder wrote (which exchanges it read as model calls
// or MCP), so a change to detection never turns an old session's calls into findings; only a file
// another tool wrote has its model calls told by their paths (foreignDatabases.ts).

export interface Finding {
  readonly check: string;
  readonly message: string;
  readonly cause: string;
  readonly count: number;
  readonly samples: readonly string[];
}

export interface TableReport {
  readonly present: boolean;
  readonly rows: number | null;
  readonly missingColumns: readonly string[];
  readonly preview?: readonly Record<string, unknown>[];
}

export interface CheckReport {
  readonly dbPath: string;
  readonly tables: Readonly<Record<string, TableReport>>;
  readonly findings: readonly Finding[];
  /** Informational, not a failure: what could not be checked and why, and what is true of the session but no defect. */
  readonly notes: readonly string[];
}

/** Providers whose models run locally and cost nothing, as an SQL list: a zero cost there is no finding (rows recorded before the pricing mark). */
const FREE_PROVIDERS = BUILT_IN_PROVIDERS.filter((p) => p.price === LOCAL_PRICE)
  .map((p) => `'${p.id}'`)
  .join(', ');

/** The pricing mark the recorder leaves in usage_details (pricing: local or unpriced), as SQL. */
const PRICING_MARK = "json_extract(CASE WHEN json_valid(usage_details) THEN usage_details END, '$.pricing')";

const CAUSES = {
  schema:
    'The file was written by an older or different tool, or a migration did not run; open it with this Capsem to migrate, or compare against the spec schema.',
  integrity: 'The database file is damaged: a disk error or a copy taken mid-write without the SQLite backup API.',
  orphanCall:
    "The model invoked a tool but the next turn's tool results weren't captured: the session may have ended before the tool result was sent back.",
  orphanResponse:
    'A tool result was sent back for a call the ledger never recorded: the response that requested it was not parsed, or it was recorded under another trace.',
  danglingModelCall:
    'tool_calls.model_call_id points at a model call that is not in model_calls: the model call row was lost or written to another session.',
  missingModelCalls:
    'Requests went to a model API but no model_calls were recorded: stream parsing may have failed (gzip: Content-Encoding not decoded before SSE parsing), or the URL path was detected as the wrong provider.',
  nullModel:
    'Provider mismatch: model resolution is request body > SSE stream > response JSON > URL path; check that the URL path was detected as the right provider.',
  nullField:
    'A required field was not filled by the recorder: the event was cut off (the VM shut down before the proxy flushed) or written by a broken producer.',
  mcpUnmatched:
    'An MCP tools/call was observed without a corresponding logical tool call in tool_calls (origin mcp): an integrity/security finding, not a second ledger.',
  zeroCost: 'Cost is zero: the model is not in the pricing table; update the bundled pricing data.',
  parseError:
    'A parser failed on these exchanges (a body, path or frame it could not read): their network rows and bodies are recorded, the model, tool or frame rows derived from them are not. parse_error names the failure; the bytes are in event_body_blobs.',
  diskFailure:
    'The disk holding session.db filled up or failed while the session ran: from then on Capsem refused new requests and ended the session; the exchanges answered before it noticed could not be written. Free space on that disk (or replace it) before the next session.',
  writerLoss:
    'The session writer dropped or refused rows (queue past its hard limit, or rows SQLite rejected), or the recorder failed on an exchange: the producer outran the disk or sent malformed rows.',
} as const;

export function checkSessionDb(dbPath: string, options: { previewRows?: number } = {}): CheckReport {
  if (!existsSync(dbPath)) throw new Error(`no session database at ${dbPath}`);
  let db: Database.Database;
  try {
    db = new Database(dbPath, { readonly: true, fileMustExist: true });
    db.prepare('SELECT count(*) FROM sqlite_master').get();
  } catch (err) {
    throw new Error(`${dbPath} is not a readable SQLite database: ${(err as Error).message}`);
  }
  // A file another tool wrote says nothing of which requests were model calls: their paths tell.
  db.function('model_provider', { deterministic: true }, providerOfPath);
  try {
    return inspect(db, dbPath, options.previewRows ?? 0);
  } finally {
    db.close();
  }
}

function inspect(db: Database.Database, dbPath: string, previewRows: number): CheckReport {
  const findings: Finding[] = [];
  const notes: string[] = [];
  const present = existingTables(db);
  const columns = new Map<string, Set<string>>();
  for (const table of present) columns.set(table, columnsOf(db, table));
  const has = (table: string, ...cols: string[]): boolean => {
    const set = columns.get(table);
    return set !== undefined && cols.every((c) => set.has(c));
  };
  const count = (sql: string): number => (db.prepare(sql).get() as { n: number }).n;
  const samples = (sql: string): string[] => (db.prepare(sql).all() as { s: string }[]).map((r) => String(r.s));
  const add = (check: string, n: number, message: string, cause: string, sampleSql?: string): void => {
    if (n > 0) findings.push({ check, count: n, message, cause, samples: sampleSql ? samples(sampleSql) : [] });
  };
  /** Runs a check only when the columns it reads exist; otherwise says why it was skipped. */
  const when = (name: string, needs: Record<string, string[]>, run: () => void): void => {
    const missing = Object.entries(needs)
      .filter(([t, cols]) => !has(t, ...cols))
      .map(([t, cols]) => `${t}(${cols.join(', ')})`);
    if (missing.length > 0) notes.push(`${name}: skipped, the file lacks ${missing.join(' or ')}`);
    else run();
  };

  const tables: Record<string, TableReport> = {};
  for (const name of SESSION_TABLE_NAMES) {
    const def: TableDef = SESSION_TABLES[name];
    // Only what the spec's CREATE TABLE blocks define is required: a database another tool built
    // from that DDL alone is whole.
    if (!present.has(name)) {
      tables[name] = { present: false, rows: null, missingColumns: [] };
      if (def.ours) notes.push(`table ${name} is absent (this app adds it; other tools do not write it)`);
      else if (def.prose) notes.push(`table ${name} is absent (the spec's prose describes it; its DDL does not define it)`);
      else add('tables', 1, `table ${name} is missing`, CAUSES.schema);
      continue;
    }
    const have = columns.get(name)!;
    const lacking = Object.entries(def.columns).filter(([c]) => !have.has(c));
    const required = lacking.filter(([, c]) => !c.ours && !c.prose).map(([c]) => c);
    const ours = lacking.filter(([, c]) => c.ours).map(([c]) => c);
    const prose = lacking.filter(([, c]) => c.prose).map(([c]) => c);
    if (required.length > 0) add('columns', required.length, `table ${name} lacks columns: ${required.join(', ')}`, CAUSES.schema);
    if (ours.length > 0) notes.push(`table ${name} lacks columns this app adds: ${ours.join(', ')}`);
    if (prose.length > 0) notes.push(`table ${name} lacks columns the spec's prose names but its DDL leaves out: ${prose.join(', ')}`);
    const rows = count(`SELECT count(*) AS n FROM ${name}`);
    const preview =
      previewRows > 0
        ? (db.prepare(`SELECT * FROM ${name} ORDER BY rowid DESC LIMIT ?`).all(previewRows) as Record<string, unknown>[])
        : undefined;
    tables[name] = { present: true, rows, missingColumns: required, ...(preview ? { preview } : {}) };
  }

  let integrity: string[];
  try {
    integrity = samples('SELECT integrity_check AS s FROM pragma_integrity_check');
  } catch (err) {
    integrity = [(err as Error).message];
  }
  if (integrity.length !== 1 || integrity[0] !== 'ok')
    add('integrity', integrity.length, `integrity_check failed: ${integrity.slice(0, 3).join('; ')}`, CAUSES.integrity);

  // A response cut short with its cause recorded is a note, and so is what it never finished asking for.
  const cutShortKnown =
    has('model_calls', 'id', 'usage_details', 'net_event_id') && has('net_events', 'event_id', 'error_kind', 'error_message');
  if (cutShortKnown) notes.push(...cutShortNotes(db));

  const sameTrace = '(tr.trace_id IS tc.trace_id)';
  when('orphaned tool_calls', { tool_calls: ['call_id', 'trace_id', 'model_call_id'], tool_responses: ['call_id', 'trace_id'] }, () => {
    // Claude Code's subagent ends its run with its SubagentHandback call: no result is ever sent back for it.
    const unanswered = `tc.model_call_id IS NOT NULL AND tc.tool_name IS NOT '${HANDBACK_TOOL}' AND NOT EXISTS (SELECT 1 FROM tool_responses tr WHERE tr.call_id = tc.call_id AND ${sameTrace})`;
    const where = cutShortKnown ? `${unanswered} AND tc.model_call_id NOT IN (${CUT_SHORT_CALL_IDS})` : unanswered;
    add(
      'orphaned tool_calls',
      count(`SELECT count(*) AS n FROM tool_calls tc WHERE ${where}`),
      'tool_calls with no tool_responses in the same trace',
      CAUSES.orphanCall,
      `SELECT tc.call_id || ' ' || tc.tool_name AS s FROM tool_calls tc WHERE ${where} LIMIT 5`,
    );
  });
  when('orphaned tool_responses', { tool_calls: ['call_id', 'trace_id'], tool_responses: ['call_id', 'trace_id'] }, () => {
    const where = `NOT EXISTS (SELECT 1 FROM tool_calls tc WHERE tc.call_id = tr.call_id AND ${sameTrace})`;
    add(
      'orphaned tool_responses',
      count(`SELECT count(*) AS n FROM tool_responses tr WHERE ${where}`),
      'tool_responses whose call_id matches no tool_calls row in the same trace',
      CAUSES.orphanResponse,
      `SELECT tr.call_id AS s FROM tool_responses tr WHERE ${where} LIMIT 5`,
    );
  });
  when('tool call parents', { tool_calls: ['model_call_id'], model_calls: ['id'] }, () => {
    const where = 'tc.model_call_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM model_calls mc WHERE mc.id = tc.model_call_id)';
    add(
      'tool call parents',
      count(`SELECT count(*) AS n FROM tool_calls tc WHERE ${where}`),
      'tool_calls that name a model call that does not exist',
      CAUSES.danglingModelCall,
      `SELECT tc.call_id || ' -> model_call ' || tc.model_call_id AS s FROM tool_calls tc WHERE ${where} LIMIT 5`,
    );
  });

  const ours =
    !writtenByAnotherTool(db, present) &&
    has('net_events', 'trace_id', 'status_code') &&
    present.has('tool_calls') &&
    present.has('security_rule_events');
  when('AI provider correlation', { net_events: ['domain', 'path', 'decision'], model_calls: ['provider'] }, () => {
    if (ours) recordedModelCorrelation();
    else pathModelCorrelation();
  });

  /**
   * The recorder gives the row of every exchange it reads as a model call a trace id, answered or
   * not, and writes the call right after it: an answered one without its call was lost.
   */
  function recordedModelCorrelation(): void {
    const model = `net_events.decision = 'allowed' AND net_events.trace_id IS NOT NULL AND NOT ${TOLD_AS_MCP}`;
    const lost = `${model} AND net_events.status_code IS NOT NULL AND NOT ${TOLD_BY_MODEL_CALL}`;
    const requests = count(`SELECT count(*) AS n FROM net_events WHERE ${model} AND net_events.status_code IS NOT NULL`);
    const calls = requests - count(`SELECT count(*) AS n FROM net_events WHERE ${lost}`);
    add(
      'AI provider correlation',
      requests - calls,
      `${requests} model API requests answered in net_events but ${calls} model_calls`,
      CAUSES.missingModelCalls,
      `SELECT DISTINCT domain || path AS s FROM net_events WHERE ${lost} LIMIT 5`,
    );
    unansweredNote(`${model} AND net_events.status_code IS NULL`);
  }

  function pathModelCorrelation(): void {
    // A request that ended before any response (the client gave up, or the exchange failed before
    // a status came back) has nothing to make a model call from: it is no loss of the recorder's.
    const answered = has('net_events', 'status_code') ? 'status_code IS NOT NULL' : '1';
    for (const { id: provider } of BUILT_IN_PROVIDERS) {
      const requests = count(
        `SELECT count(*) AS n FROM net_events WHERE decision = 'allowed' AND model_provider(path) = '${provider}' AND ${answered}`,
      );
      const calls = count(`SELECT count(*) AS n FROM model_calls WHERE provider = '${provider}'`);
      add(
        'AI provider correlation',
        requests - calls,
        `${requests} ${provider} model API requests answered in net_events but ${calls} model_calls`,
        CAUSES.missingModelCalls,
        `SELECT DISTINCT domain || path AS s FROM net_events WHERE decision = 'allowed' AND model_provider(path) = '${provider}' AND ${answered} LIMIT 5`,
      );
    }
    if (has('net_events', 'status_code'))
      unansweredNote("decision = 'allowed' AND model_provider(path) IS NOT NULL AND status_code IS NULL");
  }

  function unansweredNote(where: string): void {
    const kind = has('net_events', 'error_kind') ? "coalesce(error_kind, 'no error recorded')" : "'no error recorded'";
    const unanswered = db
      .prepare(`SELECT ${kind} AS kind, count(*) AS n FROM net_events WHERE ${where} GROUP BY 1 ORDER BY 2 DESC, 1`)
      .all() as { kind: string; n: number }[];
    const total = unanswered.reduce((sum, k) => sum + k.n, 0);
    if (total > 0) {
      notes.push(
        `${total} model API ${total === 1 ? 'request' : 'requests'} ended before any response (${unanswered.map((k) => `${k.kind}: ${k.n}`).join(', ')}): nothing came back, so there is no model call to record`,
      );
    }
  }

  when('NULL model', { model_calls: ['model'] }, () =>
    add(
      'NULL model',
      count('SELECT count(*) AS n FROM model_calls WHERE model IS NULL'),
      'model_calls with a NULL model',
      CAUSES.nullModel,
      "SELECT id || ' ' || provider || ' ' || path AS s FROM model_calls WHERE model IS NULL LIMIT 5",
    ),
  );
  when('NULL tokens', { model_calls: ['id', 'input_tokens', 'output_tokens', 'stream', 'status_code'] }, () => {
    const linked = has('model_calls', 'net_event_id') && has('net_events', 'event_id', 'error_kind', 'error_message');
    const rows = db
      .prepare(
        `SELECT mc.id, ${has('model_calls', 'model') ? 'mc.model' : 'NULL'} AS model, coalesce(mc.stream, 0) = 1 AS stream,
        ${has('model_calls', 'usage_details') ? 'mc.usage_details' : 'NULL'} AS usageDetails,
        ${linked ? 'ne.event_id IS NOT NULL AS linked, ne.error_kind AS errorKind, ne.error_message AS errorMessage' : '0 AS linked, NULL AS errorKind, NULL AS errorMessage'}
      FROM model_calls mc ${linked ? 'LEFT JOIN net_events ne ON ne.event_id = mc.net_event_id' : ''}
      WHERE (mc.input_tokens IS NULL OR mc.output_tokens IS NULL) AND (mc.status_code IS NULL OR mc.status_code BETWEEN 200 AND 299)
      ORDER BY mc.id`,
      )
      .iterate() as Iterable<Omit<NullTokenCall, 'stream' | 'linked'> & { stream: number; linked: number }>;
    function* calls(): Generator<NullTokenCall> {
      for (const r of rows) yield { ...r, stream: r.stream === 1, linked: r.linked === 1 };
    }
    const nullTokens = nullTokenFindings(calls());
    for (const f of nullTokens.findings) findings.push({ check: 'NULL tokens', ...f });
    notes.push(...nullTokens.notes);
  });
  const critical: Record<string, string[]> = {
    net_events: ['timestamp', 'domain', 'decision'],
    model_calls: ['timestamp', 'provider', 'method', 'path'],
    tool_calls: ['event_id', 'timestamp', 'provider', 'status', 'call_id', 'tool_name', 'decision'],
    tool_responses: ['model_call_id', 'call_id'],
    fs_events: ['timestamp', 'action', 'path'],
  };
  for (const [table, cols] of Object.entries(critical)) {
    for (const col of cols) {
      if (!has(table, col)) continue;
      add(
        'NULL critical field',
        count(`SELECT count(*) AS n FROM ${table} WHERE ${col} IS NULL OR ${col} = ''`),
        `${table}.${col} is NULL or empty`,
        CAUSES.nullField,
      );
    }
  }

  // Without a security ledger (a file built from the spec's DDL alone), the network rows' request
  // bodies are the evidence of which MCP tools were called.
  const mcpFromWire = !has('security_rule_events', 'event_id', 'event_type') && has('net_events', 'decision', 'request_body_preview');
  if (!mcpFromWire) {
    when('MCP correlation', { security_rule_events: ['event_id', 'event_type'], tool_calls: ['event_id', 'origin'] }, () => {
      const where =
        "sre.event_type = 'mcp.tool_call' AND NOT EXISTS (SELECT 1 FROM tool_calls tc WHERE tc.event_id = sre.event_id AND tc.origin = 'mcp')";
      add(
        'MCP correlation',
        count(`SELECT count(DISTINCT sre.event_id) AS n FROM security_rule_events sre WHERE ${where}`),
        'MCP tools/call evidence with no tool_calls row of origin mcp',
        CAUSES.mcpUnmatched,
        `SELECT DISTINCT sre.event_id AS s FROM security_rule_events sre WHERE ${where} LIMIT 5`,
      );
    });
  } else {
    when('MCP correlation', { tool_calls: ['origin', 'tool_name'] }, () => {
      const bodies = db
        .prepare(
          "SELECT request_body_preview AS body FROM net_events WHERE decision = 'allowed' AND request_body_preview LIKE '%tools/call%'",
        )
        .pluck()
        .iterate();
      const wire = mcpWireCalls(bodies);
      const ledger = new Map(
        (
          db.prepare("SELECT tool_name AS tool, count(*) AS n FROM tool_calls WHERE origin = 'mcp' GROUP BY tool_name").all() as {
            tool: string;
            n: number;
          }[]
        ).map((r) => [r.tool, r.n]),
      );
      const short = [...wire.byTool].map(([tool, n]) => ({ tool, n, recorded: ledger.get(tool) ?? 0 })).filter((t) => t.n > t.recorded);
      const missing = short.reduce((sum, t) => sum + t.n - t.recorded, 0);
      if (missing > 0) {
        findings.push({
          check: 'MCP correlation',
          count: missing,
          message: 'MCP tools/call requests in net_events with no tool_calls row of origin mcp',
          cause: CAUSES.mcpUnmatched,
          samples: short.slice(0, 5).map((t) => `${t.tool}: ${t.n} requested, ${t.recorded} in tool_calls`),
        });
      }
      const one = wire.unreadable === 1;
      if (wire.unreadable > 0)
        notes.push(
          `MCP correlation: ${wire.unreadable} request ${one ? 'preview mentions' : 'previews mention'} tools/call but ${one ? 'is' : 'are'} not whole JSON (cut short for display), so ${one ? 'it was' : 'they were'} not counted`,
        );
    });
  }

  when('cost', { model_calls: ['estimated_cost_usd', 'input_tokens', 'output_tokens', 'model'] }, () => {
    // Local models (Ollama) cost nothing by design; a paid provider's zero is a pricing gap.
    const marked = has('model_calls', 'usage_details');
    const unpriced = marked ? `${PRICING_MARK} = '${UNPRICED}'` : '0';
    const where = `coalesce(estimated_cost_usd, 0) = 0 AND coalesce(input_tokens, 0) + coalesce(output_tokens, 0) > 0 AND provider NOT IN (${FREE_PROVIDERS})${marked ? ` AND coalesce(${PRICING_MARK}, '') NOT IN ('${LOCAL_PRICE}', '${UNPRICED}')` : ''}`;
    const noPrice = db
      .prepare(`SELECT provider, count(*) AS n FROM model_calls WHERE ${unpriced} GROUP BY provider ORDER BY provider`)
      .all() as {
      provider: string;
      n: number;
    }[];
    const total = noPrice.reduce((sum, p) => sum + p.n, 0);
    if (total > 0)
      notes.push(
        `${total} model ${total === 1 ? 'call was' : 'calls were'} served by a provider with no known price (${noPrice.map((p) => `${p.provider}: ${p.n}`).join(', ')}): ${total === 1 ? 'its cost is' : 'their cost is'} unknown (recorded as 0, marked unpriced in usage_details), not a gap in the pricing data; name the provider with a "price" (its genai-prices id) in the policy file's "providers" to price it`,
      );
    add(
      'zero cost',
      count(`SELECT count(*) AS n FROM model_calls WHERE ${where}`),
      'model_calls with tokens but no cost',
      CAUSES.zeroCost,
      `SELECT DISTINCT provider || '/' || coalesce(model, '?') AS s FROM model_calls WHERE ${where} LIMIT 5`,
    );
  });

  when('parse errors', { net_events: ['parse_error'] }, () =>
    add(
      'parse errors',
      count('SELECT count(*) AS n FROM net_events WHERE parse_error IS NOT NULL'),
      'exchanges recorded without what a parser should have derived from them',
      CAUSES.parseError,
      "SELECT domain || path || ': ' || parse_error AS s FROM net_events WHERE parse_error IS NOT NULL LIMIT 5",
    ),
  );

  when('writer losses', { session_meta: ['key', 'value'] }, () => {
    const lost = count(
      "SELECT coalesce(sum(CAST(value AS INTEGER)), 0) AS n FROM session_meta WHERE key IN ('writer_dropped', 'writer_rejected', 'recorder_failed')",
    );
    add(
      'writer losses',
      lost,
      `${lost} rows or exchanges were dropped, rejected or failed to record`,
      CAUSES.writerLoss,
      "SELECT key || ': ' || value AS s FROM session_meta WHERE key IN ('writer_dropped', 'writer_rejected', 'recorder_failed', 'recorder_last_failure') AND value NOT IN ('0', '')",
    );
  });

  when('disk failure', { session_meta: ['key', 'value'] }, () => {
    const meta = (key: string): string | undefined =>
      (db.prepare('SELECT value FROM session_meta WHERE key = ?').get(key) as { value: string } | undefined)?.value;
    const reason = meta('writer_unwritable');
    if (reason === undefined) return;
    const rows = Number(meta('writer_lost') ?? 0);
    add('disk failure', rows, lossReport(reason, rows, Number(meta('writer_lost_net_events') ?? 0)), CAUSES.diskFailure);
  });

  return { dbPath, tables, findings, notes };
}
