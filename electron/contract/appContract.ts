import { z } from 'zod';
import { AGENT_NAMES } from './agents.ts';
import { BUILD_STAGE_STATES, type BuildStage } from './buildStages.ts';
import { ImageKindSchema } from './guestImages.ts';
import { asSessionId, SESSION_ID_PATTERN } from './ids.ts';

// The one contract between the renderer and the host core: every call the window can make and
// every event it can receive. The Electron preload exposes exactly these as `window.capsem`; browser
// mode carries the same messages over a loopback WebSocket. The host validates every call's params
// with these schemas before it acts; results are typed from them too. Sessions are addressed by id
// only: a display name is turned into an id by `sessions.resolve`, once, at the edge.

/** A session id in a call's params: a string on the wire, a SessionId to the handler that parsed it. */
export const SessionIdParam = z.string().regex(SESSION_ID_PATTERN, 'a session id (a UUID), not a display name').transform(asSessionId);
const Seq = z.number().int().min(0);
const SettingsResult = z.strictObject({ spareVm: z.boolean(), spareVmOff: z.string().nullable() });
const OtelSettingsResult = z.strictObject({
  /** The endpoint as saved (or as the environment sets it); null: nothing is exported. */
  endpoint: z.string().nullable(),
  /** The headers sent with every request, by name only: their values are secrets and stay in the core. */
  headerNames: z.array(z.string()),
  /** Message contents, tool arguments and results go into the spans. */
  content: z.boolean(),
  /** Why the fields do not apply this run (CAPSEM_OTLP_ENDPOINT is set), or null. */
  fromEnv: z.string().nullable(),
  /** The traces URL spans go to, or null. */
  url: z.string().nullable(),
  /** What the export ledger holds for that URL, or null with nothing exported. */
  status: z
    .strictObject({
      sentSpans: z.number(),
      sentRequests: z.number(),
      queuedSpans: z.number(),
      queuedRequests: z.number(),
      droppedSpans: z.number(),
      /** The newest drops, oldest of them first. */
      lastDrops: z.array(z.strictObject({ sessionId: z.string(), spans: z.number(), reason: z.string(), at: z.string() })),
    })
    .nullable(),
  /** Why nothing is exported although an endpoint is set, or the status could not be read; else null. */
  problem: z.string().nullable(),
});
const Size = z.strictObject({ cols: z.number().int().min(2).max(1000), rows: z.number().int().min(2).max(1000) });

export const SessionStatusSchema = z.enum(['running', 'stopped', 'crashed', 'vacuumed', 'terminated', 'erased']);

/**
 * Lines of scrollback a terminal keeps: the window's xterm and the host's copy of a live terminal
 * alike. A type too, so the renderer (which takes only types from this module, keeping zod out of its bundle) cannot drift from it.
 */
export type TerminalScrollbackLines = 10_000;
export const TERMINAL_SCROLLBACK_LINES: TerminalScrollbackLines = 10_000;

export const BuildStageSchema = z.object({
  stage: z.string(),
  state: z.enum(BUILD_STAGE_STATES),
  fraction: z.number().min(0).max(1),
  ms: z.number().min(0),
}) satisfies z.ZodType<BuildStage>;

/**
 * Where a session started from the window is while its terminal is not live yet: building its
 * guest image (`step` is the stage that reported last, `fraction` of the whole build done, `build`
 * every stage of it, several running at once) or booting its VM (`build` empty).
 */
export const StartProgressSchema = z.object({
  phase: z.enum(['image', 'boot']),
  step: z.string(),
  message: z.string(),
  fraction: z.number().min(0).max(1).nullable(),
  build: z.array(BuildStageSchema).readonly(),
});
export type StartProgress = z.infer<typeof StartProgressSchema>;

/** A row of the session list: every figure the list shows, with both id and name. */
export const SessionSummarySchema = z.object({
  id: z.string(),
  name: z.string().nullable(),
  status: SessionStatusSchema,
  statusReason: z.string().nullable(),
  mode: z.string(),
  command: z.string().nullable(),
  createdAt: z.string(),
  stoppedAt: z.string().nullable(),
  /** Milliseconds from creation to stop, or to now for a running session. */
  durationMs: z.number(),
  costUsd: z.number(),
  inputTokens: z.number(),
  outputTokens: z.number(),
  requests: z.number(),
  deniedRequests: z.number(),
  modelCalls: z.number(),
  toolCalls: z.number(),
  fileEvents: z.number(),
  /** The session.db is on disk (its events can be browsed). */
  onDisk: z.boolean(),
  /** A VM runs for it in this app now (its terminal is live). */
  live: z.boolean(),
  /** A VM-mode session the registry kept for resuming (a named one): `sessions.resume` can boot it again. */
  resumable: z.boolean(),
  /** A start (or resume) under way in this app: what it is doing now; null otherwise. */
  starting: StartProgressSchema.nullable(),
});
export type SessionSummary = z.infer<typeof SessionSummarySchema>;

