import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApiServer } from '../../electron/api/server.ts';
import type { SessionEvent } from '../../electron/contract/sessionEvent.ts';
import type { Timeline } from '../../electron/sessions/timeline.ts';
import { capsemHome } from '../../electron/store/paths.ts';
import { call } from '../helpers/apiClient.ts';
import { anthropicAnswer, hasToolResult, json, startUpstream, type AnthropicBody, type Upstream } from '../helpers/mockUpstreams.ts';
import { runCapsemAsync, USER_FOLDER } from '../helpers/runCapsem.ts';
import { tempHome } from '../helpers/tempHome.ts';
import { agentImageUnavailable, vmTestHome } from '../helpers/vmTestHome.ts';

// Issue #30's story, end to end: the real Claude Code of the agent image, unmodified, in a real
// VM against a local upstream that scripts it. Its main conversation starts a subagent with its
// Agent tool and a background shell command with Bash's run_in_background; the subagent makes a
// tool call of its own and reports back; the main conversation goes on until the notifications
// of both have reached it. The session's timeline must then tell that story: the subagent under
// main, linked to the Agent call that spawned it, its turns on its own lane, its return into main,
// and the job from its start to its end. Claude Code hands a notification over in two ways, and
// each run takes one: while main is busy in a tool round (appended to the next tool result), and
// once main has ended its turn (`claude -p` waits, and the notification starts a new turn as text).

const noAgentImage = agentImageUnavailable();
const NO_KEYS = { ANTHROPIC_API_KEY: '', OPENAI_API_KEY: '', GEMINI_API_KEY: '', GOOGLE_API_KEY: '' };
const MODEL = 'claude-sonnet-4-6';

const AGENT_CALL = 'toolu_story_agent_1';
const JOB_CALL = 'toolu_story_job_1';
const SUB_CALL = 'toolu_story_sub_1';
const WAIT_CALL = 'toolu_story_wait_';
const SPAWN = { description: 'Survey the workspace', subagent_type: 'general-purpose' };
const SUB_REPORT = 'Survey done: the workspace is ready.';
/**
 * The background job ends 8 s after the subagent's tool call, which is once the subagent has
 * reported: the two notifications then reach main one after the other, so the second one's request
 * re-sends the first.
 */
const JOB_COMMAND = 'while [ ! -e surveyed.txt ]; do sleep 0.2; done; sleep 8; echo done > job.txt';
const FINAL = 'The helper reported and job.txt is written.';
/** What main answers, ending its turn, in the run whose prompt asks it to end its turn while the two run. */
const IDLE = 'Both are running; I will end my turn until they report.';
const ENDS_ITS_TURN = 'end your turn until they report';
/** How many times the main conversation waits (a 2 s foreground sleep each) for the notifications, at most. */
const MAX_WAITS = 40;
/** Claude Code's tool-less side calls: the progress label and the away recap (their prompt text). */
const SIDE_CALL = /most recent action in 3-5 words|The user stepped away and is coming back/;

type Body = AnthropicBody & { system?: unknown };

/** The text of the request's last user message. */
function lastUserText(body: Body): string {
  const last = (body.messages ?? []).filter((m) => m.role === 'user').at(-1);
  if (!last) return '';
  if (typeof last.content === 'string') return last.content;
  return Array.isArray(last.content) ? (last.content as { text?: string }[]).map((block) => block.text ?? '').join('') : '';
}

/** The request's conversation, as one string to look for ids and markers in. */
function conversation(body: Body): string {
  return JSON.stringify(body.messages ?? []);
}

/** A notification naming the tool call `id` came appended to a tool result, not as a text block of its own. */
function notifiedInToolResult(body: Body, id: string): boolean {
  return (body.messages ?? []).some(
    (m) =>
      Array.isArray(m.content) &&
      (m.content as { type?: string; content?: unknown }[]).some(
        (block) => block.type === 'tool_result' && JSON.stringify(block.content).includes(`<tool-use-id>${id}</tool-use-id>`),
      ),
  );
}

/** A notification naming the tool call `id` has reached the conversation. */
function notified(body: Body, id: string): boolean {
  return conversation(body).includes(`<tool-use-id>${id}</tool-use-id>`);
}

