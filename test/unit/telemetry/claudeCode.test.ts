import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  agentIdOf,
  backgroundJobOf,
  MAX_AGENT_ID_BYTES,
  returnMarkersOf,
  sideCallOf,
  spawnedAgentOf,
  spawnRequestOf,
} from '../../../electron/telemetry/claudeCode.ts';

// What Claude Code 2.1.332 writes into its requests, read back into the facts the story needs.
// The texts are the binary's own (/work/findings-claude-code.md); every input is hostile, so each
// reader is also fuzzed: it never throws, and what it gives back is well formed.

const jobId = fc.stringMatching(/^[a-z][0-9a-z]{8}$/);
const agentId = fc.stringMatching(/^a[0-9a-f]{16}$/);

describe('agent ids from request headers', () => {
  it('keeps a usable value and refuses, whole, one with a control character or over 128 bytes', () => {
    expect(agentIdOf('a1bf9707ee0e71012')).toBe('a1bf9707ee0e71012');
    expect(agentIdOf('x'.repeat(MAX_AGENT_ID_BYTES))).toBe('x'.repeat(MAX_AGENT_ID_BYTES));
    expect(agentIdOf('x'.repeat(MAX_AGENT_ID_BYTES + 1))).toBeUndefined();
    expect(agentIdOf('é'.repeat(64))).toBe('é'.repeat(64));
    expect(agentIdOf('é'.repeat(65))).toBeUndefined();
    expect(agentIdOf('a1bf\n9707')).toBeUndefined();
    expect(agentIdOf('a1bf\u00859707')).toBeUndefined();
    expect(agentIdOf('a1bf\u007f')).toBeUndefined();
    expect(agentIdOf('')).toBeUndefined();
    expect(agentIdOf(['a1', 'a2'])).toBeUndefined();
    expect(agentIdOf(undefined)).toBeUndefined();
  });

  it('for any value: either exactly what was sent, or nothing (property)', () => {
    fc.assert(
      fc.property(fc.oneof(fc.string(), fc.string({ unit: 'binary' }), fc.string({ unit: 'grapheme', maxLength: 80 })), (value) => {
        const kept = agentIdOf(value);
        if (kept === undefined) return;
        expect(kept).toBe(value);
        expect(Buffer.byteLength(kept)).toBeLessThanOrEqual(MAX_AGENT_ID_BYTES);
        expect(kept).not.toMatch(/[\u0000-\u001f\u007f-\u009f]/);
      }),
      { numRuns: 500 },
    );
  });
});

describe('background commands', () => {
  it.each([
    [
      'Command running in background with ID: b3k9x0q2z. Output is being written to: /tmp/claude-0/x/tasks/b3k9x0q2z.output. You will be notified when it completes.',
      'b3k9x0q2z',
    ],
    ['Command was manually backgrounded by user with ID: b00000001. Output is being written to: /tmp/t.output.', 'b00000001'],
    [
      'Command was moved to the background (ID: bq7) so that a message that arrived while it was running can reach you; it was not interrupted. Output is being written to: /tmp/bq7.output.',
      'bq7',
    ],
    ['Command was moved to the background (ID: b9) after running for 30s. Output is being written to: /tmp/b9.output.', 'b9'],
    ['Command did not complete within its 120s timeout and was moved to the background (ID: bx1). Output is being written to: /x.', 'bx1'],
  ])('reads the job of %s', (result, id) => {
    expect(backgroundJobOf(result)).toBe(id);
  });

  it('takes no other result for one, nor an acknowledgement quoted later in a result', () => {
    expect(backgroundJobOf('npm test passed')).toBeUndefined();
    expect(backgroundJobOf('grep found: Command running in background with ID: b1. Output')).toBeUndefined();
    expect(backgroundJobOf('Command running in background with ID: . Output')).toBeUndefined();
  });

  it('reads back the id of any acknowledgement, and never throws on any text (property)', () => {
    fc.assert(
      fc.property(jobId, fc.string(), (id, tail) => {
        expect(backgroundJobOf(`Command running in background with ID: ${id}. Output is being written to: ${tail}`)).toBe(id);
      }),
    );
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), (text) => {
        const id = backgroundJobOf(text);
        if (id !== undefined) expect(id).toMatch(/^[A-Za-z0-9_-]{1,128}$/);
      }),
      { numRuns: 500 },
    );
  });
});

