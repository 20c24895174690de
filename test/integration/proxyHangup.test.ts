import Database from 'better-sqlite3';
import type * as Dns from 'node:dns';
import { connect } from 'node:net';
import { afterAll, expect, it, vi } from 'vitest';
import { CertificateAuthority } from '../../electron/proxy/certificateAuthority.ts';
import { SessionRecorder } from '../../electron/recording/sessionRecorder.ts';
import { startMitmProxy } from '../../electron/proxy/mitmProxy.ts';
import { PolicyStore } from '../../electron/policy/policy.ts';
import { sessionPaths } from '../../electron/store/paths.ts';
import { liveSession } from '../helpers/sessionFixture.ts';
import { tempHome } from '../helpers/tempHome.ts';

// A name whose lookup is slow (a slow resolver, as on a bad network) resolves to loopback. The
// client hangs up before the answer; the refusal that follows must still be what is recorded,
// not a client that merely went away.

const SLOW_NAME = 'slow-resolving.example';
let released: () => void = () => undefined;
const answered = new Promise<void>((resolve) => (released = resolve));

vi.mock('node:dns', async (original) => {
  const dns = await original<typeof Dns>();
  const lookup = (name: string, options: unknown, callback: (err: Error | null, address: string, family: number) => void): void => {
    if (name === SLOW_NAME) void answered.then(() => callback(null, '127.0.0.1', 4));
    else (dns.lookup as unknown as (n: string, o: unknown, c: typeof callback) => void)(name, options, callback);
  };
  return { ...dns, default: { ...dns, lookup }, lookup };
});

const home = tempHome();
afterAll(() => home.remove());

it('records a private destination as refused even when the client hung up while its name resolved', async () => {
  const live = await liveSession(home);
  const recorder = new SessionRecorder(live.writer, 1 << 20);
  const proxy = await startMitmProxy({
    ca: await CertificateAuthority.load(home),
    policy: new PolicyStore(home),
    onExchange: (ex) => void recorder.record(ex),
  });
  const url = new URL(proxy.url);
  const auth = Buffer.from(`${url.username}:${url.password}`).toString('base64');
  const client = connect(proxy.port, '127.0.0.1');
  client.on('error', () => undefined);
  client.write(`GET http://${SLOW_NAME}/ HTTP/1.1\r\nProxy-Authorization: Basic ${auth}\r\nHost: ${SLOW_NAME}\r\n\r\n`);
  await new Promise((r) => setTimeout(r, 200));
  client.destroy();
  await new Promise((r) => setTimeout(r, 200));
  released();
  await new Promise((r) => setTimeout(r, 200));
  await recorder.settled();
  await live.writer.flush();
  const db = new Database(sessionPaths(home, live.id).dbPath, { readonly: true });
  const rows = db.prepare('SELECT domain, decision, status_code, error_kind, matched_rule FROM net_events').all();
  db.close();
  await proxy.close();
  await live.end();
  expect(rows).toEqual([
    {
      domain: SLOW_NAME,
      decision: 'denied',
      status_code: 403,
      error_kind: 'destination_private',
      matched_rule: 'default.deny-private-address',
    },
  ]);
});
