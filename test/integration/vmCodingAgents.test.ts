import { mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import type { ServerResponse } from 'node:http';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AppCore } from '../../electron/app/appCore.ts';
import type { CallResult } from '../../electron/contract/appContract.ts';
import { capsemHome } from '../../electron/store/paths.ts';
import { anthropicStream, json, sse, startUpstream, type Upstream } from '../helpers/mockUpstreams.ts';
import { runCapsemAsync, USER_FOLDER } from '../helpers/runCapsem.ts';
import { tempHome } from '../helpers/tempHome.ts';
import { agentImageUnavailable, vmTestHome } from '../helpers/vmTestHome.ts';

// The coding agents of the agent image, as they ship from npm, started by `capsem run --agent`
// in a real VM on a project folder the user made, against local upstreams that speak each
// provider's wire format (CAPSEM_RESOLVE): each is asked to make a file with one tool call, and
// the session must show all of it: the file in the user's folder and theirs, the model calls with
// tokens and cost, the tool call and its result under one call_id, the file change, a transcript
// that replays the agent's screen, and a clean `capsem check`.

const noAgentImage = agentImageUnavailable();
const NO_KEYS = { ANTHROPIC_API_KEY: '', OPENAI_API_KEY: '', GEMINI_API_KEY: '', GOOGLE_API_KEY: '' };

type Body = { model?: string; stream?: boolean; tools?: { name: string }[]; messages?: { role: string; content: unknown }[] };

/** What the user can see of a session through `capsem sql`. */
async function sql<T>(home: string, name: string, query: string): Promise<T[]> {
  const r = await runCapsemAsync(home, ['sql', name, query, '--json']);
  expect(r.code, r.stderr).toBe(0);
  return JSON.parse(r.stdout) as T[];
}

/** Everything the session's terminal showed, as the window's replay gets it. */
async function replayedScreen(home: string, name: string): Promise<string> {
  const id = (JSON.parse((await runCapsemAsync(home, ['list', '--json'])).stdout) as { id: string; name: string }[]).find((s) => s.name === name)!.id;
  const core = new AppCore({ home: capsemHome({ CAPSEM_HOME: home }), checkResults: true });
  try {
    const attached = (await core.handle('terminal.attach', { id, size: { cols: 120, rows: 40 } })) as CallResult<'terminal.attach'>;
    const data = attached.transcript!.events.map((e) => e[2]);
    let from = attached.transcript!.next;
    while (from !== null) {
      const part = (await core.handle('terminal.replay', { id, from })) as CallResult<'terminal.replay'>;
      data.push(...part.events.map((e) => e[2]));
      from = part.next;
    }
    return data.join('');
  } finally {
    core.close();
  }
}

function hasToolResult(body: Body): boolean {
  return (body.messages ?? []).some((m) => Array.isArray(m.content) && (m.content as { type?: string }[]).some((block) => block.type === 'tool_result'));
}

/** An Anthropic Messages answer, streamed when the request asked for a stream, as the API does. */
function anthropicAnswer(res: ServerResponse, body: Body, text: string, tools: { id: string; name: string; input: unknown }[], usage: { input: number; output: number }): void {
  const model = body.model ?? 'claude-sonnet-4-6';
  if (body.stream) return sse(res, anthropicStream(model, text, tools, usage));
  json(res, 200, {
    id: 'msg_test_plain', type: 'message', role: 'assistant', model,
    content: [{ type: 'text', text }, ...tools.map((t) => ({ type: 'tool_use', ...t }))],
    stop_reason: tools.length ? 'tool_use' : 'end_turn', stop_sequence: null,
    usage: { input_tokens: usage.input, output_tokens: usage.output, cache_read_input_tokens: 0, cache_creation_input_tokens: 0 },
  });
}

