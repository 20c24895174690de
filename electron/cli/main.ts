import { capsemHome } from '../store/paths.ts';
import { apiCommand } from './apiCommand.ts';
import { checkCommand } from './checkCommand.ts';
import { commandOutput, OutputGone } from './commandOutput.ts';
import { HelpRequested, UsageError, type CliContext, type Command } from './context.ts';
import { devCommand } from './devCommand.ts';
import { doctorCommand } from './doctorCommand.ts';
import { exportCommand } from './exportCommand.ts';
import { importCommand } from './importCommand.ts';
import { keysCommand } from './keysCommand.ts';
import { listCommand } from './listCommand.ts';
import { ownerCommand } from './ownerCommand.ts';
import { recordCommand } from './recordCommand.ts';
import { renameCommand } from './renameCommand.ts';
import { resumeCommand } from './resumeCommand.ts';
import { runCommand } from './runCommand.ts';
import { shellCommand } from './shellCommand.ts';
import { sqlCommand } from './sqlCommand.ts';
import { stopCommand } from './stopCommand.ts';
import { vacuumCommand } from './vacuumCommand.ts';

const COMMANDS: readonly Command[] = [
  runCommand,
  shellCommand,
  resumeCommand,
  stopCommand,
  renameCommand,
  listCommand,
  checkCommand,
  sqlCommand,
  exportCommand,
  importCommand,
  vacuumCommand,
  recordCommand,
  keysCommand,
  ownerCommand,
  doctorCommand,
  apiCommand,
  devCommand,
];

function overview(): string {
  const width = COMMANDS.reduce((widest, c) => Math.max(widest, c.name.length), 0);
  return [
    'capsem: run AI coding agents in a local VM and record everything they do',
    '',
    'Usage: capsem <command> [options]',
    '',
    ...COMMANDS.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`),
    '',
    'Every command honours CAPSEM_HOME (default ~/.capsem) and has --help.',
    'Sessions are named by id or display name; a name is resolved to its id once, here.',
  ].join('\n');
}

/** Runs one CLI invocation; returns the exit code. Errors become one line on stderr. */
export async function runCli(argv: readonly string[], ctx: CliContext): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    ctx.out(overview());
    return name === undefined ? 2 : 0;
  }
  const command = COMMANDS.find((c) => c.name === name);
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
