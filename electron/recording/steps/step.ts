import type { GuestLookup } from '../../proxy/guestDns.ts';
import type { PolicyDocument } from '../../policy/policy.ts';
import { ToolLedger } from '../../proxy/toolLedger.ts';
import type { RowOf, SessionTable } from '../../store/sessionSchema.ts';
import type { SessionWriter } from '../../store/sessionWriter.ts';
import { BUILT_IN_TABLE, type ProviderTable } from '../../telemetry/providers/index.ts';
import type { FrameRow } from '../../telemetry/upgradedStream.ts';
import { FsEventRows, type FsChange } from '../fsEventRows.ts';
import { StoryMemory } from '../storyMemory.ts';
import type { ExecRun } from './commandRun.ts';
import type { ExchangeFacts } from './exchangeFacts.ts';

// The shape of a recording step: what it handles, what it reads and the tables it writes, and the
// function that turns one event of its kind into rows. The list itself is ../pipeline.ts.

/** The invocation action vocabulary of ../shared/spec/session-api.md, as /v1/plugins lists it. */
export type StepAction = 'allow' | 'deny' | 'skip' | 'modify' | 'observe';

/** One row for one table, as a step returns it. */
export type TableRow = { [T in SessionTable]: { readonly table: T; readonly row: RowOf<T> } }[SessionTable];

/** What a step appends rows with. */
export type RowSink = Pick<SessionWriter, 'append' | 'answerToolCall'>;

/** A WebSocket frame as it passes, under the row of the exchange that upgraded. */
export interface FrameEvent {
  readonly netEventId: string;
  readonly row: FrameRow;
}

/**
 * The guest agent's file changes, or the end of its batch (the changes held for a summary become
 * rows), or a write the host made in the shared folder itself (a revert's 'restored' row), which
 * the guest does not report.
 */
export type FsEvent = { readonly changes: readonly FsChange[] } | { readonly batchEnd: true } | { readonly hostWrote: RowOf<'fs_events'> };

/** The events a session's recording is made of, by kind; a step handles one kind. */
export interface RecordingEvents {
  readonly exchange: ExchangeFacts;
  readonly frame: FrameEvent;
  readonly lookup: GuestLookup;
  readonly fs: FsEvent;
  readonly exec: ExecRun;
}
export type EventKind = keyof RecordingEvents;

/** The policy file in use, or why it could not be read: the pipeline is described either way. */
export type PolicyInUse =
  { readonly document: PolicyDocument; readonly source: string } | { readonly error: string; readonly source: string };

/** What the recorder remembers across the events of one session. */
export class RecordingState {
  constructor(
    /** The providers as the policy now declares them (it reloads): which requests are model calls, whose, and how priced. */
    readonly providers: () => ProviderTable = () => BUILT_IN_TABLE,
  ) {}

  /** The session's tool calls: which call a result answers, in which trace, and whether it was recorded already. */
  readonly tools = new ToolLedger();
  /** The trace of the last model call, which the MCP calls after it join. */
  lastTrace: string | null = null;
  /** The names MCP servers gave themselves, by host:port. */
  readonly mcpServers = new Map<string, string>();
  /** The guest's file changes held for a summary until their batch ends. */
  readonly fsRows = new FsEventRows();
  /** What each agent's story has been told already. */
  readonly story = new StoryMemory();
}

/**
 * What an exchange step makes of an exchange: columns of the exchange's own net_events row, and
 * rows of its own appended under that row's event id. Every parse happens before it returns; `rows`
 * only appends, so a parser that fails costs its step's rows and nothing else.
 */
export interface ExchangeRows {
  readonly columns?: Partial<RowOf<'net_events'>>;
  readonly rows?: (eventId: string, sink: RowSink) => void;
}

interface StepDescription {
  /** Unique in the list; the name /v1/pipeline shows and a parse_error names. */
  readonly name: string;
  /** What of its event the step reads. */
  readonly reads: string;
  /** The tables it writes rows or columns of. */
  readonly writes: readonly SessionTable[];
  /** For /v1/pipeline and /v1/plugins: what it does, as Cortex describes a plugin. */
  readonly description: string;
  readonly capabilities: readonly string[];
  readonly actions: readonly StepAction[];
  readonly readsBody: boolean;
  /** Its runtime config, what it would do now; never a key. */
  readonly config: (inUse: PolicyInUse) => Record<string, unknown>;
}

export interface ExchangeStep extends StepDescription {
  readonly handles: 'exchange';
  readonly record: (facts: ExchangeFacts, state: RecordingState) => ExchangeRows;
}

export interface EventStep<K extends Exclude<EventKind, 'exchange'>> extends StepDescription {
  readonly handles: K;
  readonly record: (event: RecordingEvents[K], state: RecordingState) => readonly TableRow[];
}

export type RecordingStep = ExchangeStep | { [K in Exclude<EventKind, 'exchange'>]: EventStep<K> }[Exclude<EventKind, 'exchange'>];

/** The config of a step whose work does not depend on the policy: where it writes. */
export const writesTo = (tables: readonly SessionTable[]) => (): Record<string, unknown> => ({ store: 'session.db', tables });

export const NO_ROWS: ExchangeRows = {};
