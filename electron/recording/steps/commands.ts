import type { BodyTap } from '../../proxy/exchange.ts';
import { OUTPUT_PREVIEW } from './commandRun.ts';
import { writesTo, type EventStep } from './step.ts';

// The commands the host runs in the guest, one exec_events row each as it ends.

/** The start of a command's output as text, for exec_events; null when it printed nothing. */
function previewOf(tap: BodyTap): string | null {
  return tap.total === 0 ? null : tap.body().bytes.toString('utf8').slice(0, OUTPUT_PREVIEW);
}

export const commands: EventStep<'exec'> = {
  name: 'commands',
  handles: 'exec',
  reads: 'a command the host ran in the guest, as it ended: argv, exit, timing, output',
  writes: ['exec_events'],
  description: 'Records each command the host runs in the guest: its argv, exit code or signal, duration and the start of its output',
  capabilities: [],
  actions: ['observe'],
  readsBody: false,
  config: writesTo(['exec_events']),
  record: (run) => [
    {
      table: 'exec_events',
      row: {
        timestamp: run.started.toISOString(),
        argv: JSON.stringify(run.argv),
        cwd: run.cwd ?? null,
        exit_code: run.status?.code ?? null,
        signal: run.status?.signal ?? null,
        duration_ms: run.durationMs,
        stdout_bytes: run.out.total,
        stderr_bytes: run.err.total,
        stdout_preview: previewOf(run.out),
        stderr_preview: previewOf(run.err),
        error_message: run.failure?.message ?? null,
      },
    },
  ],
};
