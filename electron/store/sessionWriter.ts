import { EventEmitter } from 'node:events';
import { existsSync, rmSync } from 'node:fs';
import type { Worker } from 'node:worker_threads';
import { BatchMemory } from './batchMemory.ts';
import { EventIdMinter } from './eventIds.ts';
import { siblingModule, startModuleWorker } from './moduleWorker.ts';
import { sessionCommits } from './sessionCommits.ts';
import { layoutOf } from './rowLayout.ts';
import type { RowOf, SessionTable } from './sessionSchema.ts';
import type { AnsweredToolCall, BatchRows, CellValue, FromWorker, RejectedRow, RowCounts, ToWorker, WriterInit } from './writerProtocol.ts';

export interface WriterLimits {
  /** A batch is sent to the writer thread once it holds this many rows... */
  readonly maxBatchRows: number;
  /** ...or this many bytes... */
  readonly maxBatchBytes: number;
  /** ...or once its first row is this old: every row is readable within this many ms. */
  readonly maxBatchDelayMs: number;
  /** Above this many queued bytes `needsDrain` is true: producers should pause their sources. */
  readonly highWaterBytes: number;
  /** Above this many queued bytes rows are dropped and counted, never silently. */
  readonly hardLimitBytes: number;
}

export const DEFAULT_WRITER_LIMITS: WriterLimits = {
  maxBatchRows: 4096,
  maxBatchBytes: 8 << 20,
  // Each batch costs a round trip to the writer thread and a commit: shorter batches cost the proxy
  // CPU on every recorded request, and a person watching a live session sees no difference.
  maxBatchDelayMs: 50,
  highWaterBytes: 64 << 20,
  hardLimitBytes: 256 << 20,
};

export interface Appended {
  readonly id: number;
  /** 0 for tables that are not session events (bodies, rule rows, items). */
  readonly seq: number;
  readonly eventId: string | null;
}

export interface WriterStats {
  appended: number;
  committed: number;
  dropped: number;
  rejected: number;
  /** Rows not written because session.db cannot be written (see `unwritable`), in all and by table. */
  lost: number;
  lostByTable: RowCounts;
  queuedBytes: number;
  /** The highest seq whose row, and every row before it, is on disk. */
  committedSeq: number;
}

export interface CommitInfo {
  readonly rows: number;
  readonly committedSeq: number;
  readonly rejected: readonly RejectedRow[];
}

export class WriterClosedError extends Error {
  override name = 'WriterClosedError';
}

interface PendingBatch {
  rows: BatchRows;
  answered: AnsweredToolCall[];
  count: number;
  bytes: number;
  lastSeq: number;
  memory: BatchMemory;
}

/**
 * The one writer of a live session.db. `append` is synchronous and never touches disk: rows are
 * batched here and committed by a worker thread, one transaction per batch.
 */
export class SessionWriter extends EventEmitter<{ commit: [CommitInfo]; error: [Error]; unwritable: [reason: string] }> {
  readonly stats: WriterStats = {
    appended: 0,
    committed: 0,
    dropped: 0,
    rejected: 0,
    lost: 0,
    lostByTable: {},
    queuedBytes: 0,
    committedSeq: 0,
  };
  private seq: number;
  private readonly ids: Partial<Record<SessionTable, number>>;
  private readonly eventIds: EventIdMinter;
  private batch: PendingBatch;
  private batchNo = 0;
  private timer: NodeJS.Timeout | null = null;
  /** Batches with the writer thread, by number: only what their commit settles, never their rows. */
  private readonly inFlight = new Map<number, Pick<PendingBatch, 'bytes' | 'lastSeq'>>();
  private readonly flushWaiters: { batchNo: number; resolve: () => void; reject: (e: Error) => void }[] = [];
  private drainWaiters: (() => void)[] = [];
  private closing: Promise<void> | null = null;
  private failure: Error | null = null;
  private unwritableReason: string | null = null;

  private constructor(
    private readonly dbPath: string,
    private readonly worker: Worker,
    private readonly limits: WriterLimits,
    ready: Extract<FromWorker, { kind: 'ready' }>,
  ) {
    super();
    this.seq = ready.maxSeq;
    this.stats.committedSeq = ready.maxSeq;
    this.ids = { ...ready.maxIds };
    this.eventIds = new EventIdMinter(ready.nextEventId);
    this.batch = this.emptyBatch();
    worker.on('message', (m: FromWorker) => this.onMessage(m));
    worker.on('error', (err) => this.fail(err));
    worker.on('exit', (code) => {
      if (!this.closing || this.inFlight.size > 0) this.fail(new Error(`session writer thread exited (code ${code})`));
    });
  }