/** The tables a tab shows, one per view. */
export const TableKindSchema = z.enum(['net', 'model', 'tool', 'file', 'exec']);
export type TableKind = z.infer<typeof TableKindSchema>;

/** One row of a view's table; `columns` holds the table's own fields (see TABLE_COLUMNS in tableColumns.ts). */
export const TableRowSchema = z.object({
  seq: z.number(),
  id: z.number(),
  eventId: z.string(),
  at: z.string(),
  columns: z.record(z.string(), z.union([z.string(), z.number(), z.null()])),
});
export type TableRow = z.infer<typeof TableRowSchema>;

export const TablePageSchema = z.object({ rows: z.array(TableRowSchema), total: z.number(), nextOffset: z.number().nullable() });
export type TablePage = z.infer<typeof TablePageSchema>;

export const BodySchema = z.object({
  direction: z.enum(['request', 'response']),
  contentType: z.string().nullable(),
  contentEncoding: z.string().nullable(),
  originalBytes: z.number(),
  storedBytes: z.number(),
  truncated: z.boolean(),
  /** The first part of the decoded body as text (JSON pretty-printed when it parses), or null for binary. */
  preview: z.string().nullable(),
  /** The preview is the whole body; otherwise fetch the rest with `events.body`. */
  complete: z.boolean(),
});
export type Body = z.infer<typeof BodySchema>;

/** One frame of an upgraded connection (a WebSocket message, or a raw chunk of another protocol), as the detail pane lists it. */
export const FrameSchema = z.object({
  at: z.string(),
  direction: z.enum(['sent', 'received']),
  opcode: z.string(),
  size: z.number(),
  /** Text frames and close reasons as text; other kept bytes as hex; null when none were kept. */
  text: z.string().nullable(),
  hex: z.string().nullable(),
  truncated: z.boolean(),
});
export type Frame = z.infer<typeof FrameSchema>;

/** Everything a detail pane shows for one row: its fields, headers, bodies, and for a model call its items. */
export const EventDetailSchema = z.object({
  kind: TableKindSchema,
  seq: z.number(),
  eventId: z.string(),
  fields: z.record(z.string(), z.union([z.string(), z.number(), z.null()])),
  requestHeaders: z.record(z.string(), z.string()).nullable(),
  responseHeaders: z.record(z.string(), z.string()).nullable(),
  bodies: z.array(BodySchema),
  /** Model calls: model_items in observed order. */
  items: z.array(
    z.object({
      kind: z.string(),
      index: z.number(),
      callId: z.string().nullable(),
      toolName: z.string().nullable(),
      content: z.string().nullable(),
      arguments: z.string().nullable(),
    }),
  ),
  /** Tool calls and responses: the model call that emitted them, as a seq to jump to. */
  modelCallSeq: z.number().nullable(),
  /** Model calls: the net_events row that carried them. */
  netSeq: z.number().nullable(),
  /** Upgraded exchanges (WebSocket): their first frames in the order they passed, and how many there were. */
  frames: z.array(FrameSchema),
  frameCount: z.number(),
});
export type EventDetail = z.infer<typeof EventDetailSchema>;

export const CostSchema = z.object({
  byModel: z.array(
    z.object({
      provider: z.string(),
      model: z.string(),
      calls: z.number(),
      inputTokens: z.number(),
      outputTokens: z.number(),
      cacheReadTokens: z.number(),
      cacheWriteTokens: z.number(),
      costUsd: z.number(),
      /** Calls with tokens the recorder could not price (a local model, a provider or model with no known price): their cost is unknown, not $0. */
      unpricedCalls: z.number(),
    }),
  ),
  /** Cumulative cost over time, one point per model call. */
  cumulative: z.array(z.object({ at: z.string(), costUsd: z.number() })),
});
export type Cost = z.infer<typeof CostSchema>;

