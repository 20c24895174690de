import { HomeKeyStore } from '../credentials/homeKeyStore.ts';
import { sessionPaths } from '../store/paths.ts';
import { agentCredentials } from '../vm/agentCredentials.ts';
import { readVmSessionMeta } from '../vm/vmSessionMeta.ts';
import { parseCommandArgs, UsageError, type Command } from './context.ts';
import { resolveTarget } from './sessionTarget.ts';
import { attachTerminal } from './shellCommand.ts';

export const resumeCommand: Command = {
  name: 'resume',
  summary: 'boot a named session again and attach to its shell',
  usage: `capsem resume ID|NAME

Resolves the name to its session id once, boots that session's VM on its own disk and workspace
(the project folder it was started with, --workspace, shared again at /workspace; if that folder
is gone, capsem says so and boots nothing), reopens its session.db (new events continue its
sequence) and attaches this terminal to its shell. A session that is already running is attached to, never booted twice. Only named
sessions keep their disk (capsem run --name N); an unknown name lists close matches.

A session started with --agent starts the same coding agent again (without the arguments it
first had), its API key taken from this environment or the stored keys, as capsem run --agent takes it.`,
  async run(ctx, argv) {
    const { positionals } = parseCommandArgs(this, argv, {});
    if (positionals.length !== 1) throw new UsageError('resume takes one session id or name (see capsem resume --help)');
    const { id, record } = resolveTarget(ctx.home, positionals[0]!);
    const agent = record?.mode === 'vm' ? readVmSessionMeta(sessionPaths(ctx.home, id).dbPath).vm_terminal_agent : undefined;
    // Before anything boots, so a missing key leaves the session as it was; one still running needs no key to attach to.
    const credentials =
      agent && record?.status !== 'running' ? agentCredentials(agent, process.env, new HomeKeyStore(ctx.home), 'leave-to-owner') : {};
    return attachTerminal(ctx, `capsem resume ${positionals[0]}`, { id, resume: true, credentials: { ...credentials } });
  },
};
