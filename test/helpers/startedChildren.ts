import type { ChildProcess } from 'node:child_process';
import { afterEach } from 'vitest';

/** The processes a test file starts; any still running after a test (one that failed part way) is killed. */
export function startedChildren(): Set<ChildProcess> {
  const started = new Set<ChildProcess>();
  afterEach(() => {
    for (const child of started) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    started.clear();
  });
  return started;
}
