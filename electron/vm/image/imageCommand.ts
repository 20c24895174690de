import { spawn } from 'node:child_process';

/** Which Debian package provides each tool the image build runs, for the "not installed" message. */
const PACKAGE_OF: Record<string, string> = {
  mmdebstrap: 'mmdebstrap',
  mksquashfs: 'squashfs-tools',
  'mkfs.ext4': 'e2fsprogs',
  debugfs: 'e2fsprogs',
  modinfo: 'kmod',
  ldd: 'libc-bin',
  npm: 'npm',
};

export interface CommandOptions {
  /** Called per output line (stdout and stderr); progress bars that redraw with \r count as lines. */
  readonly onLine?: (line: string) => void;
  readonly signal?: AbortSignal;
  /** Added to the environment the tool runs with; undefined removes a variable. */
  readonly env?: Readonly<Record<string, string | undefined>>;
  readonly cwd?: string;
}

// Build tools live in /usr/sbin and /sbin, which a non-root PATH often lacks.
function toolPath(): string {
  const parts = (process.env.PATH ?? '').split(':').filter((p) => p.length > 0);
  for (const extra of ['/usr/sbin', '/sbin']) if (!parts.includes(extra)) parts.push(extra);
  return parts.join(':');
}

/**
 * Runs a build tool and resolves with its stdout. A failure carries the tail of the tool's output,
 * because that is where mmdebstrap and mkfs say why.
 */
export function runCommand(command: string, args: readonly string[], options: CommandOptions = {}): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, PATH: toolPath(), LC_ALL: 'C', ...options.env },
      signal: options.signal,
      cwd: options.cwd,
    });
    let stdout = '';
    let tail = '';
    const partial = { stdout: '', stderr: '' };
    const take = (chunk: Buffer, stream: 'stdout' | 'stderr'): void => {
      const text = chunk.toString('utf8');
      if (stream === 'stdout') stdout += text;
      tail = (tail + text).slice(-4000);
      if (!options.onLine) return;
      const lines = (partial[stream] + text).split(/[\r\n]/);
      partial[stream] = lines.pop() ?? '';
      for (const line of lines) if (line.trim().length > 0) options.onLine(line);
    };
    child.stdout.on('data', (chunk: Buffer) => take(chunk, 'stdout'));
    child.stderr.on('data', (chunk: Buffer) => take(chunk, 'stderr'));
    child.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT') {
        const pkg = PACKAGE_OF[command];
        reject(new Error(`${command} is not installed${pkg ? ` (Debian package ${pkg})` : ''}`));
      } else reject(err);
    });
    child.on('close', (code, signal) => {
      for (const rest of [partial.stdout, partial.stderr]) if (rest.trim().length > 0) options.onLine?.(rest);
      if (code === 0) resolve(stdout);
      else reject(new Error(`${command} ${args.join(' ')} failed (${signal ?? `exit ${code}`}):\n${tail.trim()}`));
    });
  });
}
