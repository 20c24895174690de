// session.db, declared once: the DDL, the writer's insert statements and the row types all come
// from these definitions, so they cannot drift apart. Columns follow ../shared/spec/session-db.md;
// the extras (seq, identity graph columns, error and timing fields) are what the API and the
// identity graph need.

export type SqlType = 'INTEGER' | 'TEXT' | 'REAL' | 'BLOB';

export interface ColumnDef {
  readonly type: SqlType;
  readonly notNull?: boolean;
  /** SQL literal or parenthesised expression, as it appears after DEFAULT. */
  readonly default?: string;
  readonly check?: string;
  readonly primaryKey?: boolean;
  /** Added by this app beyond the spec: a database written by another tool may lack it. */
  readonly ours?: boolean;
  /**
   * Named by the spec's prose (its identity graph) but not by its CREATE TABLE blocks: a database
   * another tool built from that DDL lacks it, and is no worse for it.
   */
  readonly prose?: boolean;
}

export interface TableDef {
  readonly columns: Readonly<Record<string, ColumnDef>>;
  /** Tables whose rows are session events get a per-session `seq` for paging. */
  readonly sequenced: boolean;
  readonly indexes?: readonly string[];
  readonly uniques?: readonly (readonly string[])[];
  /** A table this app adds beyond the spec. */
  readonly ours?: boolean;
  /** A table the spec's prose describes but its DDL does not define. */
  readonly prose?: boolean;
}

const pk = { type: 'INTEGER', primaryKey: true } as const;
const text = { type: 'TEXT' } as const;
const int = { type: 'INTEGER' } as const;
const textNN = { type: 'TEXT', notNull: true } as const;
const intNN = { type: 'INTEGER', notNull: true } as const;
const seq = { type: 'INTEGER', notNull: true, ours: true } as const;
const oursText = { type: 'TEXT', ours: true } as const;
const zero = { type: 'INTEGER', default: '0' } as const;
const eventId = {
  type: 'TEXT',
  notNull: true,
  // ltrim is a plain C scan; the equivalent GLOB cost a quarter of the insert rate.
  check: "length(event_id) = 12 AND ltrim(event_id, '0123456789abcdef') = ''",
} as const;
const credentialRef = { type: 'TEXT', check: "credential_ref IS NULL OR credential_ref LIKE 'credential:%'" } as const;

/** Identity graph columns every event row carries; the spec's DDL gives them to a few tables only. */
const identity = {
  event_id: { ...eventId, prose: true },
  trace_id: { ...text, prose: true },
  turn_id: { ...text, prose: true },
  credential_ref: { ...credentialRef, prose: true },
} as const;
const proseText = { type: 'TEXT', prose: true } as const;