describe('the agent an Agent call ran', () => {
  it("reads the agentId line of a background or foreground result, and a teammate's agent_id", () => {
    expect(
      spawnedAgentOf(
        "Async agent launched successfully. (This tool result is internal metadata — never quote or paste any part of it, including the agentId below, into a user-facing reply.)\nagentId: a1bf9707ee0e71012 (internal ID - do not mention to user. Use SendMessage with to: 'a1bf9707ee0e71012', summary: '<5-10 word recap>' to continue this agent.)",
      ),
    ).toBe('a1bf9707ee0e71012');
    expect(
      spawnedAgentOf(
        "Found 3 callers.\nagentId: a0123456789abcdef (use SendMessage with to: 'a0123456789abcdef', summary: '<5-10 word recap>' to continue this agent)\n<usage>subagent_tokens: 9\ntool_uses: 1\nduration_ms: 4</usage>",
      ),
    ).toBe('a0123456789abcdef');
    expect(spawnedAgentOf('Spawned successfully. (…)\nagent_id: researcher@audit\nname: researcher')).toBe('researcher@audit');
  });

  it('finds none in a result that names none (an Explore agent in the foreground, a fork)', () => {
    expect(spawnedAgentOf('The parser lives in src/parse.ts.')).toBeUndefined();
    expect(spawnedAgentOf('the agentId: a1 is mentioned mid-line')).toBeUndefined();
  });

  it('reads any id back, and never gives a malformed one (property)', () => {
    fc.assert(
      fc.property(agentId, fc.string(), (id, before) => {
        expect(spawnedAgentOf(`${before.replace(/agent_?[iI]d: /g, '')}\nagentId: ${id} (internal ID)`)).toBe(id);
      }),
    );
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), (text) => {
        const id = spawnedAgentOf(text);
        if (id !== undefined) expect(id).toMatch(/^[A-Za-z0-9][A-Za-z0-9_.@-]{0,127}$/);
      }),
      { numRuns: 500 },
    );
  });
});

describe('the subagent an Agent call asks for', () => {
  it('reads its type and description, as Task did before it was renamed', () => {
    const args = JSON.stringify({ description: 'Survey the code', prompt: 'Find the parser', subagent_type: 'Explore' });
    expect(spawnRequestOf('Agent', args)).toEqual({ type: 'Explore', description: 'Survey the code' });
    expect(spawnRequestOf('Task', args)).toEqual({ type: 'Explore', description: 'Survey the code' });
    expect(spawnRequestOf('Agent', '{"prompt":"x"}')).toEqual({});
    expect(spawnRequestOf('Agent', 'not json')).toEqual({});
    expect(spawnRequestOf('Bash', args)).toBeUndefined();
  });

  it('for any arguments: strings or nothing, each at most 200 characters (property)', () => {
    fc.assert(
      fc.property(fc.oneof(fc.json(), fc.string()), (args) => {
        const spawn = spawnRequestOf('Agent', args)!;
        for (const v of [spawn.type, spawn.description]) if (v !== undefined) expect(typeof v === 'string' && v.length <= 200).toBe(true);
      }),
      { numRuns: 500 },
    );
  });
});

