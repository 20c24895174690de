import { createServer as createHttpServer } from 'node:http';
import { connect } from 'node:net';
import { describe, expect, it } from 'vitest';
import { admitPeer, homeOwner, listenOnLoopback, type LoopbackOptions, type Refusal } from '../../../electron/platform/loopbackListener.ts';
import type { PeerLookup } from '../../../electron/platform/socketTable.ts';
import { tempHome } from '../../helpers/tempHome.ts';

const OWNER = { uid: 1000 };

describe('who is admitted', () => {
  it('admits the owner alone, and tells anyone else which uid is served and which uid they are', () => {
    expect(admitPeer({ kind: 'user', uid: 1000 }, OWNER, 'owner')).toEqual({ admit: true });
    expect(admitPeer({ kind: 'user', uid: 0 }, OWNER, 'owner')).toEqual({
      admit: false,
      uid: 0,
      reason: 'refused: this server answers only the user who owns CAPSEM_HOME (uid 1000); this connection is from uid 0',
    });
  });

  it('closes on a peer that is gone, with nothing to say', () => {
    expect(admitPeer({ kind: 'gone' }, OWNER, 'owner')).toEqual({ admit: false, reason: null });
  });

  it('refuses an unknown peer under the owner rule, saying why and what would serve it; browser mode leaves it to its token', () => {
    const unknown: PeerLookup = { kind: 'unknown', reason: '/proc/net/tcp cannot be read on this system' };
    const refused = admitPeer(unknown, OWNER, 'owner');
    expect(refused).toMatchObject({ admit: false, reason: expect.stringContaining('/proc/net/tcp cannot be read on this system') });
    expect(refused).toMatchObject({ reason: expect.stringContaining('--any-local-user') });
    expect(admitPeer(unknown, OWNER, 'owner-where-readable')).toEqual({ admit: true });
  });

  it('refuses everyone when the home cannot be read, naming it', () => {
    const gone = homeOwner('/nonexistent/capsem-home');
    expect(gone).toEqual({ error: 'CAPSEM_HOME (/nonexistent/capsem-home) cannot be read (ENOENT)' });
    expect(admitPeer({ kind: 'user', uid: 1000 }, gone, 'owner')).toMatchObject({
      admit: false,
      reason: expect.stringContaining('ENOENT'),
    });
  });
});

/** This process made the temporary home, so it is the home's owner. */
const SELF: PeerLookup = { kind: 'user', uid: process.getuid!() };

/** A server behind the listener, answering "served" to what it is handed; `peer` stands in for the kernel's table. */
async function served(peer: PeerLookup, rule: LoopbackOptions['rule'] = 'owner') {
  const home = tempHome();
  const refusals: Refusal[] = [];
  let lookups = 0;
  const http = createHttpServer((_req, res) => res.end('served'));
  const listener = await listenOnLoopback(http, {
    port: 0,
    home: home.root,
    rule,
    onRefused: (r) => refusals.push(r),
    lookup: () => {
      lookups++;
      return peer;
    },
  });
  /** Raw bytes in, everything the server sent back before it closed out. */
  const exchange = (delayMs = 0): Promise<string> =>
    new Promise((resolve, reject) => {
      const socket = connect(listener.port, '127.0.0.1');
      let answer = '';
      socket.on('connect', () => setTimeout(() => socket.write('GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n'), delayMs));
      socket.on('data', (c: Buffer) => (answer += c.toString()));
      socket.on('error', reject);
      socket.on('close', () => resolve(answer));
    });
  return {
    listener,
    refusals,
    lookups: () => lookups,
    exchange,
    close: async () => {
      await listener.close();
      home.remove();
    },
  };
}

describe('the listener', () => {
  it("hands the owner's connections to the server", async () => {
    const s = await served(SELF);
    expect(await s.exchange()).toMatch(/^HTTP\/1\.1 200 OK[\s\S]*served$/);
    expect(s.listener.refused).toBe(0);
    await s.close();
  });

  it("answers another user's connection with a JSON 403 once its request begins, even a request sent late, and counts it", async () => {
    const s = await served({ kind: 'user', uid: 4242 });
    const answer = await s.exchange(300);
    expect(answer).toMatch(/^HTTP\/1\.1 403 Forbidden\r\n/);
    expect(answer).toContain('content-type: application/json');
    expect(JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4))).toEqual({
      error: expect.stringContaining('this connection is from uid 4242'),
    });
    expect(answer).not.toContain('served');
    await s.exchange();
    expect(s.listener.refused).toBe(2);
    expect(s.refusals).toHaveLength(2);
    expect(s.refusals[0]).toMatchObject({ uid: 4242 });
    await s.close();
  });

  it('closes a connection whose peer is gone without answering or counting it', async () => {
    const s = await served({ kind: 'gone' });
    expect(await s.exchange()).toBe('');
    expect(s.listener.refused).toBe(0);
    expect(s.refusals).toEqual([]);
    await s.close();
  });

  it('looks nothing up when every local account is to be served', async () => {
    const s = await served({ kind: 'user', uid: 4242 }, 'any-local-user');
    expect(await s.exchange()).toMatch(/served$/);
    expect(s.lookups()).toBe(0);
    await s.close();
  });

  it('looks the peer up again for every connection', async () => {
    const s = await served(SELF);
    for (let i = 0; i < 3; i++) await s.exchange();
    expect(s.lookups()).toBe(3);
    await s.close();
  });

  it('closes at once with a refused peer still holding its connection open', async () => {
    const s = await served({ kind: 'user', uid: 4242 });
    const idle = connect(s.listener.port, '127.0.0.1');
    await new Promise((r) => idle.on('connect', r));
    const started = Date.now();
    await s.close();
    expect(Date.now() - started).toBeLessThan(1000);
    idle.destroy();
  });
});