/** An agent of the session: `main`, or a subagent with the agent that spawned it and the tool call that did. */
export const TimelineAgentSchema = z.object({
  id: z.string(),
  parent: z.string().nullable(),
  label: z.string(),
  type: z.string().nullable(),
  spawnTool: z.string().nullable(),
  spawnedAt: z.string().nullable(),
  returnedAt: z.string().nullable(),
});
/** `open`: still in flight, so `end` is its start until it ends (the view may draw it to now). */
export const TimelineSpanSchema = z.object({
  start: z.string(),
  end: z.string(),
  label: z.string(),
  seq: z.number().nullable(),
  open: z.boolean(),
});
const AgentSpanSchema = TimelineSpanSchema.extend({ agent: z.string() });
export const TimelineSchema = z.object({
  start: z.string().nullable(),
  end: z.string().nullable(),
  agents: z.array(TimelineAgentSchema),
  turns: z.array(AgentSpanSchema.extend({ error: z.boolean(), resent: z.boolean() })),
  tools: z.array(AgentSpanSchema.extend({ id: z.string() })),
  jobs: z.array(AgentSpanSchema.extend({ id: z.string() })),
  returns: z.array(z.object({ agent: z.string(), into: z.string(), at: z.string(), seq: z.number() })),
  hosts: z.array(TimelineSpanSchema.extend({ host: z.string() })),
});
export type Timeline = z.infer<typeof TimelineSchema>;

/** Where a Conversation text is stored, for `sessions.conversationText`: model_items content, a model call's answer or thinking, a tool call's arguments, a tool result's preview. */
export const ConversationTextSourceSchema = z.enum(['item', 'text', 'thinking', 'arguments', 'result']);
export type ConversationTextSource = z.infer<typeof ConversationTextSourceSchema>;

/** A stored text as the Conversation shows it: its start, and whether that is all of it (else `sessions.conversationText` gives the rest). */
export const ConversationTextSchema = z.object({
  head: z.string(),
  /** Characters in the whole text. */
  total: z.number(),
  complete: z.boolean(),
  source: ConversationTextSourceSchema,
  rowId: z.number(),
});
export type ConversationText = z.infer<typeof ConversationTextSchema>;

/** A row of a table view, as `events.detail` takes it: the item's raw exchange (or tool call, or file event). */
export const RowLinkSchema = z.object({ kind: TableKindSchema, seq: z.number() });
export type RowLink = z.infer<typeof RowLinkSchema>;

export const ConversationToolSchema = z.object({
  callId: z.string(),
  name: z.string(),
  /** requested, responded or error, as the tool ledger says. */
  status: z.string(),
  arguments: ConversationTextSchema.nullable(),
  link: RowLinkSchema,
  /** The result sent back, first time it was: its text, the model call that carried it; null while none was. */
  result: z.object({ text: ConversationTextSchema.nullable(), isError: z.boolean(), link: RowLinkSchema }).nullable(),
  /** The subagent this call spawned: its turns follow, nested under this call. */
  spawned: z.string().nullable(),
});
export type ConversationTool = z.infer<typeof ConversationToolSchema>;

export const ConversationFileSchema = z.object({
  at: z.string(),
  action: z.string(),
  path: z.string(),
  size: z.number().nullable(),
  /** A summary row's count of paths inside its folder (.git/, node_modules/); null for one path. */
  entries: z.number().nullable(),
  link: RowLinkSchema,
});

/** One turn of the agent's story: one model call, what it was told, what it said and did, and what it cost. */
export const ConversationTurnSchema = z.object({
  /** Its place in the Conversation (subagents' turns nested under the call that spawned them). */
  index: z.number(),
  /** The turn's seq as sessions.timeline gives it: its exchange's request event. */
  seq: z.number(),
  /** The model call's row (Model calls view) and the HTTP exchange that carried it (Network view). */
  link: RowLinkSchema,
  netLink: RowLinkSchema.nullable(),
  agent: z.string(),
  depth: z.number(),
  /** The tool call that spawned this turn's agent; null for a top-level agent. */
  under: z.string().nullable(),
  at: z.string(),
  durationMs: z.number(),
  provider: z.string(),
  model: z.string().nullable(),
  status: z.number().nullable(),
  finish: z.string().nullable(),
  error: z.boolean(),
  /** It sent its agent's previous call again unchanged: a retry. */
  retry: z.boolean(),
  inputTokens: z.number().nullable(),
  outputTokens: z.number().nullable(),
  cacheReadTokens: z.number().nullable(),
  cacheWriteTokens: z.number().nullable(),
  costUsd: z.number(),
  /** The user text this turn sent that its agent's previous turn had not; null when it sent none new. */
  prompt: ConversationTextSchema.nullable(),
  thinking: ConversationTextSchema.nullable(),
  /** The model's answer, markdown. */
  text: ConversationTextSchema.nullable(),
  tools: z.array(ConversationToolSchema),
  /** Workspace changes from this turn to its agent's next one, by time; the first FILES_SHOWN of `fileCount`. */
  files: z.array(ConversationFileSchema),
  fileCount: z.number(),
});
export type ConversationTurn = z.infer<typeof ConversationTurnSchema>;

