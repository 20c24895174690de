import { setImmediate as nextTurn } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { coalescedBody } from '../../../electron/proxy/requestRelay.ts';

// A response's body pieces leave in as few writes as the event loop allows, against a stand-in
// response (the request body's check is in requestBodyCheck.test.ts).

/** A response whose socket counts corks and how many bytes wait in it. */
function response(full = false): { res: Parameters<typeof coalescedBody>[0]; log: string[] } {
  const log: string[] = [];
  const socket = { writableLength: 0, cork: () => log.push('cork'), uncork: () => log.push('uncork') };
  const res = {
    socket,
    write: (chunk: Buffer) => {
      log.push(`write ${chunk.length}`);
      socket.writableLength += chunk.length;
      return !full;
    },
    end: () => log.push('end'),
  } as unknown as Parameters<typeof coalescedBody>[0];
  return { res, log };
}

describe('coalesced response bodies', () => {
  it("corks an HTTP/1.1 client's socket for one event-loop turn, so the turn's pieces leave as one write", async () => {
    const { res, log } = response();
    const body = coalescedBody(res, true);
    expect(body.write(Buffer.alloc(10))).toBe(true);
    expect(body.write(Buffer.alloc(20))).toBe(true);
    expect(log).toEqual(['cork', 'write 10', 'write 20']);
    await nextTurn();
    expect(log).toEqual(['cork', 'write 10', 'write 20', 'uncork']);
  });

  it('lets the pieces go once 64 KiB wait, and at once when the client is full', () => {
    const { res, log } = response();
    const body = coalescedBody(res, true);
    body.write(Buffer.alloc(40 << 10));
    body.write(Buffer.alloc(30 << 10));
    expect(log).toEqual(['cork', `write ${40 << 10}`, `write ${30 << 10}`, 'uncork']);
    const full = response(true);
    expect(coalescedBody(full.res, true).write(Buffer.alloc(1))).toBe(false);
    expect(full.log).toEqual(['cork', 'write 1', 'uncork']);
  });

  it('ends while still corked, so the end joins the last write', () => {
    const { res, log } = response();
    const body = coalescedBody(res, true);
    body.write(Buffer.alloc(5));
    body.end();
    expect(log).toEqual(['cork', 'write 5', 'end', 'uncork']);
  });

  it('never corks a connection that HTTP/2 streams share', () => {
    const { res, log } = response();
    coalescedBody(res, false).write(Buffer.alloc(5));
    expect(log).toEqual(['write 5']);
  });
});
