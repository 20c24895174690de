import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const BIN = fileURLToPath(new URL('../../bin/capsem.mjs', import.meta.url));
/** A user runs capsem from their own project folder, never from this checkout. */
export const USER_FOLDER = mkdtempSync(join(tmpdir(), 'capsem-user-'));

export interface CliResult {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs the real `capsem` bin in a child process, as a user would from a shell. */
export function runCapsem(home: string, args: readonly string[], env: NodeJS.ProcessEnv = {}): CliResult {
  const result = spawnSync(process.execPath, [BIN, ...args], {
    env: { ...process.env, CAPSEM_HOME: home, TZ: 'UTC', ...env },
    cwd: USER_FOLDER,
    encoding: 'utf8',
    timeout: 60_000,
  });
  return { code: result.status ?? -1, stdout: result.stdout, stderr: result.stderr };
}

/**
 * The same, without blocking this process: for tests that serve the child from here. With
 * `timeoutMs`, a capsem still running then is killed and reported as code -1 with a note on stderr.
 */
export function runCapsemAsync(home: string, args: readonly string[], env: NodeJS.ProcessEnv = {}, options: { readonly timeoutMs?: number } = {}): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], { cwd: USER_FOLDER, env: { ...process.env, CAPSEM_HOME: home, TZ: 'UTC', ...env } });
    let stdout = '';
    let stderr = '';
    let timedOut = false;
    const timer = options.timeoutMs === undefined ? null : setTimeout(() => {
      timedOut = true;
      stderr += `\n(test: capsem did not exit within ${options.timeoutMs} ms; killed)\n`;
      child.kill('SIGKILL');
    }, options.timeoutMs);
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.on('error', reject);
    // Killed, it may leave a program it started holding its output open: its exit is the end then.
    child.on('exit', () => timedOut && resolve({ code: -1, stdout, stderr }));
    child.on('close', (code) => {
      if (timer) clearTimeout(timer);
      resolve({ code: code ?? -1, stdout, stderr });
    });
  });
}