export const ConversationPageSchema = z.object({
  /** Turns in the whole Conversation. */
  total: z.number(),
  offset: z.number(),
  turns: z.array(ConversationTurnSchema),
  agents: z.array(z.object({ id: z.string(), label: z.string(), type: z.string().nullable() })),
});
export type ConversationPage = z.infer<typeof ConversationPageSchema>;

/** What made a workspace change: the tool call whose command was running in the guest, in its Conversation turn. */
export const ChangeSourceSchema = z.object({
  callId: z.string(),
  toolName: z.string(),
  /** What the call was asked to do, as the Timeline shows it (a Bash command, an Edit's file); null when it said nothing. */
  preview: z.string().nullable(),
  /** The Conversation turn (its index, as sessions.conversation numbers turns) whose model call asked for the tool. */
  turn: z.number(),
  agent: z.string(),
});

/** One recorded workspace change (an fs_events row); its `seq` is the change's id (`capsem revert --change ID`). */
export const WorkspaceChangeSchema = z.object({
  seq: z.number(),
  at: z.string(),
  action: z.enum(['created', 'modified', 'deleted', 'restored']),
  path: z.string(),
  /** A summary row's count of paths inside its folder (.git/, node_modules/); null for one path. Summary rows have no content. */
  entries: z.number().nullable(),
  size: z.number().nullable(),
  beforeHash: z.string().nullable(),
  afterHash: z.string().nullable(),
  /** null: made outside any tool call (the user at the shell, or no tool was running). */
  source: ChangeSourceSchema.nullable(),
  /** Both sides' contents are kept, so the change shows as a diff and can be reverted; else why not. */
  diffable: z.boolean(),
  note: z.string().nullable(),
});
export type WorkspaceChange = z.infer<typeof WorkspaceChangeSchema>;

export const WorkspaceChangePageSchema = z.object({
  changes: z.array(WorkspaceChangeSchema),
  total: z.number(),
  nextOffset: z.number().nullable(),
  /** The baseline: files recorded when the session started, and when; null when the session has none (older session, no folder). */
  baseline: z.object({ at: z.string(), files: z.number() }).nullable(),
});
export type WorkspaceChangePage = z.infer<typeof WorkspaceChangePageSchema>;

/**
 * One hunk of a unified diff, lines prefixed ' ', '-', '+' or '\\' as a patch has them. Numbered as
 * jsdiff numbers them (its applyPatch takes the hunk as it is): a side with no lines still starts
 * at 1, where patch text writes 0.
 */
export const DiffHunkSchema = z.object({
  oldStart: z.number(),
  oldLines: z.number(),
  newStart: z.number(),
  newLines: z.number(),
  lines: z.array(z.string()),
});

/** One file's difference between two contents. */
export const FileDiffSchema = z.object({
  path: z.string(),
  status: z.enum(['added', 'modified', 'deleted', 'mode', 'unchanged']),
  oldMode: z.number().nullable(),
  newMode: z.number().nullable(),
  /** Not shown line by line: binary content, or a side the store does not keep (over the size cap). */
  binary: z.boolean(),
  note: z.string().nullable(),
  hunks: z.array(DiffHunkSchema),
  /** Hunks were left out past the line limit; the CLI's `capsem diff` prints the whole. */
  truncated: z.boolean(),
});
export type FileDiff = z.infer<typeof FileDiffSchema>;

/** What to diff or revert: one change, a turn (and every turn after it, for a revert), some paths, or the whole session. */
export const ChangeTargetSchema = z.discriminatedUnion('kind', [
  z.strictObject({ kind: z.literal('change'), seq: z.number().int().min(0) }),
  z.strictObject({ kind: z.literal('turn'), turn: z.number().int().min(0) }),
  z.strictObject({ kind: z.literal('paths'), paths: z.array(z.string().min(1).max(4096)).min(1).max(1000) }),
  z.strictObject({ kind: z.literal('session') }),
]);
export type ChangeTarget = z.infer<typeof ChangeTargetSchema>;

