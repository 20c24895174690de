import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const SCRIPT = fileURLToPath(new URL('./ownerChild.ts', import.meta.url));

export interface OwnerChild {
  readonly process: ChildProcess;
  /** The first line the child prints. */
  readonly firstLine: Promise<string>;
  /** Everything it printed, once it exits, with its exit code or signal. */
  readonly done: Promise<{ stdout: string; stderr: string; code: number | null; signal: NodeJS.Signals | null }>;
}

/** Runs test/helpers/ownerChild.ts (modes: lock, exit, race) against CAPSEM_HOME `root`. */
export function spawnOwnerChild(root: string, mode: 'lock' | 'exit' | 'race', holdMs = 0): OwnerChild {
  const child = spawn(process.execPath, ['--import', 'tsx', SCRIPT, root, mode, String(holdMs)], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  let lineWaiter: ((line: string) => void) | null = null;
  const firstLine = new Promise<string>((resolve) => (lineWaiter = resolve));
  child.stdout!.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
    const nl = stdout.indexOf('\n');
    if (nl >= 0) lineWaiter?.(stdout.slice(0, nl));
  });
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const done = new Promise<{ stdout: string; stderr: string; code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.on('close', (code, signal) => {
      lineWaiter?.(stdout);
      resolve({ stdout, stderr, code, signal });
    });
  });
  return { process: child, firstLine, done };
}
