import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  json,
  startUpstream,
  upstreamEnv,
  type AnthropicBody,
  anthropicAnswer,
  hasToolResult,
  type Upstream,
} from '../helpers/mockUpstreams.ts';
import { OtlpReceiver, type ReceivedSpan } from '../helpers/otlpReceiver.ts';
import { runCapsem, runCapsemAsync, spawnCapsem } from '../helpers/runCapsem.ts';
import { sessionRows } from '../helpers/sessionRows.ts';
import { tempHome } from '../helpers/tempHome.ts';

// Sessions to an OpenTelemetry backend, through the real CLI run from a user's folder, received by a
// plain OTLP/HTTP receiver that decodes with the official proto definitions: a seeded Claude Code
// session with subagents by `capsem otel export`, checked span by span against its session.db; a
// backend that fails, then hangs, then comes back; an export cut off and run again; and a live
// export from `capsem record` while the command runs, with its key and stand-in nowhere in any byte.

const AGENT = fileURLToPath(new URL('../fixtures/otelAgent.mjs', import.meta.url));
const API = 'api.anthropic.com';
const FILES = 'files.otel.test';
const REAL_KEY = `sk-ant-api03-${'Rk9'.repeat(30)}x7QAA`;

const home = tempHome();
const upstreamHome = tempHome();
let upstream: Upstream;
let env: NodeJS.ProcessEnv;

function sessionId(name: string): string {
  return (JSON.parse(runCapsem(home.root, ['list', '--json']).stdout) as { id: string; name: string }[]).find((s) => s.name === name)!.id;
}

const dbOf = (id: string): string => `${home.root}/run/sessions/${id}/session.db`;

/** The spans' tree checks: one trace, one root, every parent present. */
function expectOneTree(spans: readonly ReceivedSpan[]): ReceivedSpan {
  expect(new Set(spans.map((s) => s.traceId)).size).toBe(1);
  const ids = new Set(spans.map((s) => s.spanId));
  expect(ids.size, 'a span was received twice').toBe(spans.length);
  const roots = spans.filter((s) => s.parentSpanId === null);
  expect(roots).toHaveLength(1);
  expect(spans.filter((s) => s.parentSpanId !== null && !ids.has(s.parentSpanId)).map((s) => s.name)).toEqual([]);
  return roots[0]!;
}

beforeAll(async () => {
  upstream = await startUpstream(upstreamHome, [API, FILES], (req, body, res) => {
    if (req.url === '/v1/messages') {
      const b = body as AnthropicBody;
      const last = b.messages?.at(-1)?.content;
      if (last === 'overloaded?') return json(res, 529, { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } });
      const key = String(req.headers['x-api-key']);
      if (hasToolResult(b)) return anthropicAnswer(res, b, `done; the key you sent is ${key}`, [], { input: 120, output: 14 });
      return anthropicAnswer(res, b, 'listing', [{ id: 'toolu_otel1', name: 'Bash', input: { command: `ls # ${key}` } }], {
        input: 90,
        output: 22,
      });
    }
    res.writeHead(200, { 'content-type': 'text/plain' }).end('found');
  });
  env = { ...upstreamEnv(upstream, [API, FILES], upstreamHome.root), ANTHROPIC_API_KEY: REAL_KEY };
  const seeded = runCapsem(home.root, ['dev', 'seed', '--sessions', '0', '--story', '300']);
  expect(seeded.code, seeded.stderr).toBe(0);
  runCapsem(home.root, ['rename', JSON.parse(runCapsem(home.root, ['list', '--json']).stdout)[0].id, 'story-otel']);
}, 120_000);

afterAll(async () => {
  await upstream.close();
  home.remove();
  upstreamHome.remove();
});

