import { parseArgs, type ParseArgsConfig } from 'node:util';
import type { CapsemHome } from '../store/paths.ts';
import type { CommandOutput } from './commandOutput.ts';

export interface CliContext {
  readonly home: CapsemHome;
  /** A line on stdout; nothing once stdout takes no more (the exit status says so). */
  readonly out: (text: string) => void;
  readonly err: (text: string) => void;
  /** Stdout and stderr at the pace they are read, for output too large to hand over at once. */
  readonly output: CommandOutput;
}

/** A mistake in how the command was called: exit code 2 and a pointer to --help. */
export class UsageError extends Error {
  override name = 'UsageError';
}

/** Thrown by parseCommandArgs on --help: the CLI prints the command's usage and exits 0. */
export class HelpRequested extends Error {
  override name = 'HelpRequested';
}

export interface Command {
  readonly name: string;
  readonly summary: string;
  readonly usage: string;
  run(ctx: CliContext, argv: readonly string[]): Promise<number> | number;
}

type Options = NonNullable<ParseArgsConfig['options']>;

/** parseArgs with unknown options and bad values turned into UsageErrors, and --help answered for every command (HelpRequested). */
export function parseCommandArgs<O extends Options>(command: Pick<Command, 'name'>, argv: readonly string[], options: O) {
  const parsed = (() => {
    try {
      return parseArgs({
        args: [...argv],
        options: { ...options, help: { type: 'boolean', short: 'h' } },
        allowPositionals: true,
        strict: true,
      });
    } catch (err) {
      throw new UsageError(`${(err as Error).message.split('\n')[0]} (see capsem ${command.name} --help)`);
    }
  })();
  if ((parsed.values as { help?: boolean }).help) throw new HelpRequested(command.name);
  return parsed;
}

export function parseCount(value: string | undefined, flag: string, fallback: number): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0) throw new UsageError(`${flag} takes a whole number, not "${value}"`);
  return n;
}

export function parseAmount(value: string | undefined, flag: string): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isFinite(n) || n < 0) throw new UsageError(`${flag} takes a non-negative number, not "${value}"`);
  return n;
}
