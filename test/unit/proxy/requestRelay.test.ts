import { PassThrough } from 'node:stream';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import type { BodyScanner, CredentialUse } from '../../../electron/credentials/credentialBroker.ts';
import { coalescedBody, scanBody } from '../../../electron/proxy/requestRelay.ts';

// The two stream pieces of one request's relay, against stand-in streams: a response's body
// pieces leave in as few writes as the event loop allows, and a request body that carries a
// stand-in where it does not belong stops there.

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

describe('scanned request bodies', () => {
  const use = (outcome: CredentialUse['outcome']): CredentialUse => ({
    provider: 'anthropic',
    where: 'body',
    host: 'example.com',
    outcome,
    credentialRef: 'k1',
  });

  async function fed(
    pieces: readonly string[],
    sightings: Record<string, CredentialUse>,
  ): Promise<{ forwarded: string; error: string | null; sighted: CredentialUse[] }> {
    const req = new PassThrough();
    const body = new PassThrough();
    const scanner: BodyScanner = { push: (chunk) => sightings[chunk.toString()] ?? null };
    const sighted: CredentialUse[] = [];
    scanBody(req, body, scanner, (u) => sighted.push(u));
    const out: Buffer[] = [];
    body.on('data', (c: Buffer) => out.push(c));
    const done = new Promise<string | null>((resolve) => {
      body.on('end', () => resolve(null));
      body.on('error', (err) => resolve(err.message));
    });
    for (const p of pieces) req.write(p);
    req.end();
    const error = await done;
    return { forwarded: Buffer.concat(out).toString(), error, sighted };
  }

  it('forwards the whole body and reports a sighting that was allowed', async () => {
    const result = await fed(['a', 'b', 'c'], { b: use('allowed-leak') });
    expect(result).toEqual({ forwarded: 'abc', error: null, sighted: [use('allowed-leak')] });
  });

  it('stops at a refused stand-in: that piece and the rest never reach the upstream', async () => {
    const result = await fed(['a', 'key', 'c'], { key: use('refused'), c: use('refused') });
    expect(result.forwarded).toBe('a');
    expect(result.error).toBe('the request body carries a stand-in for a provider key');
    expect(result.sighted).toEqual([use('refused')]);
  });
});
