import { describe, expect, it } from 'vitest';
import type { FsChange } from '../../../electron/recording/fsEventRows.ts';
import { GuestActivity } from '../../../electron/recording/guestActivity.ts';
import { SessionRecorder } from '../../../electron/recording/sessionRecorder.ts';
import { execOutputTap } from '../../../electron/recording/steps/commandRun.ts';

// What a VM session adds to its record besides traffic: file changes and the commands run in it,
// through the recording pipeline's steps.

function recorder() {
  const rows: { table: string; row: Record<string, unknown> }[] = [];
  const recorder = new SessionRecorder(
    {
      append: (table, row) => {
        rows.push({ table, row: row as Record<string, unknown> });
        return null;
      },
      answerToolCall: () => undefined,
      reserveEventId: () => 'unused',
    },
    1 << 20,
  );
  const activity = new GuestActivity(recorder);
  return { rows, activity };
}

const change = (path: string, is_dir = false): FsChange => ({ action: 'created', path, size: 10, is_dir, ts_ms: 1_000 });

describe('GuestActivity', () => {
  it("puts a change on the host's clock, whatever the guest's clock says: the tool call running then is found by host times", () => {
    const { rows, activity } = recorder();
    // A guest whose clock runs 21 s behind: its two changes 40 ms apart, the later one sent after the agent's quiet time.
    const guestNow = Date.now() - 21_000;
    const before = Date.now();
    activity.fs([
      { ...change('src/a.ts'), ts_ms: guestNow - 40 },
      { ...change('src/b.ts'), ts_ms: guestNow },
    ]);
    const [a, b] = rows.map((r) => Date.parse(r.row.timestamp as string));
    expect(b! - a!).toBe(40);
    expect(b!).toBeGreaterThanOrEqual(before - 100);
    expect(b!).toBeLessThanOrEqual(Date.now() - 100);
  });

  it("writes a change to the user's own path at once and a batch inside node_modules/ as one row when the batch ends", () => {
    const { rows, activity } = recorder();
    activity.fs([change('src/a.ts'), change('node_modules/x/index.js'), change('node_modules/y/index.js')]);
    expect(rows.map((r) => r.row.path)).toEqual(['src/a.ts']);
    activity.endFsBatch();
    expect(rows).toEqual([
      { table: 'fs_events', row: expect.objectContaining({ path: 'src/a.ts', entries: null }) },
      { table: 'fs_events', row: expect.objectContaining({ path: 'node_modules/', entries: 2, size: 20 }) },
    ]);
  });

  it('ends a held batch by itself once the agent stops sending', async () => {
    const { rows, activity } = recorder();
    activity.fs([change('.git/objects/ab/cd')]);
    await new Promise((r) => setTimeout(r, 120));
    expect(rows.map((r) => r.row.path)).toEqual(['.git/']);
  });

  it("keeps a command's exit, byte counts and the start of its output", () => {
    const { rows, activity } = recorder();
    const out = execOutputTap();
    const err = execOutputTap();
    out.push(Buffer.from('x'.repeat(5000)));
    activity.exec({
      argv: ['ls', '-l'],
      cwd: undefined,
      started: new Date(0),
      status: { code: 0, signal: null },
      durationMs: 7,
      out,
      err,
      failure: null,
    });
    expect(rows).toEqual([
      {
        table: 'exec_events',
        row: {
          timestamp: new Date(0).toISOString(),
          argv: '["ls","-l"]',
          cwd: null,
          exit_code: 0,
          signal: null,
          duration_ms: 7,
          stdout_bytes: 5000,
          stderr_bytes: 0,
          stdout_preview: 'x'.repeat(256),
          stderr_preview: null,
          error_message: null,
        },
      },
    ]);
  });
});