/** What each request was taken for, in the order they came, for the figures and a failure's message. */
type Role = 'main' | 'subagent' | 'side' | 'other';
interface Seen {
  readonly role: Role;
  readonly agentId?: string;
  readonly parentId?: string;
  readonly answer: string;
  readonly last: string;
}
const seen: Seen[] = [];

/**
 * The script: main spawns, then waits for both notifications (with a 2 s foreground sleep, or by
 * ending its turn when the prompt asks for that) and ends; the subagent makes one tool call and reports.
 */
function story(req: IncomingMessage, raw: unknown, res: ServerResponse): void {
  if (!req.url?.startsWith('/v1/messages') || req.url.startsWith('/v1/messages/count_tokens'))
    return json(res, 404, { type: 'error', error: { type: 'not_found_error', message: 'not here' } });
  const body = (typeof raw === 'object' && raw !== null ? raw : {}) as Body;
  const agentId = req.headers['x-claude-code-agent-id'] as string | undefined;
  const note = (role: Role, answer: string): void => {
    seen.push({
      role,
      agentId,
      parentId: req.headers['x-claude-code-parent-agent-id'] as string | undefined,
      answer,
      last: lastUserText(body).slice(0, 120),
    });
  };
  const tools = (body.tools ?? []).map((t) => t.name);
  if (tools.length === 0 || SIDE_CALL.test(lastUserText(body))) {
    note('side', 'label');
    return anthropicAnswer(res, body, 'Surveying the workspace', [], { input: 300, output: 5 });
  }
  if (agentId !== undefined) {
    if (!hasToolResult(body)) {
      note('subagent', 'bash');
      return anthropicAnswer(
        res,
        body,
        'Looking around.',
        [{ id: SUB_CALL, name: 'Bash', input: { command: 'echo surveyed > surveyed.txt', description: 'Note the survey' } }],
        { input: 900, output: 30 },
      );
    }
    note('subagent', 'report');
    return anthropicAnswer(res, body, SUB_REPORT, [], { input: 1000, output: 12 });
  }
  if (!tools.includes('Agent')) {
    note('other', 'text');
    return anthropicAnswer(res, body, 'Nothing to do here.', [], { input: 100, output: 4 });
  }
  if (!conversation(body).includes(AGENT_CALL)) {
    note('main', 'spawn');
    return anthropicAnswer(
      res,
      body,
      'I will start a helper and a background job.',
      [
        { id: AGENT_CALL, name: 'Agent', input: { ...SPAWN, prompt: 'Look at the workspace and report back in one line.' } },
        {
          id: JOB_CALL,
          name: 'Bash',
          input: { command: JOB_COMMAND, description: 'Write job.txt after a pause', run_in_background: true },
        },
      ],
      { input: 2000, output: 80 },
    );
  }
  const waits = conversation(body).split(`"id":"${WAIT_CALL}`).length - 1;
  if ((notified(body, AGENT_CALL) && notified(body, JOB_CALL)) || waits >= MAX_WAITS) {
    note('main', 'final');
    return anthropicAnswer(res, body, FINAL, [], { input: 2500, output: 12 });
  }
  if (conversation(body).includes(ENDS_ITS_TURN)) {
    note('main', 'idle');
    return anthropicAnswer(res, body, IDLE, [], { input: 2200, output: 20 });
  }
  note('main', 'wait');
  anthropicAnswer(
    res,
    body,
    'Waiting for the helper and the job.',
    [{ id: `${WAIT_CALL}${waits + 1}`, name: 'Bash', input: { command: 'sleep 2', description: 'Wait a little' } }],
    { input: 2200, output: 20 },
  );
}

/** The id a Bash tool result acknowledged a background command under. */
function backgroundId(requests: Upstream['requests']): string | undefined {
  for (const r of requests) {
    const m = /Command running in background with ID: ([a-z0-9]+)\./.exec(JSON.stringify(r.body));
    if (m) return m[1];
  }
  return undefined;
}

/** Every event of the session, paged backward from the tail as a client does. */
async function allEvents(url: string, id: string): Promise<SessionEvent[]> {
  const events: SessionEvent[] = [];
  let before: number | undefined;
  for (;;) {
    const page = (await call(url, `/v1/sessions/${id}?limit=2000${before === undefined ? '' : `&before=${before}`}`)).json<{
      events: SessionEvent[];
      oldestSeq?: number;
    }>();
    events.unshift(...page.events);
    if (page.events.length === 0 || page.oldestSeq === undefined || page.events[0]!.seq <= page.oldestSeq) return events;
    before = page.events[0]!.seq;
  }
}

