import { afterAll, expect, it } from 'vitest';
import { runCapsemAsync, runCapsem } from '../helpers/runCapsem.ts';
import { tempHome } from '../helpers/tempHome.ts';

const home = tempHome();
afterAll(() => home.remove());

it("exits with the command's own exit code and still ends and rolls up the session", async () => {
  const result = await runCapsemAsync(home.root, ['record', '--name', 'fails', '--', process.execPath, '-e', 'process.exit(7)']);
  expect(result.code).toBe(7);
  const [session] = JSON.parse(runCapsem(home.root, ['list', '--json']).stdout);
  expect(session).toMatchObject({ name: 'fails', status: 'stopped' });
});

it('says so when the command cannot be run, and refuses a missing command', async () => {
  const missing = await runCapsemAsync(home.root, ['record', '--', '/nonexistent/tool']);
  expect(missing.code).toBe(127);
  expect(missing.stderr).toMatch(/capsem: cannot run \/nonexistent\/tool/);
  const none = await runCapsemAsync(home.root, ['record', '--name', 'x']);
  expect(none.code).toBe(2);
  expect(none.stderr).toMatch(/record needs a command after --/);
});

it('hands the program the proxy and the CA through its environment', async () => {
  const script =
    'const e = process.env; console.log([e.HTTPS_PROXY, e.NODE_EXTRA_CA_CERTS, e.SSL_CERT_FILE, e.REQUESTS_CA_BUNDLE, e.CURL_CA_BUNDLE, e.GIT_SSL_CAINFO, e.CAPSEM_SESSION_ID].join("|"))';
  const result = await runCapsemAsync(home.root, ['record', '--', process.execPath, '-e', script]);
  const [proxy, ...rest] = result.stdout.trim().split('|');
  // The session's credentials ride in the URL: the port serves nobody else.
  expect(proxy).toMatch(/^http:\/\/capsem:[\w-]{32}@127\.0\.0\.1:\d+$/);
  const ca = `${home.root}/ca/capsem-ca.crt`;
  expect(rest.slice(0, 5)).toEqual([ca, ca, ca, ca, ca]);
  expect(rest[5]).toMatch(/^[0-9a-f-]{36}$/);
});