describe.skipIf(noAgentImage !== null)(`coding agents in a real VM, agent image${noAgentImage ? ` (skipped: ${noAgentImage})` : ''}`, () => {
  const home = vmTestHome();
  const project = join(USER_FOLDER, 'agent-project');
  let anthropic: Upstream;
  let env: NodeJS.ProcessEnv;

  beforeAll(async () => {
    mkdirSync(project, { recursive: true });
    const upHome = tempHome();
    anthropic = await startUpstream(upHome, ['api.anthropic.com'], (req, raw, res) => {
      const body = (typeof raw === 'object' && raw !== null ? raw : {}) as Body;
      if (!req.url?.startsWith('/v1/messages') || req.url.startsWith('/v1/messages/count_tokens')) return json(res, 404, { type: 'error', error: { type: 'not_found_error', message: 'not here' } });
      const wantsBash = (body.tools ?? []).some((t) => t.name === 'Bash');
      if (wantsBash && !hasToolResult(body)) {
        return anthropicAnswer(res, body, 'I will create the file.', [{ id: 'toolu_capsem_bash_1', name: 'Bash', input: { command: 'echo made by claude > claude.txt', description: 'Create claude.txt' } }], { input: 1200, output: 40 });
      }
      if (wantsBash) return anthropicAnswer(res, body, 'Created claude.txt in the workspace.', [], { input: 1300, output: 12 });
      anthropicAnswer(res, body, 'Making a file', [], { input: 50, output: 3 });
    });
    upHome.remove();
    const caFile = join(home.root, 'upstream-ca.pem');
    writeFileSync(caFile, anthropic.caPem);
    env = { ...NO_KEYS, CAPSEM_RESOLVE: `api.anthropic.com:443=127.0.0.1:${anthropic.port}`, CAPSEM_UPSTREAM_CA_FILE: caFile };
  });
  afterAll(async () => {
    await anthropic?.close();
    home.remove();
    rmSync(project, { recursive: true, force: true });
  });

  it('Claude Code creates a file with its Bash tool: the file is the user\'s, the calls, the tool call and the file change are recorded, and the screen replays', async () => {
    const started = Date.now();
    const r = await runCapsemAsync(
      home.root,
      ['run', '--agent', 'claude', '--name', 'claude1', '--workspace', project, '--', '-p', 'Create claude.txt saying "made by claude" with your Bash tool.', '--allowedTools', 'Bash', '--model', 'claude-sonnet-4-6'],
      { ...env, ANTHROPIC_API_KEY: 'sk-ant-api03-capsem-test-key-0123456789' },
      { timeoutMs: 600_000 },
    );
    console.log(`Claude Code run: ${((Date.now() - started) / 1000).toFixed(1)} s`);
    expect(r.code, `${r.stdout}\n${r.stderr}`).toBe(0);
    expect(r.stdout).toContain('Created claude.txt in the workspace.');

    expect(readFileSync(join(project, 'claude.txt'), 'utf8')).toBe('made by claude\n');
    expect(statSync(join(project, 'claude.txt')).uid).toBe(process.getuid!());

    const calls = await sql<{ provider: string; model: string; input_tokens: number; output_tokens: number; estimated_cost_usd: number }>(home.root, 'claude1', "SELECT provider, model, input_tokens, output_tokens, estimated_cost_usd FROM model_calls WHERE model = 'claude-sonnet-4-6' ORDER BY id");
    expect(calls.map(({ estimated_cost_usd: _cost, ...c }) => c)).toEqual([
      { provider: 'anthropic', model: 'claude-sonnet-4-6', input_tokens: 1200, output_tokens: 40 },
      { provider: 'anthropic', model: 'claude-sonnet-4-6', input_tokens: 1300, output_tokens: 12 },
    ]);
    expect(calls.every((c) => c.estimated_cost_usd > 0)).toBe(true);

    const linked = await sql(home.root, 'claude1', 'SELECT tc.call_id, tc.tool_name, tr.model_call_id > tc.model_call_id AS answered_later FROM tool_calls tc JOIN tool_responses tr ON tr.call_id = tc.call_id');
    expect(linked).toEqual([{ call_id: 'toolu_capsem_bash_1', tool_name: 'Bash', answered_later: 1 }]);

    expect(await sql(home.root, 'claude1', "SELECT action, path FROM fs_events WHERE path = 'claude.txt' ORDER BY seq LIMIT 1")).toEqual([{ action: 'created', path: 'claude.txt' }]);

    expect(await replayedScreen(home.root, 'claude1')).toContain('Created claude.txt in the workspace.');

    const check = await runCapsemAsync(home.root, ['check', 'claude1']);
    expect(check.stdout, check.stdout).toContain('Findings: none');
    expect(check.code).toBe(0);
  }, 900_000);
});