export const SESSION_TABLES = {
  net_events: {
    sequenced: true,
    columns: {
      id: pk,
      seq,
      ...identity,
      timestamp: textNN,
      domain: textNN,
      port: { type: 'INTEGER', default: '443' },
      decision: textNN,
      process_name: text,
      pid: int,
      method: text,
      path: text,
      query: text,
      status_code: int,
      bytes_sent: zero,
      bytes_received: zero,
      duration_ms: zero,
      ttfb_ms: { type: 'INTEGER', ours: true },
      matched_rule: text,
      request_headers: text,
      response_headers: text,
      request_body_preview: text,
      response_body_preview: text,
      conn_type: { type: 'TEXT', default: "'https'" },
      error_kind: oursText,
      error_message: oursText,
      // A parser that failed on this exchange (model detection, a request view, frame decoding):
      // its derived rows are missing, this row and its bodies are not.
      parse_error: oursText,
      // The Claude Code agent that sent the request (X-Claude-Code-Agent-Id) and the agent that
      // started it (X-Claude-Code-Parent-Agent-Id), when usable: request_headers keeps their values
      // hashed, as it keeps every header off its allowlist.
      agent_id: oursText,
      parent_agent_id: oursText,
      // Of a model API request, what its story reads (agent-story step): the side call it is, by its
      // prompt or its lack of tools, and the fingerprint of the conversation it sent.
      side_call: { type: 'TEXT', ours: true, check: "side_call IS NULL OR side_call IN ('progress-label','away-recap','tool-less')" },
      conversation_hash: oursText,
    },
  },
  model_calls: {
    sequenced: true,
    columns: {
      id: pk,
      seq,
      ...identity,
      // In the spec's model_calls DDL, unlike the rest of the identity graph.
      trace_id: text,
      net_event_id: oursText,
      host: oursText,
      timestamp: textNN,
      provider: textNN,
      model: text,
      process_name: text,
      pid: int,
      method: textNN,
      path: textNN,
      stream: zero,
      system_prompt_preview: text,
      messages_count: zero,
      tools_count: zero,
      request_bytes: zero,
      request_body_preview: text,
      message_id: text,
      status_code: int,
      text_content: text,
      thinking_content: text,
      stop_reason: text,
      input_tokens: int,
      output_tokens: int,
      duration_ms: zero,
      response_bytes: zero,
      estimated_cost_usd: { type: 'REAL', default: '0' },
      usage_details: text,
      // The wire format the recorder read the call in: readers present its stored body by it, never by detecting it again.
      wire: oursText,
    },
    indexes: ['trace_id'],
  },
  model_items: {
    sequenced: false,
    prose: true,
    columns: {
      id: pk,
      event_id: eventId,
      trace_id: text,
      turn_id: text,
      timestamp: textNN,
      model_call_id: intNN,
      provider: text,
      model: text,
      path: text,
      kind: { type: 'TEXT', notNull: true, check: "kind IN ('request','reasoning','response','tool_call','tool_response')" },
      item_index: intNN,
      call_id: text,
      tool_name: text,
      arguments: text,
      content: text,
      content_hash: text,
    },
    indexes: ['model_call_id'],
  },
  tool_calls: {
    sequenced: true,
    columns: {
      id: pk,
      seq,
      event_id: eventId,
      timestamp: textNN,
      model_call_id: int,
      provider: textNN,
      status: { type: 'TEXT', notNull: true, check: "status IN ('requested','observed','responded','error')" },
      call_index: intNN,
      call_id: textNN,
      tool_name: textNN,
      arguments: text,
      response_preview: text,
      origin: { type: 'TEXT', notNull: true, default: "'native'", check: "origin IN ('native','mcp','builtin','local')" },
      server_name: text,
      method: text,
      request_id: text,
      decision: textNN,
      duration_ms: zero,
      error_message: text,
      process_name: text,
      bytes_sent: zero,
      bytes_received: zero,
      policy_mode: text,
      policy_action: text,
      policy_rule: text,
      policy_reason: text,
      trace_id: text,
      turn_id: proseText,
      credential_ref: credentialRef,
    },
    indexes: ['call_id', 'model_call_id'],
  },
  tool_responses: {
    sequenced: true,
    columns: {
      id: pk,
      seq,
      event_id: { ...eventId, prose: true },
      timestamp: { ...textNN, ours: true },
      model_call_id: intNN,
      call_id: textNN,
      content_preview: text,
      is_error: zero,
      trace_id: text,
      turn_id: proseText,
      credential_ref: credentialRef,
    },
    indexes: ['call_id', 'model_call_id'],
  },
  fs_events: {
    sequenced: true,
    columns: {
      id: pk,
      seq,
      ...identity,
      timestamp: textNN,
      action: { type: 'TEXT', notNull: true, check: "action IN ('created','modified','deleted','restored')" },
      path: textNN,
      size: int,
      // A summary row (path 'node_modules/', '.git/'): how many paths inside it changed; null for one path.
      entries: { type: 'INTEGER', ours: true },
      // The path's content before and after the change, as sha256 hashes into the content store
      // (changes/contentStore.ts), with their git modes; null where there was none (before a
      // creation, after a deletion) and on summary rows.
      before_hash: { type: 'TEXT', ours: true },
      after_hash: { type: 'TEXT', ours: true },
      before_mode: { type: 'INTEGER', ours: true },
      after_mode: { type: 'INTEGER', ours: true },
      // Why the host kept no content after the change, or only its hash (over the cap, unreadable).
      note: { type: 'TEXT', ours: true },
    },
  },
  workspace_files: {
    // The shared folder as the session found it (the baseline): each file's path relative to the
    // workspace, size, git mode and content hash. Contents up to the store's cap are in the content
    // store; `note` says why a path has no hash (it could not be read, or is not a file).
    sequenced: false,
    ours: true,
    columns: {
      id: pk,
      path: textNN,
      size: int,
      mode: int,
      hash: text,
      note: text,
    },
    indexes: ['path'],
  },
  event_body_blobs: {
    sequenced: false,
    prose: true,
    columns: {
      id: pk,
      event_id: textNN,
      source_table: textNN,
      direction: { type: 'TEXT', notNull: true, check: "direction IN ('request','response')" },
      content_type: text,
      content_encoding: oursText,
      original_bytes: intNN,
      stored_bytes: intNN,
      truncated: { type: 'INTEGER', notNull: true, default: '0' },
      body_hash: text,
      body: { type: 'BLOB' },
      created_at: textNN,
    },
    uniques: [['event_id', 'source_table', 'direction']],
  },
  security_rule_events: {
    sequenced: false,
    prose: true,
    columns: {
      id: pk,
      event_id: textNN,
      timestamp: textNN,
      trace_id: text,
      turn_id: text,
      timestamp_unix_ms: int,
      event_type: textNN,
      rule_id: text,
      rule_action: text,
      detection_level: text,
      rule_json: text,
      event_json: { type: 'TEXT', check: 'event_json IS NULL OR json_valid(event_json)' },
    },
    indexes: ['event_id'],
  },
  exec_events: {
    // Commands the host ran in the guest through the agent (capsem run, exec from the app).
    sequenced: false,
    ours: true,
    columns: {
      id: pk,
      ...identity,
      timestamp: textNN,
      argv: { type: 'TEXT', notNull: true, check: 'json_valid(argv)' },
      cwd: text,
      origin: { type: 'TEXT', notNull: true, default: "'run'" },
      exit_code: int,
      signal: text,
      duration_ms: int,
      stdout_bytes: { type: 'INTEGER', notNull: true, default: '0' },
      stderr_bytes: { type: 'INTEGER', notNull: true, default: '0' },
      stdout_preview: text,
      stderr_preview: text,
      error_message: text,
    },
  },
  ws_frames: {
    // The frames of an upgraded connection, each an event of the exchange that opened it
    // (net_event_id): WebSocket frames as parsed, or `raw` chunks of another upgraded protocol.
    // Content is kept up to the session's body cap per connection; sizes always.
    sequenced: false,
    ours: true,
    columns: {
      id: pk,
      event_id: eventId,
      net_event_id: textNN,
      timestamp: textNN,
      direction: { type: 'TEXT', notNull: true, check: "direction IN ('sent','received')" },
      opcode: { type: 'TEXT', notNull: true, check: "opcode IN ('continuation','text','binary','close','ping','pong','raw')" },
      fin: { type: 'INTEGER', notNull: true, default: '1' },
      size: intNN,
      stored_bytes: { type: 'INTEGER', notNull: true, default: '0' },
      truncated: { type: 'INTEGER', notNull: true, default: '0' },
      content: text,
      body: { type: 'BLOB' },
    },
    indexes: ['net_event_id'],
  },
  dns_events: {
    // The names the guest looked up through the agent's DNS answerer (the spec's `dns` event
    // kind): what it was given (stand-in addresses), where the name really goes as the host
    // resolved it, and whether the policy let it be looked up at all.
    sequenced: true,
    ours: true,
    columns: {
      id: pk,
      seq,
      ...identity,
      timestamp: textNN,
      name: textNN,
      type: textNN,
      rcode: textNN,
      answers: { type: 'TEXT', check: 'answers IS NULL OR json_valid(answers)' },
      resolved: { type: 'TEXT', check: 'resolved IS NULL OR json_valid(resolved)' },
      decision: textNN,
      matched_rule: text,
      process_name: text,
      pid: int,
      duration_ms: zero,
      error_message: text,
    },
  },
  substitution_events: {
    // What the credential broker did with each stand-in a request carried (net_event_id): the
    // provider it stands for, where it was (header:NAME, query:NAME, url, body), the host, and the
    // outcome. The key itself is named only by credential_ref, never held.
    sequenced: false,
    ours: true,
    columns: {
      id: pk,
      event_id: eventId,
      net_event_id: textNN,
      timestamp: textNN,
      provider: textNN,
      location: textNN,
      host: textNN,
      outcome: { type: 'TEXT', notNull: true, check: "outcome IN ('substituted','refused','allowed-leak')" },
      credential_ref: { ...credentialRef, notNull: true },
      process_name: text,
      pid: int,
    },
    indexes: ['net_event_id'],
  },
  story_marks: {
    // What a model call's bodies tell the session's story, read when it was recorded (agent-story
    // step) so no reader parses a body again: under the exchange that carried it (net_event_id),
    // a tool result its agent sent back for the first time (result), the background command it
    // acknowledged (job: ref the job's id), the subagent an Agent call's result names (spawned: ref
    // the agent's id), the Agent call a response asked for (spawn: ref the subagent type, label its
    // description), and, new to the agent, a task's notification that it ended (notification: ref
    // the task's id, call_id the tool call that started it, label its status) or another agent's
    // message (agent-message: ref whom it is from).
    sequenced: false,
    ours: true,
    columns: {
      id: pk,
      net_event_id: textNN,
      kind: { type: 'TEXT', notNull: true, check: "kind IN ('result','job','spawned','spawn','notification','agent-message')" },
      call_id: text,
      ref: text,
      label: text,
    },
  },
  session_meta: {
    sequenced: false,
    ours: true,
    columns: {
      key: { type: 'TEXT', primaryKey: true },
      value: text,
    },
  },
} as const satisfies Record<string, TableDef>;