export const RevertResultSchema = z.object({
  /** Paths written back, with what was done (restored content, removed a file the change created). */
  restored: z.array(z.object({ path: z.string(), action: z.enum(['restored', 'removed']) })),
  /** Paths left as they are, and why (changed since in a way the revert would lose, content not kept). */
  refused: z.array(z.object({ path: z.string(), reason: z.string() })),
});
export type RevertResult = z.infer<typeof RevertResultSchema>;

export const SearchHitSchema = z.object({ kind: TableKindSchema, seq: z.number(), at: z.string(), snippet: z.string() });
export type SearchHit = z.infer<typeof SearchHitSchema>;

/** A chunk of a recorded terminal; the rest is fetched with `terminal.replay` from `next`. */
export const TranscriptPartSchema = z.object({
  /** [seconds, 'o' | 'r', data] as recorded (asciicast v2). */
  events: z.array(z.tuple([z.number(), z.enum(['o', 'r']), z.string()])),
  /** Where the next chunk starts (pass it as `from`), or null when this chunk is the last. */
  next: z.number().int().min(0).nullable(),
});
export type TranscriptPart = z.infer<typeof TranscriptPartSchema>;

/** An ended session's recorded terminal: its size and first chunk. */
export const TranscriptSchema = TranscriptPartSchema.extend({ width: z.number(), height: z.number() });
export type Transcript = z.infer<typeof TranscriptSchema>;

/** What a new session's terminal runs. */
export const TerminalChoiceSchema = z.enum(['shell', ...AGENT_NAMES]);
export type TerminalChoice = z.infer<typeof TerminalChoiceSchema>;