  /**
   * Opens (creating and migrating as needed) the session.db at `dbPath` for writing. A file this
   * open created and could not finish holds no row: it is removed with its -wal, -shm and reserve,
   * so a start that failed (a full disk) leaves no half-made session.db to trip a reader or a resume.
   */
  static async open(dbPath: string, meta: Record<string, string> = {}, limits: Partial<WriterLimits> = {}): Promise<SessionWriter> {
    const created = !existsSync(dbPath);
    const init: WriterInit = { dbPath, meta };
    const worker = startModuleWorker(siblingModule(import.meta.url, 'writerWorker'), { workerData: init });
    try {
      const ready = await new Promise<Extract<FromWorker, { kind: 'ready' }>>((resolve, reject) => {
        const onMessage = (m: FromWorker): void => {
          worker.off('error', onError);
          if (m.kind === 'ready') resolve(m);
          else reject(new Error(m.kind === 'failed' ? m.error : `unexpected ${m.kind} from writer thread`));
        };
        const onError = (err: Error): void => reject(err);
        worker.once('message', onMessage);
        worker.once('error', onError);
      });
      return new SessionWriter(dbPath, worker, { ...DEFAULT_WRITER_LIMITS, ...limits }, ready);
    } catch (err) {
      await worker.terminate();
      if (created) for (const suffix of ['', '-wal', '-shm', '-reserve']) rmSync(`${dbPath}${suffix}`, { force: true });
      throw err;
    }
  }

  /**
   * Why session.db cannot be written ("cannot write session.db: database or disk is full"), or
   * null. Set when a commit fails for the disk, announced once by the `unwritable` event; from then
   * on no row is written and every row appended is counted in `stats.lost`.
   */
  get unwritable(): string | null {
    return this.unwritableReason;
  }

  /**
   * True while the queue is above its high-water mark; wait on `drained()` before producing more.
   * Never once the writer thread has failed: nothing will drain, and the producer must not wait on it.
   */
  get needsDrain(): boolean {
    return this.failure === null && this.stats.queuedBytes >= this.limits.highWaterBytes;
  }

  drained(): Promise<void> {
    if (!this.needsDrain) return Promise.resolve();
    return new Promise((resolve) => this.drainWaiters.push(resolve));
  }

  /**
   * Queues one row. Returns its id, seq and event_id, or null when the queue is past its hard
   * limit and the row was dropped (counted in `stats.dropped` and recorded in session_meta), or
   * when session.db cannot be written (counted in `stats.lost`).
   * With `handOver`, the caller gives up the row's byte cells: their memory moves to the writer
   * thread without a copy (a large body would otherwise be copied once more) and reads as empty
   * here afterwards.
   */
  append<T extends SessionTable>(table: T, row: RowOf<T>, options?: { readonly handOver?: boolean }): Appended | null {
    if (this.failure) throw this.failure;
    if (this.closing) throw new WriterClosedError('session writer is closed');
    if (this.unwritableReason) {
      this.countLost({ [table]: 1 });
      return null;
    }
    const layout = layoutOf(table);
    const cells: CellValue[] = (this.batch.rows[table] ??= []);
    const start = cells.length;
    const bytes = layout.pack(row as Record<string, CellValue | undefined>, cells);
    if (this.stats.queuedBytes + bytes > this.limits.hardLimitBytes) {
      cells.length = start;
      this.stats.dropped += 1;
      return null;
    }
    for (const i of layout.byteIndexes) {
      const value = cells[start + i];
      if (value instanceof Uint8Array) cells[start + i] = this.batch.memory.carry(value, options?.handOver === true);
    }
    let id = 0;
    if (layout.idIndex >= 0) {
      id = (this.ids[table] ?? 0) + 1;
      this.ids[table] = id;
      cells[start + layout.idIndex] = id;
    }
    const seq = layout.seqIndex >= 0 ? ++this.seq : 0;
    if (seq) cells[start + layout.seqIndex] = seq;
    let eventId: string | null = null;
    if (layout.eventIdIndex >= 0) {
      eventId = (cells[start + layout.eventIdIndex] as string | null) ?? this.eventIds.mint();
      cells[start + layout.eventIdIndex] = eventId;
    }
    this.batch.count += 1;
    this.batch.bytes += bytes;
    if (seq) this.batch.lastSeq = seq;
    this.stats.appended += 1;
    this.stats.queuedBytes += bytes;
    if (this.batch.count >= this.limits.maxBatchRows || this.batch.bytes >= this.limits.maxBatchBytes) this.dispatch();
    else this.timer ??= setTimeout(() => this.dispatch(), this.limits.maxBatchDelayMs);
    return { id, seq, eventId };
  }

