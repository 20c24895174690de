import { agentStory } from './steps/agentStory.ts';
import { commands } from './steps/commands.ts';
import { credentialUses } from './steps/credentialUses.ts';
import { dnsLookups } from './steps/dnsLookups.ts';
import { exchangeBodies } from './steps/exchangeBodies.ts';
import { exchangeRow } from './steps/exchangeRow.ts';
import { fileChanges } from './steps/fileChanges.ts';
import { mcpCalls } from './steps/mcpCalls.ts';
import { modelCalls } from './steps/modelCalls.ts';
import { policyDecision } from './steps/policyDecision.ts';
import type { EventKind, EventStep, ExchangeStep, RecordingStep } from './steps/step.ts';
import { webSocketFrames } from './steps/webSocketFrames.ts';

export type { PolicyInUse, RecordingStep, StepAction } from './steps/step.ts';

// The recording, listed once, as mitmproxy lists its addons: every step a session's events pass
// through, in the order they run. The recorder (sessionRecorder.ts) runs this list and nothing
// else, `capsem dev seed` feeds it synthetic exchanges, and /v1/pipeline describes it.
//
// An exchange's steps all read it before any writes: the exchange's own row (written first, every
// other row hangs off its event id) carries columns from several steps, the trace from model-calls
// among them, and a step whose parse fails is named in that row's parse_error. Their rows are then
// appended in this order: model-calls before mcp (a model call claims its exchange) and before
// agent-story (which reads what model-calls read of it), the broker's rows after the parsers', and
// the bodies last, when their memory is handed to the writer thread.

export const RECORDING_PIPELINE: readonly RecordingStep[] = [
  policyDecision,
  exchangeRow,
  modelCalls,
  mcpCalls,
  agentStory,
  credentialUses,
  exchangeBodies,
  webSocketFrames,
  dnsLookups,
  fileChanges,
  commands,
];

/** The exchange steps, in list order. */
export const EXCHANGE_STEPS: readonly ExchangeStep[] = RECORDING_PIPELINE.filter((s): s is ExchangeStep => s.handles === 'exchange');

type OtherKind = Exclude<EventKind, 'exchange'>;
const byKind = new Map<OtherKind, readonly RecordingStep[]>();

/** The steps that handle one kind of event besides exchanges, in list order (a frame passes often: looked up once). */
export function stepsFor<K extends OtherKind>(kind: K): readonly EventStep<K>[] {
  let steps = byKind.get(kind);
  if (!steps) byKind.set(kind, (steps = RECORDING_PIPELINE.filter((s) => s.handles === kind)));
  return steps as unknown as readonly EventStep<K>[];
}
