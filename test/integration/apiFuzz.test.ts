import fc from 'fast-check';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startApiServer, type ApiServer } from '../../electron/api/server.ts';
import { seedSessions } from '../../electron/dev/seedSessions.ts';
import { call } from '../helpers/apiClient.ts';
import { tempHome } from '../helpers/tempHome.ts';

const home = tempHome();
let api: ApiServer;
let id: string;
beforeAll(async () => {
  id = (await seedSessions(home, { sessions: 1, events: 60 }))[0]!.id;
  api = await startApiServer({ home, port: 0 });
});
afterAll(async () => {
  await api.close();
  home.remove();
});

const segment = fc.oneof(
  fc.constantFrom('v1', 'sessions', 'events', 'timeline', 'search', '..', '%00', '%zz', 'co-work1'),
  fc.string({ maxLength: 12 }).map(encodeURIComponent),
  fc.constant('SESSION'),
);
const query = fc.dictionary(
  fc.constantFrom('limit', 'before', 'view', 'q', 'from', 'to', 'raw', 'archived', 'session'),
  fc.oneof(fc.string({ maxLength: 10 }), fc.integer().map(String)),
);

it('answers hostile paths and queries with a clear status, never a 500, and keeps serving', async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.array(segment, { maxLength: 5 }),
      query,
      fc.constantFrom('GET', 'DELETE', 'POST'),
      async (parts, params, method) => {
        if (method === 'GET' && parts.join('/') === 'v1/events') return; // the live tail never ends
        const path = `/${parts.map((p) => (p === 'SESSION' ? id : p)).join('/')}?${new URLSearchParams(params).toString()}`;
        const reply = await call(api.url, path, { method });
        expect([200, 400, 403, 404, 405, 409], `${method} ${path}: ${reply.body}`).toContain(reply.status);
        if (reply.status !== 200 || !reply.headers['content-type']?.toString().startsWith('text/plain')) {
          if (reply.status !== 200) expect(() => JSON.parse(reply.body), reply.body).not.toThrow();
        }
      },
    ),
    { numRuns: 300 },
  );
  expect((await call(api.url, '/healthz')).body).toBe('ok\n');
});