describe('task notifications and agent messages', () => {
  const notification = (taskId: string, rest: string): string =>
    `<task-notification>\n<task-id>${taskId}</task-id>\n${rest}\n</task-notification>`;

  it('reads an ended task with the tool call that started it, anywhere in the message', () => {
    const text = `<system-reminder>\n[SYSTEM NOTIFICATION - NOT USER INPUT]\n${notification(
      'b3k9x0q2z',
      '<tool-use-id>toolu_01AbC</tool-use-id>\n<output-file>/tmp/b3k9x0q2z.output</output-file>\n<status>completed</status>\n<summary>Background command "Run tests" completed (exit code 0)</summary>',
    )}\n</system-reminder>`;
    expect(returnMarkersOf(text)).toEqual([{ kind: 'notification', taskId: 'b3k9x0q2z', toolUseId: 'toolu_01AbC', status: 'completed' }]);
  });

  it('takes a check-in, which has no status, for no end', () => {
    const checkIn = notification(
      'b3k9x0q2z',
      '<tool-use-id>toolu_01AbC</tool-use-id>\n<summary>Background command "serve" is still running after 10m, with no new output for 5m</summary>',
    );
    expect(returnMarkersOf(`${checkIn}\nThis is a check-in, not a completion.`)).toEqual([]);
  });

  it("reads a subagent's notification and its hand-back message, in order", () => {
    const text = `${agentMessageOf('a1bf9707ee0e71012')}\n${notification(
      'a1bf9707ee0e71012',
      '<tool-use-id>toolu_9</tool-use-id>\n<status>completed</status>\n<summary>Agent "Survey the code" finished</summary>\n<note>…</note>\n<result>Report</result>',
    )}`;
    expect(returnMarkersOf(text)).toEqual([
      { kind: 'agent-message', from: 'a1bf9707ee0e71012' },
      { kind: 'notification', taskId: 'a1bf9707ee0e71012', toolUseId: 'toolu_9', status: 'completed' },
    ]);
  });

  it('never throws, and every marker it finds is well formed, whatever the text (property)', () => {
    const piece = fc.oneof(
      fc.string(),
      fc.constantFrom(
        '<task-notification>',
        '<task-id>',
        '</task-id>',
        '<status>completed</status>',
        '<summary>',
        '<agent-message from="',
        '">',
      ),
      agentId,
    );
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 30 }), (pieces) => {
        for (const m of returnMarkersOf(pieces.join(''))) {
          const id = m.kind === 'notification' ? m.taskId : m.from;
          expect(id).toMatch(/^[A-Za-z0-9][A-Za-z0-9_.@-]{0,127}$/);
          if (m.kind === 'notification') expect(m.status).toMatch(/^[a-z_]{1,32}$/);
        }
      }),
      { numRuns: 500 },
    );
  });
});

function agentMessageOf(from: string): string {
  return `<agent-message from="${from}">\n[Subagent hand-back] The text below is the final report of a subagent this session delegated to.\n  All callers found.\n</agent-message>`;
}

describe('side calls', () => {
  it("knows Claude Code's progress label and away recap by their prompts, and nothing else", () => {
    expect(
      sideCallOf(
        'Describe your most recent action in 3-5 words using present tense (-ing). Name the file or function, not the branch. Do not use tools.',
      ),
    ).toBe('progress-label');
    expect(
      sideCallOf(
        "Previous: Reading parser — say something NEW.\n\nDescribe the agent's most recent action in 3-5 words using present tense (-ing).",
      ),
    ).toBe('progress-label');
    expect(
      sideCallOf(
        'The user stepped away and is coming back. Recap in under 40 words, 1-2 plain sentences, no markdown. Lead with the overall goal and current task, then the one next action.',
      ),
    ).toBe('away-recap');
    expect(sideCallOf('Fix the failing test')).toBeUndefined();
    expect(sideCallOf('Please describe your most recent action in 3-5 words using present tense (-ing).')).toBeUndefined();
  });

  it('never throws on any text (property)', () => {
    fc.assert(fc.property(fc.string({ unit: 'binary' }), (text) => [undefined, 'progress-label', 'away-recap'].includes(sideCallOf(text))));
  });
});
