// What Claude Code writes into its requests that tells its agents' story: which agent sent a
// request (its agent-id headers), the subagents its Agent tool starts and the id each one's result
// names, the background commands a tool result acknowledges, the task notifications and agent
// messages that carry a subagent's or a job's end back, and the side calls that are no turn of the
// story (a progress label, an away recap). Pure: a header value, a text or a tool call in, facts out.
// Everything here reads what a client sent, so every input is hostile: a value that is not usable
// is refused, never cleaned up.

/** The request headers Claude Code names its subagents with (lowercase, as Node hands them over). */
export const AGENT_ID_HEADER = 'x-claude-code-agent-id';
export const PARENT_AGENT_ID_HEADER = 'x-claude-code-parent-agent-id';

/** The most of an agent id kept, in UTF-8 bytes, as Cortex's subagent key allows. */
export const MAX_AGENT_ID_BYTES = 128;

/** The tools that start a subagent: Agent, and Task as versions before 2.1 called it. */
export const SPAWN_TOOLS: ReadonlySet<string> = new Set(['Agent', 'Task']);

/** The tool a subagent hands its report back with; calling it ends the subagent's run. */
export const HANDBACK_TOOL = 'SubagentHandback';

// A C0 or C1 control character, DEL among them: a value holding one is refused.
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

/**
 * An agent id as a request header carried it: the value when usable, else undefined. A repeated
 * header (an array), an empty value, one holding a control character or one over 128 bytes is
 * refused whole.
 */
export function agentIdOf(value: string | readonly string[] | number | undefined): string | undefined {
  if (typeof value !== 'string' || value === '' || CONTROL.test(value)) return undefined;
  return Buffer.byteLength(value) > MAX_AGENT_ID_BYTES ? undefined : value;
}

// Claude Code 2.1.332's strings, as its binary writes them. A job's id is a letter and eight
// characters (b3k9x0q2z); an agent's is `a`, an optional label and 16 hex digits; a teammate's
// may carry '@' and '.'. Ids are read as runs of these characters, never past 128 of them.
const JOB_ID = '[A-Za-z0-9_-]{1,128}';
const AGENT_ID = '[A-Za-z0-9][A-Za-z0-9_.@-]{0,127}';

/**
 * The Bash tool's acknowledgement of a command it left running, at the start of its result: run in
 * the background (`Command running in background with ID: b3k9x0q2z. Output is being written to: …`),
 * backgrounded by the user, or moved there (`Command was moved to the background (ID: b3k9x0q2z) …`,
 * `Command did not complete within its 120s timeout and was moved to the background (ID: …)`).
 */
const BACKGROUND_ACKS: readonly RegExp[] = [
  new RegExp(`^Command (?:running in background|was manually backgrounded by user) with ID: (${JOB_ID})\\.`),
  new RegExp(`^Command (?:was moved|did not complete within its \\d+s timeout and was moved) to the background \\(ID: (${JOB_ID})\\)`),
];

/** The id of the background command a tool result acknowledges, when it is one. */
export function backgroundJobOf(result: string): string | undefined {
  const text = result.trimStart();
  for (const ack of BACKGROUND_ACKS) {
    const id = ack.exec(text)?.[1];
    if (id !== undefined) return id;
  }
  return undefined;
}

/**
 * The line of an Agent call's result naming the subagent it ran: `agentId: a1bf9707ee0e71012 (…)`,
 * in the background or the foreground; `agent_id: …` for a teammate. A foreground Explore or Plan
 * agent's result, and a fork's, name none.
 */
const AGENT_ID_LINE = new RegExp(`(?:^|\\n)(?:agentId|agent_id): (${AGENT_ID})`);

/** The agent an Agent/Task call's result names, when it names one. */
export function spawnedAgentOf(result: string): string | undefined {
  return AGENT_ID_LINE.exec(result)?.[1]?.replace(/\.+$/, '') || undefined;
}

/** What an Agent/Task call asked for: the subagent's type and the call's description, its label. */
export interface SpawnRequest {
  readonly type?: string;
  readonly description?: string;
}

