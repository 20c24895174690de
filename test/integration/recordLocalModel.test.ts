import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_POLICY_PATH } from '../../electron/policy/policy.ts';
import { runCapsem, runCapsemAsync, type CliResult } from '../helpers/runCapsem.ts';
import { sessionRows } from '../helpers/sessionRows.ts';
import { tempHome } from '../helpers/tempHome.ts';

// A local model (an Ollama-style server on localhost) called by Python's requests under `capsem
// record`, run from a user's folder: refused with the rule that would allow it; allowed and
// recorded once that rule is in CAPSEM_HOME/policy.json; and sent directly, unrecorded, with
// capsem saying so, when the user's NO_PROXY names localhost.

const missing =
  spawnSync('python3', ['-c', 'import requests'], { encoding: 'utf8' }).status === 0
    ? null
    : 'python3 with requests (Debian: python3-requests)';
const scratch = tempHome();
const OLLAMA_CLIENT = `${scratch.root}/chat.py`;
writeFileSync(
  OLLAMA_CLIENT,
  `
import json, sys, requests
try:
    r = requests.post("http://localhost:%s/api/chat" % sys.argv[1], timeout=30,
                      json={"model": "qwen3:8b", "messages": [{"role": "user", "content": "Say hi."}], "stream": False})
    print(json.dumps({"status": r.status_code, "body": r.text}))
except Exception as e:
    print(json.dumps({"status": None, "body": repr(e)}))
`,
);

let server: Server;
let port = 0;
let served = 0;

beforeAll(async () => {
  server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      served += 1;
      res.writeHead(200, { 'content-type': 'application/json; charset=utf-8' });
      res.end(
        JSON.stringify({
          model: 'qwen3:8b',
          created_at: '2025-06-01T10:00:00Z',
          message: { role: 'assistant', content: 'Hi.' },
          done_reason: 'stop',
          done: true,
          total_duration: 1200000,
          prompt_eval_count: 11,
          eval_count: 3,
        }),
      );
    });
  });
  // Bound the way `localhost` resolves here, so the proxy's lookup and Python's find the same address.
  await new Promise<void>((r) => server.listen(0, 'localhost', r));
  port = (server.address() as AddressInfo).port;
});
afterAll(() => {
  server.close();
  scratch.remove();
});

async function chat(home: string, env: NodeJS.ProcessEnv = {}): Promise<{ capsem: CliResult; status: number | null; body: string }> {
  const capsem = await runCapsemAsync(home, ['record', '--', 'python3', OLLAMA_CLIENT, String(port)], env, { timeoutMs: 60_000 });
  const answer = JSON.parse(capsem.stdout.trim().split('\n').at(-1) ?? '{}') as { status: number | null; body: string };
  return { capsem, ...answer };
}

function newestSessionRows<T>(home: string, sql: string): T[] {
  const id = (JSON.parse(runCapsem(home, ['list', '--json']).stdout) as { id: string }[])[0]!.id;
  return sessionRows<T>(`${home}/run/sessions/${id}/session.db`, sql);
}

describe.skipIf(missing !== null)(`a local model under capsem record${missing ? ` (skipped: ${missing})` : ''}`, () => {
  const home = tempHome();
  afterAll(() => home.remove());

  it('refuses localhost with the rule that allows it, and that rule in policy.json lets it through, recorded', async () => {
    const refused = await chat(home.root);
    expect(refused.capsem.code, refused.capsem.stderr).toBe(0);
    expect(refused.status).toBe(403);
    const rule = `{"id":"allow-localhost","action":"allow","domains":["localhost"],"ports":[${port}]}`;
    expect(refused.body).toMatch(/private address space, blocked by policy rule default\.deny-private-address/);
    expect(refused.body).toContain(rule);
    expect(refused.body).toContain(`${home.root}/policy.json (copy ${DEFAULT_POLICY_PATH} there first)`);
    expect(refused.body).toContain('"privateAddresses": "allow"');
    expect(served).toBe(0);
    const [denied] = newestSessionRows<{ domain: string; decision: string; error_message: string }>(
      home.root,
      'SELECT domain, decision, error_message FROM net_events',
    );
    expect(denied).toMatchObject({ domain: 'localhost', decision: 'denied' });
    expect(denied!.error_message).toContain(rule);

    // What the refusal says to do, done: the rule, before the "*" rule of the shipped policy.
    const policy = JSON.parse(readFileSync(DEFAULT_POLICY_PATH, 'utf8')) as { rules: unknown[] };
    policy.rules.splice(-1, 0, JSON.parse(rule));
    writeFileSync(`${home.root}/policy.json`, JSON.stringify(policy));
    const allowed = await chat(home.root);
    expect(allowed.status, allowed.body).toBe(200);
    expect(JSON.parse(allowed.body)).toMatchObject({ message: { content: 'Hi.' } });
    expect(served).toBe(1);
    expect(newestSessionRows(home.root, 'SELECT domain, port, decision, matched_rule, status_code FROM net_events')).toEqual([
      { domain: 'localhost', port, decision: 'allowed', matched_rule: 'allow-localhost', status_code: 200 },
    ]);
    expect(newestSessionRows(home.root, 'SELECT provider, model, text_content, input_tokens, output_tokens FROM model_calls')).toEqual([
      { provider: 'ollama', model: 'qwen3:8b', text_content: 'Hi.', input_tokens: 11, output_tokens: 3 },
    ]);
  }, 120_000);

  it("keeps the user's NO_PROXY (both spellings, as one list): localhost goes directly, unrecorded, and capsem says so", async () => {
    const direct = tempHome();
    try {
      served = 0;
      // Python reads no_proxy before NO_PROXY: only the merged list has localhost in both.
      const run = await chat(direct.root, { NO_PROXY: 'localhost', no_proxy: 'models.example.internal' });
      expect(run.status, run.body).toBe(200);
      expect(served).toBe(1);
      expect(run.capsem.stderr).toMatch(
        /capsem record: NO_PROXY=localhost,models\.example\.internal: requests to these hosts go directly and are not recorded/,
      );
      expect(newestSessionRows(direct.root, 'SELECT domain FROM net_events')).toEqual([]);
    } finally {
      direct.remove();
    }
  }, 60_000);
});
