import { mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AppCore } from '../../electron/app/appCore.ts';
import type { CallResult } from '../../electron/contract/appContract.ts';
import { capsemHome } from '../../electron/store/paths.ts';
import { anthropicAnswer, hasToolResult, json, sse, startUpstream, type AnthropicBody, type Upstream } from '../helpers/mockUpstreams.ts';
import { runCapsemAsync, spawnCapsem, USER_FOLDER } from '../helpers/runCapsem.ts';
import { filesHolding } from '../helpers/filesHolding.ts';
import { tempHome } from '../helpers/tempHome.ts';
import { capsemTerminal, CLAUDE_PROMPT, screenText, until } from '../helpers/terminalText.ts';
import { agentImageUnavailable, vmTestHome } from '../helpers/vmTestHome.ts';

// The coding agents of the agent image, as they ship from npm, started by `capsem run --agent`
// in a real VM on a project folder the user made, against local upstreams that speak each
// provider's wire format (CAPSEM_RESOLVE): each is asked to make a file with one tool call, and
// the session must show all of it: the file in the user's folder and theirs, the model calls with
// tokens and cost, the tool call and its result under one call_id, the file change, a transcript
// that replays the agent's screen, and a clean `capsem check`.

const noAgentImage = agentImageUnavailable();
const NO_KEYS = { ANTHROPIC_API_KEY: '', OPENAI_API_KEY: '', GEMINI_API_KEY: '', GOOGLE_API_KEY: '' };

type Body = AnthropicBody;

/** What the user can see of a session through `capsem sql`. */
async function sql<T>(home: string, name: string, query: string): Promise<T[]> {
  const r = await runCapsemAsync(home, ['sql', name, query, '--json']);
  expect(r.code, r.stderr).toBe(0);
  return JSON.parse(r.stdout) as T[];
}

async function expectStopped(home: string, name: string): Promise<void> {
  const sessions = JSON.parse((await runCapsemAsync(home, ['list', '--json'])).stdout) as { name: string; status: string }[];
  expect(sessions.find((s) => s.name === name)).toMatchObject({ status: 'stopped' });
}