describe('capsem otel export', () => {
  it('sends a seeded Claude Code session as one trace: chat spans with tokens and cost as session.db has them, tools under their calls, subagents under the tool that spawned them', async () => {
    const receiver = await OtlpReceiver.start();
    try {
      const r = await runCapsemAsync(home.root, ['otel', 'export', 'story-otel', '--endpoint', receiver.url], {}, { timeoutMs: 60_000 });
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toMatch(
        /^Exported 1 session to http:\/\/127\.0\.0\.1:\d+\/v1\/traces \(from the command line\): \d+ spans queued now/,
      );
      const spans = receiver.spans;
      const root = expectOneTree(spans);
      const id = sessionId('story-otel');
      expect(root.attributes).toMatchObject({
        'session.id': id,
        'capsem.session.name': 'story-otel',
        'gen_ai.operation.name': 'invoke_agent',
      });
      expect(root.resource['service.name']).toBe('capsem');

      const calls = sessionRows<{ input: number; output: number; cache: number; cost: number; n: number }>(
        dbOf(id),
        `SELECT count(*) AS n, sum(coalesce(input_tokens, 0)) AS input, sum(coalesce(output_tokens, 0)) AS output,
           sum(coalesce(json_extract(usage_details, '$.cache_read'), 0) + coalesce(json_extract(usage_details, '$.cache_write'), 0)) AS cache,
           sum(estimated_cost_usd) AS cost FROM model_calls`,
      )[0]!;
      const chats = spans.filter((s) => s.attributes['gen_ai.operation.name'] === 'chat');
      expect(chats).toHaveLength(calls.n);
      const sum = (key: string): number => chats.reduce((n, s) => n + Number(s.attributes[key] ?? 0), 0);
      // The conventions' input count holds the cached tokens too.
      expect(sum('gen_ai.usage.input_tokens')).toBe(calls.input + calls.cache);
      expect(sum('gen_ai.usage.output_tokens')).toBe(calls.output);
      expect(sum('capsem.cost_usd')).toBeCloseTo(calls.cost, 6);
      expect(root.attributes['capsem.cost_usd']).toBeCloseTo(calls.cost, 6);
      expect(chats[0]!.attributes).toMatchObject({
        'gen_ai.provider.name': 'anthropic',
        'gen_ai.request.model': expect.stringMatching(/^claude-/),
      });
      expect(chats.every((s) => Array.isArray(s.attributes['gen_ai.response.finish_reasons']) || s.status.code === 2)).toBe(true);
      // The overloaded calls the story retries are errors.
      expect(chats.filter((s) => s.status.code === 2).length).toBeGreaterThan(0);

      const byId = receiver.byId();
      const tools = spans.filter((s) => s.attributes['gen_ai.operation.name'] === 'execute_tool');
      const toolRows = sessionRows<{ n: number }>(dbOf(id), 'SELECT count(DISTINCT call_id) AS n FROM tool_calls')[0]!.n;
      expect(tools.length).toBe(toolRows);
      expect(
        tools.every((t) => typeof t.attributes['gen_ai.tool.call.id'] === 'string' && typeof t.attributes['gen_ai.tool.name'] === 'string'),
      ).toBe(true);
      // A native tool's parent is the chat span of the model call that asked for it.
      expect(tools.filter((t) => byId.get(t.parentSpanId!)?.attributes['gen_ai.operation.name'] !== 'chat')).toEqual([]);
      const subagents = spans.filter((s) => s.attributes['gen_ai.operation.name'] === 'invoke_agent' && s !== root);
      expect(subagents.length).toBeGreaterThan(0);
      for (const agent of subagents) {
        const parent = byId.get(agent.parentSpanId!)!;
        expect(parent.attributes['gen_ai.operation.name']).toBe('execute_tool');
        expect(['Agent', 'Task']).toContain(parent.attributes['gen_ai.tool.name']);
        // Its model calls are under it.
        expect(chats.some((c) => c.parentSpanId === agent.spanId)).toBe(true);
      }
      // Message contents are off by default.
      expect(spans.some((s) => 'gen_ai.output.messages' in s.attributes || 'gen_ai.tool.call.arguments' in s.attributes)).toBe(false);

      // Sent once: a second export sends nothing.
      const again = await runCapsemAsync(
        home.root,
        ['otel', 'export', 'story-otel', '--endpoint', receiver.url],
        {},
        { timeoutMs: 60_000 },
      );
      expect(again.code, again.stderr).toBe(0);
      expect(again.stdout).toMatch(/: 0 spans queued now, \d+ queued before, 0 sent in this run/);
      expect(receiver.spans).toHaveLength(spans.length);
    } finally {
      await receiver.close();
    }
  }, 120_000);

  it('keeps trying a backend that fails, then hangs, then answers; and an export cut off is finished by the next without a span sent twice', async () => {
    const receiver = await OtlpReceiver.start({ failFirst: 2, failStatus: 503, hangNext: 1 });
    try {
      const r = await runCapsemAsync(home.root, ['otel', 'export', '--all', '--endpoint', receiver.url], {}, { timeoutMs: 90_000 });
      expect(r.code, r.stderr).toBe(0);
      expect(r.stderr).toMatch(/answered 503 Service Unavailable; trying again in/);
      expect(receiver.requests).toBeGreaterThanOrEqual(4);
      const first = expectOneTree(receiver.spans);
      expect(first.attributes['capsem.session.name']).toBe('story-otel');

      // A backend that takes nothing: the export gives up after --wait, keeps the spans queued on disk, and says so.
      const down = await OtlpReceiver.start({ hangNext: 1000 });
      const cut = await runCapsemAsync(
        home.root,
        ['otel', 'export', 'story-otel', '--endpoint', down.url, '--wait', '3'],
        {},
        { timeoutMs: 60_000 },
      );
      expect(cut.code).toBe(1);
      expect(cut.stderr).toMatch(/capsem: \d+ spans are still queued for http:\/\/127\.0\.0\.1:\d+\/v1\/traces after 3 s/);
      const status = runCapsem(home.root, ['otel', 'status', '--endpoint', down.url]);
      expect(status.stdout).toMatch(/Queued: [1-9]\d* spans/);
      down.behave({});
      const resumed = await runCapsemAsync(home.root, ['otel', 'export', 'story-otel', '--endpoint', down.url], {}, { timeoutMs: 60_000 });
      expect(resumed.code, resumed.stderr).toBe(0);
      expect(resumed.stdout).toMatch(/: 0 spans queued now, \d+ queued before, [1-9]\d* sent in this run/);
      expectOneTree(down.spans);
      expect(down.spans).toHaveLength(receiver.spans.length);
      await down.close();
    } finally {
      await receiver.close();
    }
  }, 180_000);
});