  /**
   * Marks a native tool call as responded (error when its result says the tool failed), in the
   * same commit as the rows appended before it: a tool call is appended when the model asks for it
   * and answered by a later exchange, and the ledger's status column should say so where it is read.
   */
  answerToolCall(callId: string, preview: string | null, isError: boolean): void {
    if (this.failure) throw this.failure;
    if (this.closing) throw new WriterClosedError('session writer is closed');
    if (this.unwritableReason) return;
    this.batch.answered.push({ callId, preview, isError });
    this.batch.count += 1;
    if (this.batch.count >= this.limits.maxBatchRows) this.dispatch();
    else this.timer ??= setTimeout(() => this.dispatch(), this.limits.maxBatchDelayMs);
  }

  /** An event id for a row appended later (under `event_id`), so rows written before it can name it. */
  reserveEventId(): string {
    return this.eventIds.mint();
  }

  /** Resolves once every row appended so far is committed, or counted lost when session.db cannot be written. */
  flush(): Promise<void> {
    if (this.failure) return Promise.reject(this.failure);
    if (this.batch.count > 0) this.dispatch();
    const target = this.batchNo;
    const done = [...this.inFlight.keys()].every((n) => n > target);
    if (done) return Promise.resolve();
    return new Promise((resolve, reject) => this.flushWaiters.push({ batchNo: target, resolve, reject }));
  }

  /** Commits what is queued, records the writer's counters (and `meta`), checkpoints, syncs fully and closes. */
  close(meta: Record<string, string> = {}): Promise<void> {
    this.closing ??= this.flush().then(
      () =>
        new Promise<void>((resolve, reject) => {
          const closing = {
            ...meta,
            writer_dropped: String(this.stats.dropped),
            writer_rejected: String(this.stats.rejected),
            writer_lost: String(this.stats.lost),
            ...(this.unwritableReason
              ? { writer_unwritable: this.unwritableReason, writer_lost_net_events: String(this.stats.lostByTable.net_events ?? 0) }
              : {}),
            closed_at: new Date().toISOString(),
          };
          this.worker.once('message', (m: FromWorker) =>
            m.kind === 'closed' ? resolve() : reject(new Error(`writer close failed: ${m.kind === 'failed' ? m.error : m.kind}`)),
          );
          this.post({ kind: 'close', meta: closing });
        }),
    );
    return this.closing;
  }

  private emptyBatch(): PendingBatch {
    return { rows: {}, answered: [], count: 0, bytes: 0, lastSeq: 0, memory: new BatchMemory() };
  }

  private post(message: ToWorker, transfer: ArrayBuffer[] = []): void {
    this.worker.postMessage(message, transfer);
  }

  private dispatch(): void {
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = null;
    }
    if (this.batch.count === 0) return;
    const batch = this.batch;
    this.batch = this.emptyBatch();
    this.batchNo += 1;
    this.inFlight.set(this.batchNo, { bytes: batch.bytes, lastSeq: batch.lastSeq });
    this.post({ kind: 'batch', batchNo: this.batchNo, rows: batch.rows, answered: batch.answered }, batch.memory.transfer);
  }

  private onMessage(m: FromWorker): void {
    if (m.kind === 'failed') return this.fail(new Error(m.error));
    if (m.kind !== 'committed' && m.kind !== 'lost') return;
    const batch = this.inFlight.get(m.batchNo);
    if (!batch) return;
    this.inFlight.delete(m.batchNo);
    this.stats.queuedBytes -= batch.bytes;
    if (m.kind === 'lost') {
      this.countLost(m.rows);
      if (this.unwritableReason === null) {
        this.unwritableReason = m.reason;
        this.emit('unwritable', m.reason);
      }
    } else {
      this.stats.committed += m.rows;
      this.stats.rejected += m.rejected.length;
      if (batch.lastSeq) this.stats.committedSeq = batch.lastSeq;
      this.emit('commit', { rows: m.rows, committedSeq: this.stats.committedSeq, rejected: m.rejected });
      sessionCommits.emit('commit', this.dbPath);
    }
    const oldest = this.inFlight.size > 0 ? Math.min(...this.inFlight.keys()) : Infinity;
    for (let i = this.flushWaiters.length - 1; i >= 0; i--) {
      const waiter = this.flushWaiters[i]!;
      if (waiter.batchNo < oldest) {
        this.flushWaiters.splice(i, 1);
        waiter.resolve();
      }
    }
    if (!this.needsDrain && this.drainWaiters.length > 0) {
      const waiters = this.drainWaiters;
      this.drainWaiters = [];
      for (const resolve of waiters) resolve();
    }
  }

  private countLost(rows: RowCounts): void {
    for (const [table, n] of Object.entries(rows) as [SessionTable, number][]) {
      this.stats.lostByTable[table] = (this.stats.lostByTable[table] ?? 0) + n;
      this.stats.lost += n;
    }
  }

  private fail(err: Error): void {
    if (this.failure) return;
    this.failure = err;
    for (const waiter of this.flushWaiters.splice(0)) waiter.reject(err);
    for (const resolve of this.drainWaiters.splice(0)) resolve();
    if (this.listenerCount('error') > 0) this.emit('error', err);
  }
}
