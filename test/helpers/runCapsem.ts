import { spawn, spawnSync, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
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

/** Where a `capsem` on the PATH runs from: a bin folder with a `capsem` symlink to bin/capsem.mjs, as `npm link` makes. */
export interface CapsemOnPath {
  readonly binDir: string;
  remove(): void;
}

/** Puts `capsem` in a temporary bin folder outside the checkout (not a global `npm link`, which would change the machine). */
export function capsemOnPath(): CapsemOnPath {
  const binDir = mkdtempSync(join(tmpdir(), 'capsem-bin-'));
  symlinkSync(BIN, join(binDir, 'capsem'));
  return { binDir, remove: () => rmSync(binDir, { recursive: true, force: true }) };
}

export interface SpawnOptions {
  /** Run `capsem` found on the PATH, with this bin folder first on it (see capsemOnPath), instead of `node bin/capsem.mjs`. */
  readonly onPath?: CapsemOnPath;
  /** Run it as another user (setpriv's arguments, see unprivilegedUser.ts), from `cwd`, a folder that user owns. */
  readonly asUser?: { readonly setpriv: readonly string[]; readonly cwd: string };
}

/** Starts the real `capsem` from the user's folder and hands back the child, for tests that talk to it while it runs. */
export function spawnCapsem(
  home: string,
  args: readonly string[],
  env: NodeJS.ProcessEnv = {},
  options: SpawnOptions = {},
): ChildProcessWithoutNullStreams {
  const base: NodeJS.ProcessEnv = { ...process.env, CAPSEM_HOME: home, TZ: 'UTC', ...env };
  if (options.asUser)
    return spawn('setpriv', [...options.asUser.setpriv, '--', process.execPath, BIN, ...args], { cwd: options.asUser.cwd, env: base });
  if (!options.onPath) return spawn(process.execPath, [BIN, ...args], { cwd: USER_FOLDER, env: base });
  return spawn('capsem', [...args], { cwd: USER_FOLDER, env: { ...base, PATH: `${options.onPath.binDir}${delimiter}${base.PATH ?? ''}` } });
}

/**
 * The same, without blocking this process: for tests that serve the child from here. With
 * `timeoutMs`, a capsem still running then is killed and reported as code -1 with a note on stderr.
 */
export function runCapsemAsync(
  home: string,
  args: readonly string[],
  env: NodeJS.ProcessEnv = {},
  options: SpawnOptions & { readonly timeoutMs?: number } = {},
): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawnCapsem(home, args, env, options);
    let stdout = '';
    let stderr = '';
    let timedOut = false;
    const timer =
      options.timeoutMs === undefined
        ? null
        : setTimeout(() => {
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

/** How a shell holds capsem's stdout: read up to `head` lines, then closed (`| head -N`), or a device that is always full (`>/dev/full`). */
export type StdoutShape = { readonly head: number } | 'full';

/**
 * Runs the real `capsem` from the user's folder with its stdout held in that shape; `stdout` is
 * what was read before it was closed. `input` is written to its stdin; a capsem still running after
 * `timeoutMs` (60 s) is killed.
 */
export function runCapsemShaped(
  home: string,
  args: readonly string[],
  shape: StdoutShape,
  options: { readonly env?: NodeJS.ProcessEnv; readonly input?: string; readonly timeoutMs?: number } = {},
): Promise<CliResult> {
  const timeoutMs = options.timeoutMs ?? 60_000;
  return new Promise((resolve, reject) => {
    const full = shape === 'full' ? openSync('/dev/full', 'w') : null;
    const child = spawn(process.execPath, [BIN, ...args], {
      cwd: USER_FOLDER,
      env: { ...process.env, CAPSEM_HOME: home, TZ: 'UTC', ...options.env },
      stdio: ['pipe', full ?? 'pipe', 'pipe'],
    });
    if (full !== null) closeSync(full);
    child.stdin!.end(options.input ?? '');
    let stdout = '';
    let stderr = '';
    if (shape !== 'full') {
      const out = child.stdout!;
      const take = (): void => {
        const lines = stdout.split('\n');
        if (lines.length <= shape.head) return;
        stdout = lines
          .slice(0, shape.head)
          .map((line) => `${line}\n`)
          .join('');
        out.destroy();
      };
      out.on('data', (c: Buffer) => {
        stdout += c.toString();
        take();
      });
      take();
    }
    const timer = setTimeout(() => {
      stderr += `\n(test: capsem did not exit within ${timeoutMs} ms; killed)\n`;
      child.kill('SIGKILL');
    }, timeoutMs);
    child.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code: code ?? -1, stdout, stderr });
    });
  });
}
