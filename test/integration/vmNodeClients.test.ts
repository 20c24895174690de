import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { sessionRows } from '../helpers/sessionRows.ts';
import { agentImageUnavailable, guestRun, sharedAgentVm } from '../helpers/vmTestHome.ts';

// Inside a real VM, with the guest's own Node (Debian's 18) and curl: https.request without an
// agent reaches a public destination through the proxy and is recorded, and requests to a server
// the guest runs itself, by localhost or 127.0.0.1, reach that server, not the host's proxy
// (which would refuse them, or reach the host's loopback if a policy allowed it).

const noAgentImage = agentImageUnavailable();
const HOST = 'api.guest-node.example';

const CLIENT = `
import http from 'node:http';
import https from 'node:https';
const call = (mod, url) => new Promise((resolve) => {
  mod.get(url, (res) => {
    let text = '';
    res.on('data', (c) => (text += c));
    res.on('end', () => resolve({ status: res.statusCode, body: text.slice(0, 200) }));
  }).on('error', (e) => resolve({ error: e.message }));
});
const answers = {};
answers.httpsRequest = await call(https, 'https://${HOST}/v1/from-guest');
const port = Number(process.argv[2]);
answers.httpLocalhost = await call(http, 'http://localhost:' + port + '/');
answers.http127 = await call(http, 'http://127.0.0.1:' + port + '/');
answers.fetchLocalhost = await fetch('http://localhost:' + port + '/').then(async (r) => ({ status: r.status, body: await r.text() }), (e) => ({ error: String(e.cause ?? e) }));
console.log(JSON.stringify(answers));
`;

describe.skipIf(noAgentImage !== null)(
  `real VM, agent image: Node clients and the guest's own loopback${noAgentImage ? ` (skipped: ${noAgentImage})` : ''}`,
  () => {
    const vm = sharedAgentVm([HOST]);

    it('records https.request to a public host, and leaves localhost to the guest', async () => {
      writeFileSync(join(vm.session.paths.workspaceDir, 'client.mjs'), CLIENT);
      // A server of the guest's own, on every loopback address, answering for itself.
      const script = [
        "node -e \"require('http').createServer((q, s) => s.end('guest-local')).listen(8765)\" & server=$!",
        'for i in $(seq 50); do curl -s -o /dev/null http://127.0.0.1:8765/ && break; sleep 0.1; done',
        'node client.mjs 8765',
        'curl -s -w " %{http_code}" http://localhost:8765/',
        'kill $server',
      ].join('\n');
      const r = await guestRun(vm.session, ['sh', '-c', script], { cwd: '/workspace' });
      expect(r.code, r.err).toBe(0);
      const [json, curl] = r.out.trim().split('\n');
      expect(JSON.parse(json!)).toEqual({
        httpsRequest: { status: 200, body: JSON.stringify({ path: '/v1/from-guest' }) },
        httpLocalhost: { status: 200, body: 'guest-local' },
        http127: { status: 200, body: 'guest-local' },
        fetchLocalhost: { status: 200, body: 'guest-local' },
      });
      expect(curl).toBe('guest-local 200');
      await vm.session.recording.flush();
      expect(sessionRows(vm.session.paths.dbPath, 'SELECT domain, path, status_code, process_name FROM net_events')).toEqual([
        { domain: HOST, path: '/v1/from-guest', status_code: 200, process_name: 'node' },
      ]);
    }, 120_000);
  },
);