describe('live export from capsem record', () => {
  it('streams the session while its command runs, with its key and stand-in in no byte sent, contents only when asked', async () => {
    const receiver = await OtlpReceiver.start();
    try {
      const child = spawnCapsem(home.root, ['record', '--name', 'live-otel', '--', process.execPath, AGENT], {
        ...env,
        CAPSEM_OTLP_ENDPOINT: receiver.url,
        CAPSEM_OTLP_CONTENT: '1',
        PAUSE_MS: '6000',
      });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
      child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
      let sawWhileRunning = false;
      const watcher = setInterval(() => {
        if (child.exitCode === null && receiver.spans.some((s) => s.attributes['gen_ai.operation.name'] === 'chat')) sawWhileRunning = true;
      }, 100);
      const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
      clearInterval(watcher);
      expect(code, stderr).toBe(0);
      expect(sawWhileRunning, 'no span arrived while the command ran').toBe(true);
      const standIn = /STAND_IN (\S+)/.exec(stdout)![1]!;
      expect(standIn).not.toBe(REAL_KEY);

      const spans = receiver.spans;
      const root = expectOneTree(spans);
      expect(root.attributes['capsem.session.name']).toBe('live-otel');
      const chats = spans.filter((s) => s.attributes['gen_ai.operation.name'] === 'chat');
      expect(chats).toHaveLength(3);
      expect(chats.filter((s) => s.status.code === 2).map((s) => s.attributes['error.type'])).toEqual(['529']);
      const tool = spans.find((s) => s.attributes['gen_ai.tool.call.id'] === 'toolu_otel1')!;
      expect(tool.attributes['gen_ai.tool.name']).toBe('Bash');
      expect(byParent(spans, tool.parentSpanId)).toMatchObject({ attributes: { 'gen_ai.operation.name': 'chat' } });
      const fetches = spans.filter((s) => s.attributes['server.address'] === FILES);
      expect(fetches).toHaveLength(1);
      expect(fetches[0]!.attributes['url.full']).toMatch(/^https:\/\/files\.otel\.test\/lookup\/\[redacted\]$/);
      // Contents were asked for: the answers and the tool's arguments are there, redacted.
      expect(chats.map((s) => s.attributes['gen_ai.output.messages'])).toContainEqual(
        expect.stringContaining('the key you sent is [redacted]'),
      );
      expect(tool.attributes['gen_ai.tool.call.arguments']).toMatch(/\[redacted\]/);

      for (const [label, secret] of [
        ['the key', REAL_KEY],
        ['the stand-in', standIn],
      ] as const)
        for (const form of [secret, encodeURIComponent(secret), Buffer.from(secret).toString('base64')])
          expect(
            receiver.bodies.some((b) => b.includes(form)),
            `${label} left in an exported body`,
          ).toBe(false);
    } finally {
      await receiver.close();
    }
  }, 120_000);
});

