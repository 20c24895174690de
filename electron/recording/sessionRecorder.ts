import type { Exchange } from '../proxy/exchange.ts';
import type { RowOf } from '../store/sessionSchema.ts';
import type { SessionWriter } from '../store/sessionWriter.ts';
import { decodeBody, plainBody, type DecodedBody } from '../telemetry/decodeBody.ts';
import type { ProviderTable } from '../telemetry/providers/index.ts';
import type { FrameRow } from '../telemetry/upgradedStream.ts';
import type { FileVersion } from '../changes/workspaceEntry.ts';
import { EXCHANGE_STEPS, stepsFor } from './pipeline.ts';
import { ExchangeFacts, header } from './steps/exchangeFacts.ts';
import { RecordingState, type EventKind, type ExchangeRows, type RecordingEvents, type RowSink } from './steps/step.ts';

// Runs the recording pipeline (pipeline.ts) on a session's events: each finished exchange, its
// bodies decoded, through the exchange steps; a frame, a lookup, a batch of file changes or a
// command through the steps that handle its kind. What each step writes is the step's own module.

/** What the recorder writes with: the session's writer, or anything that appends as it does. */
export type RecorderSink = RowSink & Pick<SessionWriter, 'reserveEventId'>;

export class SessionRecorder {
  private readonly state: RecordingState;
  failures = 0;
  lastFailure: string | null = null;

  constructor(
    private readonly sink: RecorderSink,
    private readonly bodyCap: number,
    providers?: () => ProviderTable,
  ) {
    this.state = new RecordingState(providers);
  }

  /** Exchanges are recorded in the order they finished, even though decoding is asynchronous. */
  private queue: Promise<void> = Promise.resolve();
  /** Exchanges in the queue, waiting for their bodies to be decoded. */
  private waiting = 0;

  record(ex: Exchange): Promise<void> {
    const requestCoding = header(ex.requestHeaders, 'content-encoding');
    const responseCoding = header(ex.responseHeaders, 'content-encoding');
    const request = plainBody(ex.requestBody.bytes, requestCoding);
    const response = plainBody(ex.responseBody.bytes, responseCoding);
    // Nothing to decode and nobody ahead: recorded at once, without a turn through the queue.
    if (request && response && this.waiting === 0) {
      try {
        this.write(new ExchangeFacts(ex, request, response));
      } catch (err) {
        this.lose(err);
      }
      return this.queue;
    }
    this.waiting += 1;
    this.queue = this.queue.then(async () => {
      try {
        const decoded: [DecodedBody, DecodedBody] = await Promise.all([
          request ?? decodeBody(ex.requestBody.bytes, requestCoding, this.bodyCap),
          response ?? decodeBody(ex.responseBody.bytes, responseCoding, this.bodyCap),
        ]);
        this.write(new ExchangeFacts(ex, ...decoded));
      } catch (err) {
        this.lose(err);
      } finally {
        this.waiting -= 1;
      }
    });
    return this.queue;
  }

  /** Resolves once every exchange handed over so far is in the writer's queue. */
  settled(): Promise<void> {
    return this.queue;
  }

  /** An id for an exchange's row, taken before the exchange ends (its WebSocket frames are written under it meanwhile). */
  reserveEventId(): string {
    return this.sink.reserveEventId();
  }

  /** One frame of an upgraded connection, written as it passes; a frame that cannot be is counted lost. */
  frame(netEventId: string, row: FrameRow): void {
    try {
      this.event('frame', { netEventId, row });
    } catch (err) {
      this.lose(err);
    }
  }

  /** An event other than an exchange, through the steps that handle its kind. */
  event<K extends Exclude<EventKind, 'exchange'>>(kind: K, event: RecordingEvents[K]): void {
    for (const step of stepsFor(kind)) for (const { table, row } of step.record(event, this.state)) this.sink.append(table, row as never);
  }

  /** The versions the session's files start at (its baseline, or where a resumed session left off): each change's before. */
  seedFileVersions(versions: Iterable<readonly [string, FileVersion]>): void {
    this.state.fsRows.seed(versions);
  }

  /** File changes are held for a summary until their batch ends. */
  get holdingFsChanges(): boolean {
    return this.state.fsRows.holding;
  }

  /** Counted and kept in session_meta at close: `capsem check` reports a session with losses. */
  lose(err: unknown): void {
    this.failures += 1;
    this.lastFailure = err instanceof Error ? err.message : String(err);
  }

  /**
   * Record first, interpret second: every step reads the exchange before any row is written, and a
   * step that fails costs only its own rows, named in the exchange row's parse_error. The exchange's
   * own row is appended first, then each step's rows in the list's order.
   */
  private write(facts: ExchangeFacts): void {
    const errors: string[] = [];
    const made: ExchangeRows[] = [];
    for (const step of EXCHANGE_STEPS) {
      try {
        made.push(step.record(facts, this.state));
      } catch (err) {
        errors.push(`recording this exchange's ${step.name} rows failed: ${err instanceof Error ? err.message : String(err)}`);
      }
    }
    const columns = Object.assign({}, ...made.map((m) => m.columns)) as RowOf<'net_events'>;
    // Set on the fresh object, not spread into another: V8 copies a spread of this many columns
    // on its slow path, 20 us an exchange, a fifth of what recording a small request cost.
    columns.parse_error = errors.length === 0 ? facts.ex.parseError : [facts.ex.parseError, ...errors].filter(Boolean).join('; ');
    const net = this.sink.append('net_events', columns);
    if (!net) return;
    for (const { rows } of made) rows?.(net.eventId!, this.sink);
  }
}