/** The subagent an Agent/Task call starts; undefined for any other tool, or arguments that are no JSON object. */
export function spawnRequestOf(toolName: string, argumentsJson: string): SpawnRequest | undefined {
  if (!SPAWN_TOOLS.has(toolName)) return undefined;
  let args: unknown;
  try {
    args = JSON.parse(argumentsJson);
  } catch {
    return {};
  }
  if (typeof args !== 'object' || args === null || Array.isArray(args)) return {};
  const { subagent_type: type, description } = args as Record<string, unknown>;
  return {
    ...(typeof type === 'string' && type !== '' ? { type: type.slice(0, 200) } : {}),
    ...(typeof description === 'string' && description !== '' ? { description: description.slice(0, 200) } : {}),
  };
}

/**
 * A marker that carries something back to an agent: a task's notification that it ended (a job's
 * or a subagent's, with the tool call that started it where it names one), or another agent's
 * message (a subagent's hand-back report).
 */
export type ReturnMarker =
  | { readonly kind: 'notification'; readonly taskId: string; readonly toolUseId?: string; readonly status: string }
  | { readonly kind: 'agent-message'; readonly from: string };

const NOTIFICATION_OPEN = '<task-notification>';
const NOTIFICATION = new RegExp(`^\\s*<task-id>(${AGENT_ID})</task-id>`);
const TOOL_USE_ID = new RegExp(`^\\s*<tool-use-id>(${JOB_ID})</tool-use-id>`);
const STATUS = /<status>([a-z_]{1,32})<\/status>/;
const AGENT_MESSAGE = new RegExp(`<agent-message from="(${AGENT_ID})">`, 'g');
/** How far past its opening tag a notification's status is looked for: it comes before the summary and the result. */
const NOTIFICATION_HEAD = 2048;

/**
 * The ended tasks and the agent messages a message's text holds, in order. A notification with no
 * status is a check-in on a task still running (`This is a check-in, not a completion.`): no end.
 */
export function returnMarkersOf(text: string): ReturnMarker[] {
  const out: { at: number; marker: ReturnMarker }[] = [];
  for (let at = text.indexOf(NOTIFICATION_OPEN); at >= 0; at = text.indexOf(NOTIFICATION_OPEN, at + 1)) {
    const head = text.slice(at + NOTIFICATION_OPEN.length, at + NOTIFICATION_OPEN.length + NOTIFICATION_HEAD);
    const task = NOTIFICATION.exec(head);
    if (!task) continue;
    const rest = head.slice(task[0].length);
    const status = STATUS.exec(rest.split('<summary>', 1)[0]!)?.[1];
    if (status === undefined) continue;
    const toolUseId = TOOL_USE_ID.exec(rest)?.[1];
    out.push({ at, marker: { kind: 'notification', taskId: task[1]!, status, ...(toolUseId !== undefined ? { toolUseId } : {}) } });
  }
  if (text.includes('<agent-message '))
    for (const m of text.matchAll(AGENT_MESSAGE)) out.push({ at: m.index, marker: { kind: 'agent-message', from: m[1]! } });
  return out.sort((a, b) => a.at - b.at).map((o) => o.marker);
}

/** A call that is no turn of the story: Claude Code's progress label, or its recap for a user who was away. */
export type SideCallPrompt = 'progress-label' | 'away-recap';

/**
 * The prompts of Claude Code's side calls, as the last message that is not the system prompt holds
 * them: the progress label (`Describe your most recent action in 3-5 words using present tense
 * (-ing). …`, or the agent's, after an optional `Previous: … — say something NEW.` line) and the away
 * recap (`The user stepped away and is coming back. Recap in under 40 words, …`).
 */
const SIDE_CALL_PROMPTS: readonly (readonly [RegExp, SideCallPrompt])[] = [
  [
    /^(?:Previous: [^\n]*\n+)?Describe (?:your|the agent's) most recent action in 3-5 words using present tense \(-ing\)\./,
    'progress-label',
  ],
  [/^The user stepped away and is coming back\. Recap in under 40 words/, 'away-recap'],
];

/** Which side call a request is, by the text of its last message that is not the system prompt. */
export function sideCallOf(lastMessageText: string): SideCallPrompt | undefined {
  const text = lastMessageText.trimStart();
  return SIDE_CALL_PROMPTS.find(([prompt]) => prompt.test(text))?.[1];
}