/** Everything the session's terminal showed, as the window's replay gets it. */
async function replayedScreen(home: string, name: string): Promise<string> {
  const id = (JSON.parse((await runCapsemAsync(home, ['list', '--json'])).stdout) as { id: string; name: string }[]).find(
    (s) => s.name === name,
  )!.id;
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

/** The key a request carries where its provider takes it: x-api-key, a Bearer token, x-goog-api-key or a key= query. */
function keyOf(req: IncomingMessage): string {
  const bearer = /^Bearer (.+)$/.exec(String(req.headers.authorization ?? ''))?.[1];
  return String(
    req.headers['x-api-key'] ??
      bearer ??
      req.headers['x-goog-api-key'] ??
      new URL(req.url ?? '/', 'https://upstream.test').searchParams.get('key') ??
      '',
  );
}

interface ModelCallFigures {
  readonly provider: string;
  readonly model: string;
  readonly input_tokens: number;
  readonly output_tokens: number;
}

/** What every agent run must leave behind: its file (the user's), the tool round's calls with cost, the call linked to its result, the file change, the replayed answer, and a clean check. */
async function expectRecordedRun(
  home: string,
  project: string,
  run: {
    readonly session: string;
    readonly file: string;
    readonly content: string;
    readonly answer: string;
    /** Narrows model_calls to the tool round: agents make side calls of their own. */
    readonly callsWhere: string;
    readonly calls: readonly ModelCallFigures[];
    /** The tool_calls columns the link is checked on, besides answered_later. */
    readonly linkColumns: string;
    readonly linked: readonly Record<string, unknown>[];
    /** The host's key, which the provider alone gets: the agent in the guest has a stand-in. */
    readonly key: string;
    /** The keys the provider's upstream was sent during the run. */
    readonly sent: readonly string[];
  },
): Promise<void> {
  expect(readFileSync(join(project, run.file), 'utf8')).toBe(run.content);
  expect(statSync(join(project, run.file)).uid).toBe(process.getuid!());

  const calls = await sql<ModelCallFigures & { estimated_cost_usd: number }>(
    home,
    run.session,
    `SELECT provider, model, input_tokens, output_tokens, estimated_cost_usd FROM model_calls ${run.callsWhere} ORDER BY id`,
  );
  expect(calls.map(({ estimated_cost_usd: _cost, ...c }) => c)).toEqual(run.calls);
  expect(calls.every((c) => c.estimated_cost_usd > 0)).toBe(true);

  const linked = await sql(
    home,
    run.session,
    `SELECT ${run.linkColumns}, tr.model_call_id > tc.model_call_id AS answered_later FROM tool_calls tc JOIN tool_responses tr ON tr.call_id = tc.call_id`,
  );
  expect(linked).toEqual(run.linked);
  expect(await sql(home, run.session, `SELECT action, path FROM fs_events WHERE path = '${run.file}' ORDER BY seq LIMIT 1`)).toEqual([
    { action: 'created', path: run.file },
  ]);
  expect(await replayedScreen(home, run.session)).toContain(run.answer);

  expect(new Set(run.sent)).toEqual(new Set([run.key]));
  expect(await sql(home, run.session, 'SELECT DISTINCT outcome FROM substitution_events')).toEqual([{ outcome: 'substituted' }]);
  expect(filesHolding(home, run.key)).toEqual([]);

  const check = await runCapsemAsync(home, ['check', run.session]);
  expect(check.stdout, check.stdout).toContain('Findings: none');
  expect(check.code).toBe(0);
}

/** The text of the user's last message. */
function lastUserText(body: Body): string {
  const last = (body.messages ?? []).filter((m) => m.role === 'user').at(-1);
  if (!last) return '';
  if (typeof last.content === 'string') return last.content;
  return Array.isArray(last.content) ? (last.content as { type?: string; text?: string }[]).map((block) => block.text ?? '').join('') : '';
}

type ResponsesBody = { model?: string; input?: { type?: string; call_id?: string }[] | string; tools?: { name?: string; type?: string }[] };

/** An OpenAI Responses stream (server-sent events) carrying `items`, ending in response.completed with the usage. */
function responsesAnswer(
  res: ServerResponse,
  body: ResponsesBody,
  n: number,
  items: Record<string, unknown>[],
  usage: { input: number; output: number },
): void {
  const response = {
    id: `resp_capsem_${n}`,
    object: 'response',
    created_at: 1,
    model: body.model ?? 'gpt-5-codex',
    status: 'in_progress',
    output: [] as unknown[],
  };
  const events: { event: string; data: unknown }[] = [
    { event: 'response.created', data: { type: 'response.created', sequence_number: 0, response } },
  ];
  items.forEach((item, i) => {
    events.push({
      event: 'response.output_item.added',
      data: { type: 'response.output_item.added', output_index: i, item: { ...item, status: 'in_progress' } },
    });
    if (item.type === 'message') {
      const text = (item.content as { text: string }[])[0]!.text;
      events.push({
        event: 'response.output_text.delta',
        data: { type: 'response.output_text.delta', item_id: item.id, output_index: i, content_index: 0, delta: text },
      });
    }
    events.push({ event: 'response.output_item.done', data: { type: 'response.output_item.done', output_index: i, item } });
  });
  const done = {
    ...response,
    status: 'completed',
    output: items,
    usage: {
      input_tokens: usage.input,
      input_tokens_details: { cached_tokens: 0 },
      output_tokens: usage.output,
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: usage.input + usage.output,
    },
  };
  events.push({ event: 'response.completed', data: { type: 'response.completed', response: done } });
  sse(res, events);
}

/** Codex's shell tool, under whichever of its names and argument shapes this Codex offers. */
function codexShellCall(tools: readonly string[], script: string): { name: string; arguments: string } {
  if (tools.includes('shell_command')) return { name: 'shell_command', arguments: JSON.stringify({ command: script }) };
  if (tools.includes('exec_command')) return { name: 'exec_command', arguments: JSON.stringify({ cmd: script }) };
  return { name: 'shell', arguments: JSON.stringify({ command: ['bash', '-lc', script] }) };
}

type GeminiBody = {
  contents?: { role?: string; parts?: { functionResponse?: unknown }[] }[];
  tools?: { functionDeclarations?: { name: string }[] }[];
};

/** A Gemini streamGenerateContent answer (alt=sse): one chunk with the parts and the usage. */
function geminiAnswer(
  res: ServerResponse,
  model: string,
  parts: unknown[],
  usage: { input: number; output: number },
  stream: boolean,
): void {
  const chunk = {
    candidates: [{ content: { role: 'model', parts }, finishReason: 'STOP', index: 0 }],
    usageMetadata: { promptTokenCount: usage.input, candidatesTokenCount: usage.output, totalTokenCount: usage.input + usage.output },
    modelVersion: model,
    responseId: 'resp_capsem_gemini',
  };
  if (stream) return sse(res, [{ data: chunk }]);
  json(res, 200, chunk);
}

describe.skipIf(noAgentImage !== null)(
  `coding agents in a real VM, agent image${noAgentImage ? ` (skipped: ${noAgentImage})` : ''}`,
  () => {
    const home = vmTestHome();
    const project = join(USER_FOLDER, 'agent-project');
    let anthropic: Upstream;
    let openai: Upstream;
    let google: Upstream;
    let env: NodeJS.ProcessEnv;
    /** The tools each agent offered its model, for a failure's message. */
    const offered: Record<string, string[]> = {};
    /** The keys each provider's upstream was sent, by provider. */
    const sent: Record<'anthropic' | 'openai' | 'google', string[]> = { anthropic: [], openai: [], google: [] };

    beforeAll(async () => {
      mkdirSync(project, { recursive: true });
      const upHome = tempHome();
      anthropic = await startUpstream(upHome, ['api.anthropic.com'], (req, raw, res) => {
        sent.anthropic.push(keyOf(req));
        const body = (typeof raw === 'object' && raw !== null ? raw : {}) as Body;
        if (!req.url?.startsWith('/v1/messages') || req.url.startsWith('/v1/messages/count_tokens'))
          return json(res, 404, { type: 'error', error: { type: 'not_found_error', message: 'not here' } });
        if (lastUserText(body).includes('Say hello'))
          return anthropicAnswer(res, body, 'Hello from the local upstream.', [], { input: 700, output: 8 });
        const wantsBash = (body.tools ?? []).some((t) => t.name === 'Bash');
        if (wantsBash && !hasToolResult(body)) {
          return anthropicAnswer(
            res,
            body,
            'I will create the file.',
            [
              {
                id: 'toolu_capsem_bash_1',
                name: 'Bash',
                input: { command: 'echo made by claude > claude.txt', description: 'Create claude.txt' },
              },
            ],
            { input: 1200, output: 40 },
          );
        }
        if (wantsBash) return anthropicAnswer(res, body, 'Created claude.txt in the workspace.', [], { input: 1300, output: 12 });
        anthropicAnswer(res, body, 'Making a file', [], { input: 50, output: 3 });
      });
      openai = await startUpstream(upHome, ['api.openai.com'], (req, raw, res, n) => {
        sent.openai.push(keyOf(req));
        const body = (typeof raw === 'object' && raw !== null ? raw : {}) as ResponsesBody;
        if (req.method !== 'POST' || !req.url?.startsWith('/v1/responses'))
          return json(res, 404, { error: { message: 'not here', type: 'invalid_request_error' } });
        const tools = (body.tools ?? []).map((t) => t.name ?? t.type ?? '');
        offered.codex = tools;
        const answered =
          Array.isArray(body.input) &&
          body.input.some((item) => item.type === 'function_call_output' && item.call_id === 'call_capsem_codex_1');
        if (!answered) {
          return responsesAnswer(
            res,
            body,
            n,
            [
              {
                type: 'function_call',
                id: 'fc_capsem_1',
                call_id: 'call_capsem_codex_1',
                status: 'completed',
                ...codexShellCall(tools, 'echo made by codex > codex.txt'),
              },
            ],
            { input: 2100, output: 30 },
          );
        }
        responsesAnswer(
          res,
          body,
          n,
          [
            {
              type: 'message',
              id: 'msg_capsem_2',
              role: 'assistant',
              status: 'completed',
              content: [{ type: 'output_text', text: 'Created codex.txt in the workspace.', annotations: [] }],
            },
          ],
          { input: 2200, output: 9 },
        );
      });
      google = await startUpstream(upHome, ['generativelanguage.googleapis.com'], (req, raw, res) => {
        sent.google.push(keyOf(req));
        const body = (typeof raw === 'object' && raw !== null ? raw : {}) as GeminiBody;
        const call = /^\/v1(?:beta|alpha)?\/models\/([^/:]+):(streamGenerateContent|generateContent|countTokens)/.exec(req.url ?? '');
        if (!call) return json(res, 404, { error: { code: 404, message: 'not here', status: 'NOT_FOUND' } });
        const [, model, method] = call;
        if (method === 'countTokens') return json(res, 200, { totalTokens: 10 });
        const tools = (body.tools ?? []).flatMap((t) => (t.functionDeclarations ?? []).map((d) => d.name));
        if (tools.length === 0)
          return geminiAnswer(
            res,
            model!,
            [{ text: JSON.stringify({ reasoning: 'The task is done.', next_speaker: 'user' }) }],
            { input: 40, output: 8 },
            method === 'streamGenerateContent',
          );
        offered.gemini = tools;
        const answered = (body.contents ?? []).some((c) => (c.parts ?? []).some((p) => p.functionResponse !== undefined));
        if (!answered) {
          const write = tools.includes('write_file')
            ? { name: 'write_file', args: { file_path: '/workspace/gemini.txt', content: 'made by gemini\n' } }
            : { name: 'run_shell_command', args: { command: 'echo made by gemini > gemini.txt' } };
          return geminiAnswer(
            res,
            model!,
            [{ functionCall: { id: 'call_capsem_gemini_1', ...write } }],
            { input: 900, output: 20 },
            method === 'streamGenerateContent',
          );
        }
        geminiAnswer(
          res,
          model!,
          [{ text: 'Created gemini.txt in the workspace.' }],
          { input: 1000, output: 9 },
          method === 'streamGenerateContent',
        );
      });
      upHome.remove();
      const caFile = join(home.root, 'upstream-ca.pem');
      writeFileSync(caFile, anthropic.caPem);
      const resolve = [
        `api.anthropic.com:443=127.0.0.1:${anthropic.port}`,
        `api.openai.com:443=127.0.0.1:${openai.port}`,
        `generativelanguage.googleapis.com:443=127.0.0.1:${google.port}`,
      ];
      env = { ...NO_KEYS, CAPSEM_RESOLVE: resolve.join(','), CAPSEM_UPSTREAM_CA_FILE: caFile };
    });
    afterAll(async () => {
      await anthropic?.close();
      await openai?.close();
      await google?.close();
      home.remove();
      rmSync(project, { recursive: true, force: true });
    });

    it("Claude Code creates a file with its Bash tool: the file is the user's, the calls, the tool call and the file change are recorded, and the screen replays", async () => {
      const started = Date.now();
      const r = await runCapsemAsync(
        home.root,
        [
          'run',
          '--agent',
          'claude',
          '--name',
          'claude1',
          '--workspace',
          project,
          '--',
          '-p',
          'Create claude.txt saying "made by claude" with your Bash tool.',
          '--allowedTools',
          'Bash',
          '--model',
          'claude-sonnet-4-6',
        ],
        { ...env, ANTHROPIC_API_KEY: 'sk-ant-api03-capsem-test-key-0123456789' },
        { timeoutMs: 600_000 },
      );
      console.log(`Claude Code run: ${((Date.now() - started) / 1000).toFixed(1)} s`);
      expect(r.code, `${r.stdout}\n${r.stderr}`).toBe(0);
      expect(r.stdout).toContain('Created claude.txt in the workspace.');

      await expectRecordedRun(home.root, project, {
        session: 'claude1',
        file: 'claude.txt',
        content: 'made by claude\n',
        answer: 'Created claude.txt in the workspace.',
        callsWhere: "WHERE model = 'claude-sonnet-4-6'",
        calls: [
          { provider: 'anthropic', model: 'claude-sonnet-4-6', input_tokens: 1200, output_tokens: 40 },
          { provider: 'anthropic', model: 'claude-sonnet-4-6', input_tokens: 1300, output_tokens: 12 },
        ],
        linkColumns: 'tc.call_id, tc.tool_name',
        linked: [{ call_id: 'toolu_capsem_bash_1', tool_name: 'Bash', answered_later: 1 }],
        key: 'sk-ant-api03-capsem-test-key-0123456789',
        sent: sent.anthropic,
      });
    }, 900_000);

    it('Codex makes a file with one shell tool call over the Responses API: the same things are recorded', async () => {
      const started = Date.now();
      const r = await runCapsemAsync(
        home.root,
        [
          'run',
          '--agent',
          'codex',
          '--name',
          'codex1',
          '--workspace',
          project,
          '--',
          'exec',
          '--skip-git-repo-check',
          '--dangerously-bypass-approvals-and-sandbox',
          '-m',
          'gpt-5-codex',
          'Create codex.txt saying "made by codex".',
        ],
        { ...env, OPENAI_API_KEY: 'sk-proj-capsem-test-key-0123456789' },
        { timeoutMs: 600_000 },
      );
      console.log(`Codex run: ${((Date.now() - started) / 1000).toFixed(1)} s`);
      expect(r.code, `${r.stdout}\n${r.stderr}\ntools offered: ${offered.codex?.join(', ')}`).toBe(0);
      expect(r.stdout).toContain('Created codex.txt in the workspace.');

      await expectRecordedRun(home.root, project, {
        session: 'codex1',
        file: 'codex.txt',
        content: 'made by codex\n',
        answer: 'Created codex.txt in the workspace.',
        callsWhere: '',
        calls: [
          { provider: 'openai', model: 'gpt-5-codex', input_tokens: 2100, output_tokens: 30 },
          { provider: 'openai', model: 'gpt-5-codex', input_tokens: 2200, output_tokens: 9 },
        ],
        linkColumns: 'tc.call_id',
        linked: [{ call_id: 'call_capsem_codex_1', answered_later: 1 }],
        key: 'sk-proj-capsem-test-key-0123456789',
        sent: sent.openai,
      });
    }, 900_000);

    it('Gemini CLI makes a file with one tool call over streamGenerateContent: the same things are recorded', async () => {
      const started = Date.now();
      const r = await runCapsemAsync(
        home.root,
        [
          'run',
          '--agent',
          'gemini',
          '--name',
          'gemini1',
          '--workspace',
          project,
          '--',
          '--yolo',
          '-m',
          'gemini-2.5-flash',
          '-p',
          'Create gemini.txt saying "made by gemini".',
        ],
        { ...env, GEMINI_API_KEY: 'AIzaCapsemTestKey0123456789' },
        { timeoutMs: 600_000 },
      );
      console.log(`Gemini CLI run: ${((Date.now() - started) / 1000).toFixed(1)} s`);
      expect(r.code, `${r.stdout}\n${r.stderr}\ntools offered: ${offered.gemini?.join(', ')}`).toBe(0);
      expect(r.stdout).toContain('Created gemini.txt in the workspace.');

      await expectRecordedRun(home.root, project, {
        session: 'gemini1',
        file: 'gemini.txt',
        content: 'made by gemini\n',
        answer: 'Created gemini.txt in the workspace.',
        callsWhere: 'WHERE input_tokens >= 900',
        calls: [
          { provider: 'google', model: 'gemini-2.5-flash', input_tokens: 900, output_tokens: 20 },
          { provider: 'google', model: 'gemini-2.5-flash', input_tokens: 1000, output_tokens: 9 },
        ],
        linkColumns: 'tc.call_id',
        linked: [{ call_id: 'call_capsem_gemini_1', answered_later: 1 }],
        key: 'AIzaCapsemTestKey0123456789',
        sent: sent.google,
      });
    }, 900_000);

    it('Claude Code opens at its prompt on the terminal capsem run --agent attaches, answers what is typed there, and ends the session when it exits', async () => {
      const started = Date.now();
      const terminal = capsemTerminal(
        spawnCapsem(home.root, ['run', '--agent', 'claude', '--name', 'claude-live', '--workspace', project], {
          ...env,
          ANTHROPIC_API_KEY: 'sk-ant-api03-capsem-test-key-0123456789',
        }),
      );
      try {
        // Its prompt, with no theme, sign-in, trust or update screen before it.
        await terminal.waitFor("Claude Code's prompt", CLAUDE_PROMPT, 180_000);
        console.log(`Claude Code at its prompt: ${((Date.now() - started) / 1000).toFixed(1)} s`);
        expect(terminal.screen()).not.toMatch(
          /Choose the text style|Do you trust the files|Do you want to use this API key|Select login method/,
        );
        await terminal.typeLine('Say hello');
        // Its renderer places words by moving the cursor, so the words are compared without the spaces.
        await until(
          'the answer on screen',
          () => terminal.screen().replace(/\s+/g, '').includes('Hellofromthelocalupstream.'),
          120_000,
          terminal.shown,
        );
        await terminal.typeLine('/exit');
        expect(await terminal.exited, terminal.shown()).toBe(0);
      } finally {
        await terminal.close();
      }
      await expectStopped(home.root, 'claude-live');
      expect(screenText(await replayedScreen(home.root, 'claude-live')).replace(/\s+/g, '')).toContain('Hellofromthelocalupstream.');
    }, 900_000);

    it('capsem resume of the Claude Code session starts Claude Code again, not a login shell, with the key from the resuming shell', async () => {
      // The session the test above ended: its session_meta names the agent, never its key.
      const meta = await sql<{ key: string; value: string }>(
        home.root,
        'claude-live',
        "SELECT key, value FROM session_meta WHERE key = 'vm_terminal_agent' OR value LIKE '%capsem-test-key%'",
      );
      expect(meta).toEqual([{ key: 'vm_terminal_agent', value: 'claude' }]);
      const terminal = capsemTerminal(
        spawnCapsem(home.root, ['resume', 'claude-live'], { ...env, ANTHROPIC_API_KEY: 'sk-ant-api03-capsem-test-key-0123456789' }),
      );
      try {
        await terminal.waitFor("Claude Code's prompt after resume", CLAUDE_PROMPT, 180_000);
        await terminal.typeLine('/exit');
        expect(await terminal.exited, terminal.shown()).toBe(0);
      } finally {
        await terminal.close();
      }
      await expectStopped(home.root, 'claude-live');
    }, 900_000);
  },
);