describe.skipIf(noAgentImage !== null)(
  `Claude Code's subagent and background job on the timeline, in a real VM${noAgentImage ? ` (skipped: ${noAgentImage})` : ''}`,
  () => {
    const home = vmTestHome();
    const project = join(USER_FOLDER, 'story-project');
    let anthropic: Upstream;
    let env: NodeJS.ProcessEnv;

    beforeAll(async () => {
      mkdirSync(project, { recursive: true });
      const upHome = tempHome();
      anthropic = await startUpstream(upHome, ['api.anthropic.com'], story);
      upHome.remove();
      const caFile = join(home.root, 'upstream-ca.pem');
      writeFileSync(caFile, anthropic.caPem);
      env = { ...NO_KEYS, CAPSEM_RESOLVE: `api.anthropic.com:443=127.0.0.1:${anthropic.port}`, CAPSEM_UPSTREAM_CA_FILE: caFile };
    });
    afterAll(async () => {
      // CAPSEM_STORY_DUMP=<file> keeps what the upstream was sent (keys left out), to see what Claude Code sent.
      const dump = process.env.CAPSEM_STORY_DUMP;
      if (dump && anthropic)
        writeFileSync(
          dump,
          JSON.stringify(
            anthropic.requests.map((r) => ({ ...r, headers: { ...r.headers, 'x-api-key': undefined, authorization: undefined } })),
            null,
            1,
          ),
        );
      await anthropic?.close();
      home.remove();
      rmSync(project, { recursive: true, force: true });
    });

    /** Runs Claude Code on `prompt` in a session named `name`, checks the story its timeline tells, and hands back what it sent. */
    async function expectStory(name: string, prompt: string): Promise<Upstream['requests']> {
      for (const file of ['job.txt', 'surveyed.txt']) rmSync(join(project, file), { force: true });
      seen.length = 0;
      const sentBefore = anthropic.requests.length;
      const started = Date.now();
      const r = await runCapsemAsync(
        home.root,
        [
          'run',
          '--agent',
          'claude',
          '--name',
          name,
          '--workspace',
          project,
          '--',
          '-p',
          prompt,
          '--allowedTools',
          'Bash,Agent',
          '--model',
          MODEL,
        ],
        { ...env, ANTHROPIC_API_KEY: 'sk-ant-api03-capsem-test-key-0123456789' },
        { timeoutMs: 600_000 },
      );
      const roles = seen.map((s, i) => `${i + 1} ${s.role}${s.agentId ? `[${s.agentId}]` : ''} ${s.answer} | ${s.last}`).join('\n');
      console.log(`Claude Code story run ${name}: ${((Date.now() - started) / 1000).toFixed(1)} s, ${seen.length} model calls\n${roles}`);
      const sent = anthropic.requests.slice(sentBefore).filter((q) => q.path.startsWith('/v1/messages'));
      expect(r.code, `${r.stdout}\n${r.stderr}\n${roles}`).toBe(0);
      expect(readFileSync(join(project, 'job.txt'), 'utf8')).toBe('done\n');

      // What the upstream saw: one subagent, started by main (no parent header), whose calls and
      // whose result reached main as a notification, as did the job's end.
      const subIds = [...new Set(seen.filter((s) => s.role === 'subagent').map((s) => s.agentId!))];
      expect(subIds, roles).toHaveLength(1);
      const sub = subIds[0]!;
      expect(seen.filter((s) => s.agentId !== undefined).every((s) => s.parentId === undefined)).toBe(true);
      expect(seen.at(-1)?.answer, roles).toBe('final');
      const jobId = backgroundId(sent);
      expect(jobId, 'the Bash result acknowledging the background command').toMatch(/^b[0-9a-z]{8}$/);

      const list = JSON.parse((await runCapsemAsync(home.root, ['list', '--json'])).stdout) as { id: string; name: string }[];
      const id = list.find((s) => s.name === name)!.id;
      const api = await startApiServer({ home: capsemHome({ CAPSEM_HOME: home.root }), port: 0 });
      try {
        // The events record which agent made each model call: the subagent's requests name it, main's do not.
        const events = await allEvents(api.url, id);
        const requests = events.filter((e) => e.kind === 'model' && e.phase === 'request');
        expect.soft(requests.length).toBe(sent.length);
        const bySub = requests.filter((e) => (e as { subagent?: string }).subagent === sub);
        expect.soft(bySub.length).toBe(sent.filter((q) => q.headers['x-claude-code-agent-id'] === sub).length);
        // Main started it, so no parent agent is named.
        expect.soft(bySub.filter((e) => 'parentSubagent' in e)).toEqual([]);
        expect
          .soft(requests.filter((e) => (e as { subagent?: string }).subagent === undefined).length)
          .toBe(requests.length - bySub.length);

        const t = (await call(api.url, `/v1/sessions/${id}/timeline`)).json<Timeline>();
        const shown = JSON.stringify({ ...t, hosts: t.hosts.length }, null, 1);
        expect.soft(t.agents, shown).toHaveLength(2);
        expect.soft(t.agents[0]).toEqual({ id: 'main', label: 'main agent' });
        const subAgent = t.agents.find((a) => a.id === sub);
        expect
          .soft(subAgent, shown)
          .toMatchObject({ parent: 'main', spawnTool: AGENT_CALL, label: SPAWN.description, type: SPAWN.subagent_type });
        expect.soft(Date.parse(subAgent?.returnedAt ?? ''), shown).toBeGreaterThan(Date.parse(subAgent?.spawnedAt ?? ''));

        // The subagent's own turns (its two scripted calls) sit on its lane; main keeps its own.
        const subTurns = t.turns.filter((turn) => turn.agent === sub);
        expect
          .soft(
            subTurns.map((turn) => turn.finish),
            shown,
          )
          .toEqual(['tool_use', 'end_turn']);
        expect.soft(subTurns.every((turn) => bySub.some((e) => e.seq === turn.seq))).toBe(true);
        expect.soft(t.turns.filter((turn) => turn.agent === 'main').length).toBe(seen.filter((s) => s.role === 'main').length);
        expect.soft(t.tools.find((tool) => tool.id === SUB_CALL)).toMatchObject({ agent: sub, name: 'Bash' });
        expect.soft(t.tools.find((tool) => tool.id === AGENT_CALL)).toMatchObject({ agent: 'main', name: 'Agent' });

        // Its result came back into main once, after its last turn, however often main re-sends it.
        expect.soft(t.returns, shown).toEqual([expect.objectContaining({ agent: sub, into: 'main' })]);
        expect.soft(Date.parse(t.returns[0]?.at ?? ''), shown).toBeGreaterThanOrEqual(Date.parse(subTurns.at(-1)?.end ?? ''));

        // The background command: started by main at its acknowledgement, ended at its notification.
        expect.soft(t.jobs, shown).toEqual([expect.objectContaining({ agent: 'main', id: jobId })]);
        const job = t.jobs[0];
        expect.soft(Date.parse(job?.end ?? ''), 'the job ends at the notification naming it').toBeGreaterThan(Date.parse(job?.start ?? ''));
        expect
          .soft(
            t.tools.find((tool) => tool.id === JOB_CALL),
            shown,
          )
          .toMatchObject({ agent: 'main', name: 'Bash', end: job?.start });

        expect.soft(t.hosts.some((h) => h.host === 'api.anthropic.com' && h.kind === 'llm')).toBe(true);
      } finally {
        await api.close();
      }
      return sent;
    }

    it('while main is busy in a tool round: the notifications come appended to its tool results', async () => {
      const sent = await expectStory('story-busy', 'Survey the workspace with a helper agent, and write job.txt in the background.');
      expect(sent.some((q) => notifiedInToolResult(q.body as Body, AGENT_CALL))).toBe(true);
      expect(sent.some((q) => notifiedInToolResult(q.body as Body, JOB_CALL))).toBe(true);
    }, 900_000);

    it('once main has ended its turn: each notification starts a turn of its own, as text, and the next turn re-sends it', async () => {
      const sent = await expectStory(
        'story-idle',
        `Survey the workspace with a helper agent, write job.txt in the background, and ${ENDS_ITS_TURN}.`,
      );
      // Main ended its turn after the acknowledgements and again after the subagent's notification.
      expect(seen.filter((s) => s.answer === 'idle')).toHaveLength(2);
      expect(sent.some((q) => notifiedInToolResult(q.body as Body, AGENT_CALL) || notifiedInToolResult(q.body as Body, JOB_CALL))).toBe(
        false,
      );
    }, 900_000);
  },
);