/** Every call: its params schema and its result schema. */
export const CALLS = {
  'sessions.list': { params: z.strictObject({}), result: z.array(SessionSummarySchema) },
  'sessions.info': { params: z.strictObject({ id: SessionIdParam }), result: SessionSummarySchema },
  /** A typed name or id to the one session id it means; unknown or ambiguous names fail with the candidates. */
  'sessions.resolve': { params: z.strictObject({ query: z.string().min(1).max(200) }), result: z.strictObject({ id: z.string() }) },
  /**
   * Starts a session and answers with its id as soon as it is entered, before its image is built
   * and its VM booted: how that goes arrives as `session.starting` events, and `terminal.attach`
   * waits for it. A session whose start fails ends crashed with the reason and frees its name.
   * `workspace` is a project folder on this machine (an absolute path: the Electron folder
   * picker's, or one typed or picked from `folders.recent` in browser mode) shared at /workspace;
   * null gives the session a fresh folder of its own. A folder is checked before anything is
   * entered: one that holds the user's whole home fails with `whole_home` until the user confirms
   * it (`wholeHome`); a missing one is `not_found`, a file `not_a_folder`, Capsem's own data `capsem_data`.
   * `agent` is what its terminal runs: a login shell or a coding agent (agent image only; its key
   * from the app's environment or the stored keys, kept by the session's proxy while the guest gets
   * a stand-in, and a missing key fails the call with nothing entered).
   */
  'sessions.start': {
    params: z.strictObject({
      name: z.string().min(1).max(64).nullable(),
      image: ImageKindSchema,
      workspace: z.string().min(1).max(4096).nullable().default(null),
      wholeHome: z.boolean().default(false),
      agent: TerminalChoiceSchema.default('shell'),
    }),
    result: z.strictObject({ id: z.string() }),
  },
  /**
   * The providers new sessions can have a key for, where each one's key comes from (the app's
   * environment, the stored keys, or none; `locked` when the only key is stored encrypted by the
   * desktop app and this process has no keychain to read it, as in browser mode), and where stored
   * keys are kept and how they are protected, said plainly. Never a key.
   */
  'keys.list': {
    params: z.strictObject({}),
    result: z.strictObject({
      store: z.string(),
      providers: z.array(
        z.strictObject({ id: z.string(), source: z.enum(['env', 'stored', 'locked', 'none']), variable: z.string().nullable() }),
      ),
    }),
  },
  /** Stores (adds or replaces) a provider's key for the sessions started from now on; a bad key is `bad_params`, an unknown provider `not_found`. */
  'keys.set': {
    params: z.strictObject({ provider: z.string().min(1).max(64), key: z.string().min(1).max(4096) }),
    result: z.strictObject({}),
  },
  /** Removes a provider's stored key; `removed` is false when none was stored. */
  'keys.remove': { params: z.strictObject({ provider: z.string().min(1).max(64) }), result: z.strictObject({ removed: z.boolean() }) },
  /**
   * The app's settings (CAPSEM_HOME/settings.json). `spareVm`: keep one agent-image VM booted
   * ahead for the next Start; `spareVmOff` says why it is off for this run whatever the setting
   * (CAPSEM_SPARE_VM=0, --no-spare-vm), or null.
   */
  'settings.get': { params: z.strictObject({}), result: SettingsResult },
  /** Changes the settings given; the spare VM follows at once (off discards the waiting one). */
  'settings.set': { params: z.strictObject({ spareVm: z.boolean().optional() }), result: SettingsResult },
  /**
   * Settings → Export (OpenTelemetry): the endpoint sessions are sent to as traces, the names of
   * the headers sent with them (never a value), the content switch, and what was sent, is queued
   * and was dropped for it. CAPSEM_OTLP_ENDPOINT in the app's environment overrides what is saved.
   */
  'otel.get': { params: z.strictObject({}), result: OtelSettingsResult },
  /**
   * Saves the export settings given: `endpoint` an http(s) URL, empty to stop exporting; `headers`
   * key=value lines added to (or replacing) the saved ones; `removeHeaders` by name. A bad URL or
   * header line is `bad_params` saying which; while CAPSEM_OTLP_ENDPOINT is set, `not_available`.
   */
  'otel.set': {
    params: z.strictObject({
      endpoint: z.string().max(2048).optional(),
      headers: z.string().max(16_384).optional(),
      removeHeaders: z.array(z.string().min(1).max(256)).max(64).optional(),
      content: z.boolean().optional(),
    }),
    result: OtelSettingsResult,
  },
  /** The project folders sessions were last started on, newest first, and whether each is still there. */
  'folders.recent': { params: z.strictObject({}), result: z.array(z.strictObject({ path: z.string(), exists: z.boolean() })) },
  /** Stops a running session; one still starting is stopped once its start is done. */
  'sessions.stop': { params: z.strictObject({ id: SessionIdParam }), result: z.strictObject({ status: SessionStatusSchema }) },
  /** Boots an ended session again; like sessions.start, it answers at once and reports its boot as `session.starting`. */
  'sessions.resume': { params: z.strictObject({ id: SessionIdParam }), result: z.strictObject({ id: z.string() }) },
  'sessions.rename': { params: z.strictObject({ id: SessionIdParam, name: z.string().min(1).max(64) }), result: SessionSummarySchema },
  /**
   * Imports a session archive or a bare session.db at an absolute path on this machine (Electron:
   * a dropped file's path from the preload's capsemFiles.pathFor). Every checksum is verified and
   * nothing is written unless all of it is good; a refusal is `bad_archive` with the reason. The
   * new session is read-only (status stopped, mode imported). Browser mode uploads to
   * BROWSER_IMPORT_PATH (browserMode.ts) instead, which stages the file and makes this same call.
   */
  'sessions.import': {
    params: z.strictObject({ path: z.string().min(1).max(4096) }),
    result: z.strictObject({ id: z.string(), name: z.string().nullable() }),
  },
  /** Writes the session archive; the result names the file. */
  'sessions.export': {
    params: z.strictObject({ id: SessionIdParam, format: z.enum(['archive', 'har', 'jsonl']) }),
    result: z.strictObject({ path: z.string(), bytes: z.number() }),
  },
  'events.page': {
    params: z.strictObject({
      id: SessionIdParam,
      kind: TableKindSchema,
      offset: z.number().int().min(0),
      limit: z.number().int().min(1).max(5000),
      filter: z.string().max(500).optional(),
    }),
    result: TablePageSchema,
  },
  'events.detail': { params: z.strictObject({ id: SessionIdParam, kind: TableKindSchema, seq: Seq }), result: EventDetailSchema },
  /** A stretch of a stored body, decoded, for bodies too large to load at once. */
  'events.body': {
    params: z.strictObject({
      id: SessionIdParam,
      eventId: z.string().regex(/^[0-9a-f]{12}$/),
      direction: z.enum(['request', 'response']),
      offset: z.number().int().min(0),
      length: z
        .number()
        .int()
        .min(1)
        .max(4 << 20),
    }),
    result: z.strictObject({ text: z.string(), offset: z.number(), total: z.number() }),
  },
  'sessions.timeline': { params: z.strictObject({ id: SessionIdParam }), result: TimelineSchema },
  /** A range of the Conversation's turns (the agent's story, subagents nested), for a virtualized list. */
  'sessions.conversation': {
    params: z.strictObject({ id: SessionIdParam, offset: z.number().int().min(0), limit: z.number().int().min(1).max(200) }),
    result: ConversationPageSchema,
  },
  /**
   * The index of the Conversation turn that holds an event: with `kind` null, `seq` is an event seq
   * as sessions.timeline numbers them (a turn's, a tool's); with `kind` model or tool, it is that
   * table's row seq (a search hit's, a table row's). null when no turn holds it.
   */
  'sessions.conversationFind': {
    params: z.strictObject({ id: SessionIdParam, seq: Seq, kind: z.enum(['model', 'tool']).nullable().default(null) }),
    result: z.strictObject({ index: z.number().nullable() }),
  },
  /** A stretch of a Conversation text that was cut (ConversationText's source and rowId), in characters. */
  'sessions.conversationText': {
    params: z.strictObject({
      id: SessionIdParam,
      source: ConversationTextSourceSchema,
      rowId: z.number().int().min(0),
      offset: z.number().int().min(0),
      length: z
        .number()
        .int()
        .min(1)
        .max(4 << 20),
    }),
    result: z.strictObject({ text: z.string(), offset: z.number(), total: z.number() }),
  },
  /** The session's workspace changes, in order, with what made each; `turn` or `path` narrows them. */
  'sessions.changes': {
    params: z.strictObject({
      id: SessionIdParam,
      offset: z.number().int().min(0),
      limit: z.number().int().min(1).max(500),
      turn: z.number().int().min(0).nullable().default(null),
      path: z.string().min(1).max(4096).nullable().default(null),
    }),
    result: WorkspaceChangePageSchema,
  },
  /** The diff of a target: a change's before/after; a turn's, a path's or the session's from before it to after it. */
  'sessions.diff': {
    params: z.strictObject({ id: SessionIdParam, target: ChangeTargetSchema }),
    result: z.array(FileDiffSchema),
  },
  /** Puts the workspace back as it was before the target, after keeping what is there now (itself a change that can be reverted). */
  'sessions.revert': {
    params: z.strictObject({ id: SessionIdParam, target: ChangeTargetSchema }),
    result: RevertResultSchema,
  },
  'sessions.cost': { params: z.strictObject({ id: SessionIdParam }), result: CostSchema },
  'sessions.search': {
    params: z.strictObject({ id: SessionIdParam, query: z.string().min(1).max(500) }),
    result: z.array(SearchHitSchema),
  },
  /**
   * Opens the session's terminal: live (a `terminal.screen` event with what it shows now, then its
   * output as terminal.output events) or, for an ended session, the first chunk of its transcript.
   * For a session still starting it answers once the start is done, or fails (`start_failed`) with
   * why it did not start.
   */
  'terminal.attach': {
    params: z.strictObject({ id: SessionIdParam, size: Size }),
    result: z.strictObject({ live: z.boolean(), transcript: TranscriptSchema.nullable() }),
  },
  /** The next chunk of an ended session's transcript, from a previous chunk's `next`; asked for at the window's pace. */
  'terminal.replay': { params: z.strictObject({ id: SessionIdParam, from: z.number().int().min(0) }), result: TranscriptPartSchema },
  'terminal.input': { params: z.strictObject({ id: SessionIdParam, data: z.string().max(1 << 16) }), result: z.strictObject({}) },
  'terminal.resize': { params: z.strictObject({ id: SessionIdParam, size: Size }), result: z.strictObject({}) },
  /** The window drew this many characters of terminal.output: the shell may run that much further ahead. */
  'terminal.ack': {
    params: z.strictObject({
      id: SessionIdParam,
      chars: z
        .number()
        .int()
        .min(1)
        .max(1 << 30),
    }),
    result: z.strictObject({}),
  },
  'terminal.detach': { params: z.strictObject({ id: SessionIdParam }), result: z.strictObject({}) },
  /** Starts `session.changed` for the list and `session.events` for the session, until unsubscribed. */
  'live.subscribe': { params: z.strictObject({ id: SessionIdParam.nullable() }), result: z.strictObject({}) },
} as const;