function byParent(spans: readonly ReceivedSpan[], id: string | null): ReceivedSpan | undefined {
  return spans.find((s) => s.spanId === id);
}

describe('capsem otel export of a session with MCP calls, denials and file changes', () => {
  it('sends each MCP tools/call as a span under the tool call that made it, each denial as an error span naming its rule, each file change as an event', async () => {
    const mcpHome = tempHome();
    const receiver = await OtlpReceiver.start();
    try {
      const seeded = runCapsem(mcpHome.root, ['dev', 'seed', '--sessions', '1', '--events', '400']);
      expect(seeded.code, seeded.stderr).toBe(0);
      const r = await runCapsemAsync(mcpHome.root, ['otel', 'export', '--all', '--endpoint', receiver.url], {}, { timeoutMs: 60_000 });
      expect(r.code, r.stderr).toBe(0);
      const spans = receiver.spans;
      expectOneTree(spans);
      const { id } = (JSON.parse(runCapsem(mcpHome.root, ['list', '--json']).stdout) as { id: string }[])[0]!;
      const mcpRows = sessionRows<{ n: number }>(
        `${mcpHome.root}/run/sessions/${id}/session.db`,
        "SELECT count(DISTINCT call_id) AS n FROM tool_calls WHERE origin = 'mcp'",
      )[0]!.n;
      expect(mcpRows).toBeGreaterThan(0);
      const mcp = spans.filter((s) => s.attributes['mcp.method.name'] === 'tools/call');
      expect(mcp).toHaveLength(mcpRows);
      const byId = receiver.byId();
      for (const call of mcp) {
        expect(call.name).toMatch(/^tools\/call \S+/);
        expect(call.attributes['gen_ai.operation.name']).toBe('execute_tool');
        // Under the model's own call of the same tool, running when the MCP request went out.
        const parent = byId.get(call.parentSpanId!)!;
        expect(parent.attributes['gen_ai.operation.name']).toBe('execute_tool');
        expect(parent.attributes['mcp.method.name']).toBeUndefined();
        expect(parent.attributes['gen_ai.tool.name']).toBe(call.attributes['gen_ai.tool.name']);
        expect(call.attributes['capsem.mcp.server']).toEqual(expect.any(String));
      }
      const db = `${mcpHome.root}/run/sessions/${id}/session.db`;
      const denied = spans.filter((s) => s.attributes['capsem.policy.decision'] === 'denied');
      const deniedRows = sessionRows<{ n: number }>(
        db,
        "SELECT count(*) AS n FROM net_events WHERE decision = 'denied' AND seq + 1 NOT IN (SELECT seq FROM model_calls)",
      )[0]!.n;
      expect(deniedRows).toBeGreaterThan(0);
      expect(denied).toHaveLength(deniedRows);
      expect(denied.every((s) => s.status.code === 2 && /^denied by policy/.test(s.status.message ?? ''))).toBe(true);
      const changes = spans.flatMap((s) => s.events.filter((e) => e.name === 'capsem.file.change'));
      const changeRows = sessionRows<{ path: string }>(db, 'SELECT path FROM fs_events ORDER BY seq');
      expect(changeRows.length).toBeGreaterThan(0);
      expect(changes.map((e) => e.attributes['file.path']).sort()).toEqual(changeRows.map((r) => r.path).sort());
    } finally {
      await receiver.close();
      mcpHome.remove();
    }
  }, 120_000);
});