export type SessionTable = keyof typeof SESSION_TABLES;
export const SESSION_TABLE_NAMES = Object.keys(SESSION_TABLES) as SessionTable[];
/** The tables whose rows are session events, each with a seq. */
export type SequencedTable = { [T in SessionTable]: (typeof SESSION_TABLES)[T]['sequenced'] extends true ? T : never }[SessionTable];
export const SEQUENCED_TABLES = SESSION_TABLE_NAMES.filter((t): t is SequencedTable => SESSION_TABLES[t].sequenced);

type ValueOf<T extends SqlType> = T extends 'INTEGER' | 'REAL' ? number : T extends 'TEXT' ? string : Uint8Array;
type Cols<T extends SessionTable> = (typeof SESSION_TABLES)[T]['columns'];
type Required_<C> = {
  [K in keyof C]: C[K] extends { notNull: true } ? (C[K] extends { default: string } ? never : K) : never;
}[keyof C];

/** Columns a producer may leave out: the writer assigns `id` and `seq`, and mints `event_id`. */
type WriterFilled = 'id' | 'seq' | 'event_id';
type ColumnValue<C> = ValueOf<C extends { type: infer S extends SqlType } ? S : never>;

/** What a producer hands the writer: NOT NULL columns without a default are required. */
export type RowOf<T extends SessionTable> = {
  [K in Exclude<Required_<Cols<T>>, WriterFilled>]: ColumnValue<Cols<T>[K]>;
} & {
  [K in Exclude<keyof Cols<T>, Exclude<Required_<Cols<T>>, WriterFilled>>]?: ColumnValue<Cols<T>[K]> | null;
};