export type CallName = keyof typeof CALLS;
export type CallParams<N extends CallName> = z.input<(typeof CALLS)[N]['params']>;
export type CallResult<N extends CallName> = z.infer<(typeof CALLS)[N]['result']>;

/** Everything the host pushes to the window. */
export const EVENTS = {
  /**
   * A live terminal's screen and scrollback as the host holds them, sent first on every
   * terminal.attach: the window replaces what it shows with it, then appends terminal.output.
   */
  'terminal.screen': z.object({ id: z.string(), data: z.string() }),
  'terminal.output': z.object({ id: z.string(), data: z.string() }),
  'terminal.exit': z.object({ id: z.string(), code: z.number().nullable() }),
  /** The list changed (a session started, ended, was renamed, or its figures moved). */
  'session.changed': z.object({ session: SessionSummarySchema }),
  /**
   * A start (or resume) from the window moved on: building the image or booting (`progress`), done
   * with the terminal live (`ready`), or failed (`failed`, with why in `message`, the fix where
   * there is one). The list's `session.changed` follows each end.
   */
  'session.starting': z.object({
    id: z.string(),
    state: z.enum(['progress', 'ready', 'failed']),
    progress: StartProgressSchema.nullable(),
    message: z.string().nullable(),
  }),
  /** New rows in a subscribed session, per view, so open tables append without reloading. */
  'session.events': z.object({ id: z.string(), kinds: z.array(TableKindSchema), lastSeq: z.number() }),
  /**
   * A launch asked to show a session (`capsem open co-work1`, a capsem://session/ link, a second
   * launch). The query is a typed name or id: the page resolves it with `sessions.resolve`.
   */
  'app.open': z.object({ query: z.string().min(1).max(200) }),
} as const;

