import { afterEach, describe, expect, it } from 'vitest';
import { ExportLedger } from '../../../electron/otel/exportLedger.ts';
import { tempHome } from '../../helpers/tempHome.ts';

// The disk queue: a span is queued once per endpoint whoever reads it again; the queue keeps to
// its bound by dropping its oldest bodies and says what it dropped; a body leaves only when the
// endpoint took it or refused it for good; a claim keeps a second sender off a body.

const home = tempHome();
afterEach(() => home.remove());
const ENDPOINT = 'http://collector.test:4318/v1/traces';
const spans = (from: number, n: number): { spanId: string }[] =>
  Array.from({ length: n }, (_, i) => ({ spanId: (from + i).toString(16).padStart(16, '0') }));
const body = (size: number) => (): Uint8Array => new Uint8Array(size);

describe('ExportLedger', () => {
  it('queues a span once, in bodies of at most the given size', () => {
    const ledger = ExportLedger.open(home);
    expect(ledger.enqueue(ENDPOINT, 's1', spans(0, 10), body(100), 4)).toBe(10);
    expect(ledger.enqueue(ENDPOINT, 's1', spans(5, 10), body(100), 4)).toBe(5);
    expect(ledger.status(ENDPOINT)).toMatchObject({ queuedBatches: 5, queuedSpans: 15 });
    // Another endpoint is another queue.
    expect(ledger.enqueue('http://other.test/v1/traces', 's1', spans(0, 10), body(100))).toBe(10);
    ledger.close();
  });

  it('drops its oldest bodies past its bound, and keeps how many spans and why', () => {
    const ledger = ExportLedger.open(home, 1000);
    ledger.enqueue(ENDPOINT, 'old', spans(0, 3), body(400), 3);
    ledger.enqueue(ENDPOINT, 'mid', spans(10, 3), body(400), 3);
    ledger.enqueue(ENDPOINT, 'new', spans(20, 3), body(400), 3);
    const status = ledger.status(ENDPOINT);
    expect(status).toMatchObject({ queuedBatches: 2, queuedBytes: 800, droppedSpans: 3 });
    expect(status.drops).toEqual([
      expect.objectContaining({ sessionId: 'old', spans: 3, reason: `the queue for ${ENDPOINT} was over 1000 bytes` }),
    ]);
    ledger.close();
  });

  it('hands a body to one sender at a time, and lets it go when sent or refused', () => {
    const a = ExportLedger.open(home);
    const b = ExportLedger.open(home);
    a.enqueue(ENDPOINT, 's1', spans(0, 2), body(10), 1);
    const first = a.claimNext(ENDPOINT)!;
    const second = b.claimNext(ENDPOINT)!;
    expect(second.id).not.toBe(first.id);
    // A third sender finds nothing free; a sender takes up its own claim again (its retry).
    const c = ExportLedger.open(home);
    expect(c.claimNext(ENDPOINT)).toBeNull();
    c.close();
    expect(b.claimNext(ENDPOINT)!.id).toBe(second.id);
    a.sent(ENDPOINT, first);
    b.refused(ENDPOINT, second, 'http://collector.test answered 400 Bad Request');
    expect(a.status(ENDPOINT)).toMatchObject({ queuedBatches: 0, sentSpans: 1, droppedSpans: 1 });
    a.close();
    b.close();
  });
});