export function columnSql(name: string, col: ColumnDef): string {
  const parts = [name, col.type];
  if (col.primaryKey) parts.push(col.type === 'INTEGER' ? 'PRIMARY KEY AUTOINCREMENT' : 'PRIMARY KEY');
  if (col.notNull) parts.push('NOT NULL');
  if (col.default !== undefined) parts.push(`DEFAULT ${col.default}`);
  if (col.check !== undefined) parts.push(`CHECK (${col.check})`);
  return parts.join(' ');
}

export function tableDdl(name: string, def: TableDef): string[] {
  const lines = Object.entries(def.columns).map(([col, c]) => columnSql(col, c));
  for (const unique of def.uniques ?? []) lines.push(`UNIQUE (${unique.join(', ')})`);
  const statements = [`CREATE TABLE IF NOT EXISTS ${name} (\n  ${lines.join(',\n  ')}\n)`];
  if (def.sequenced) statements.push(`CREATE UNIQUE INDEX IF NOT EXISTS ${name}_seq ON ${name}(seq)`);
  for (const col of def.indexes ?? []) statements.push(`CREATE INDEX IF NOT EXISTS ${name}_${col} ON ${name}(${col})`);
  return statements;
}

export function sessionSchemaDdl(): string[] {
  return SESSION_TABLE_NAMES.flatMap((name) => tableDdl(name, SESSION_TABLES[name]));
}

export function insertColumns(table: SessionTable): string[] {
  return Object.keys(SESSION_TABLES[table].columns);
}