export type EventName = keyof typeof EVENTS;
export type EventPayload<N extends EventName> = z.infer<(typeof EVENTS)[N]>;

/** An error a call reports to the window: a code to branch on and a message to show. */
export const CallErrorSchema = z.object({
  code: z.string(),
  message: z.string(),
  candidates: z.array(z.object({ id: z.string(), name: z.string().nullable() })).optional(),
});
export type CallError = z.infer<typeof CallErrorSchema>;

/** What `window.capsem` is, in Electron (preload) and in browser mode (WebSocket client) alike. */
export interface CapsemApi {
  call<N extends CallName>(name: N, params: CallParams<N>): Promise<CallResult<N>>;
  on<N extends EventName>(name: N, listener: (payload: EventPayload<N>) => void): () => void;
  /** 'electron' or 'browser', and in browser mode why (no Electron runtime, or --browser). */
  readonly mode: { readonly kind: 'electron' | 'browser'; readonly reason?: string };
}

/**
 * Electron only: the preload's second, tiny surface (`window.capsemFiles`). A page cannot learn a
 * dropped or picked file's path by itself; this gives it for `sessions.import`, and a folder the
 * user picks in the system's dialog for `sessions.start`, and does nothing else (no reading, no
 * listing).
 */
export interface CapsemFiles {
  /** The file's path on disk, or '' for a File that is not backed by one. */
  pathFor(file: File): string;
  /** The system's folder picker, for a session's project folder: the chosen folder's path, or null if cancelled. */
  pickFolder(): Promise<string | null>;
}

/** Browser-mode wire messages (JSON text frames on the WebSocket). */
export const WireRequestSchema = z.strictObject({ id: z.number().int().min(0), call: z.string().max(100), params: z.unknown() });
export type WireRequest = z.infer<typeof WireRequestSchema>;
export type WireMessage =
  | { readonly id: number; readonly result: unknown }
  | { readonly id: number; readonly error: CallError }
  | { readonly event: EventName; readonly payload: unknown };

/**
 * The host core as the transports see it (the Electron IPC bridge and the browser-mode WebSocket):
 * `handle` validates params against CALLS and answers, or throws an error carrying a CallError.
 */
export interface HostCore {
  handle(name: string, params: unknown): Promise<unknown>;
  /**
   * A transport that has fallen behind (a page not reading its socket) returns a promise from its
   * listener, settled once it has caught up: terminal output waits for it, so the guest's shell
   * waits too instead of piling up in host memory.
   */
  subscribe(listener: <N extends EventName>(name: N, payload: EventPayload<N>) => void | Promise<void>): () => void;
}
