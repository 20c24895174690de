import { capsemHome } from '../store/paths.ts';
import { commandOutput, OutputGone } from './commandOutput.ts';
import { HelpRequested, UsageError, type CliContext, type Command } from './context.ts';

// Each command's module is loaded when it runs: `capsem list` loads the session store, not the VM,
// proxy and archive code too (a CLI start took 2 s when every command was imported up front).
const COMMANDS: Readonly<Record<string, () => Promise<Command>>> = {
  run: async () => (await import('./runCommand.ts')).runCommand,
  shell: async () => (await import('./shellCommand.ts')).shellCommand,
  resume: async () => (await import('./resumeCommand.ts')).resumeCommand,
  stop: async () => (await import('./stopCommand.ts')).stopCommand,
  rename: async () => (await import('./renameCommand.ts')).renameCommand,
  list: async () => (await import('./listCommand.ts')).listCommand,
  check: async () => (await import('./checkCommand.ts')).checkCommand,
  sql: async () => (await import('./sqlCommand.ts')).sqlCommand,
  diff: async () => (await import('./diffCommand.ts')).diffCommand,
  revert: async () => (await import('./revertCommand.ts')).revertCommand,
  export: async () => (await import('./exportCommand.ts')).exportCommand,
  import: async () => (await import('./importCommand.ts')).importCommand,
  vacuum: async () => (await import('./vacuumCommand.ts')).vacuumCommand,
  record: async () => (await import('./recordCommand.ts')).recordCommand,
  keys: async () => (await import('./keysCommand.ts')).keysCommand,
  owner: async () => (await import('./ownerCommand.ts')).ownerCommand,
  doctor: async () => (await import('./doctorCommand.ts')).doctorCommand,
  api: async () => (await import('./apiCommand.ts')).apiCommand,
  otel: async () => (await import('./otelCommand.ts')).otelCommand,
  dev: async () => (await import('./devCommand.ts')).devCommand,
};

async function overview(): Promise<string> {
  const commands = await Promise.all(Object.values(COMMANDS).map((load) => load()));
  const width = commands.reduce((widest, c) => Math.max(widest, c.name.length), 0);
  return [
    'capsem: run AI coding agents in a local VM and record everything they do',
    '',
    'Usage: capsem <command> [options]',
    '',
    ...commands.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`),
    '',
    'Every command honours CAPSEM_HOME (default ~/.capsem) and has --help.',
    'Sessions are named by id or display name; a name is resolved to its id once, here.',
  ].join('\n');
}

/** Runs one CLI invocation; returns the exit code. Errors become one line on stderr. */
export async function runCli(argv: readonly string[], ctx: CliContext): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    ctx.out(await overview());
    return name === undefined ? 2 : 0;
  }
  const load = Object.hasOwn(COMMANDS, name) ? COMMANDS[name] : undefined;
  const command = load ? await load() : undefined;
  try {
    if (!command) throw new UsageError(`unknown command "${name}" (run capsem --help for the list)`);
    return await command.run(ctx, rest);
  } catch (err) {
    if (err instanceof HelpRequested && command) {
      ctx.out(command.usage);
      return 0;
    }
    // Said once already, when stdout failed (main), or nothing to say: its reader went away.
    if (err instanceof OutputGone) return err.loss.exitCode;
    ctx.err(`capsem: ${(err as Error).message}`);
    return err instanceof UsageError ? 2 : 1;
  }
}

export async function main(): Promise<void> {
  // One output for every command: a closed pipe or a full disk under stdout ends any of them with
  // its exit status (141, or 1 with one line saying why), never an unhandled 'error' event.
  const output = commandOutput(process.stdout, process.stderr);
  const ctx: CliContext = {
    home: capsemHome(),
    out: (text) => void output.stdout(`${text}\n`),
    err: (text) => void output.stderr(`${text}\n`),
    output,
  };
  // Usually after the command has returned: its last write fails once the event loop runs again.
  void output.broken.then((loss) => {
    if (loss.message) ctx.err(`capsem: ${loss.message}`);
    process.exitCode = loss.exitCode;
  });
  const code = await runCli(process.argv.slice(2), ctx);
  process.exitCode = output.loss()?.exitCode ?? code;
}
