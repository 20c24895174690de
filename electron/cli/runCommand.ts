import { AGENT_NAMES } from '../contract/agents.ts';
import { CODING_AGENTS_ARE_IN, guestImageKind } from '../contract/guestImages.ts';
import type { VmRunRequest } from '../owner/vmMethods.ts';
import { CANNOT_RECORD_EXIT } from '../recording/sessionRecording.ts';
import { HomeKeyStore } from '../credentials/homeKeyStore.ts';
import { agentCredentials } from '../vm/agentCredentials.ts';
import { codingAgent, isAgentName } from '../vm/codingAgents.ts';
import { IMAGE_OPTION, IMAGE_SYNOPSIS, IMAGE_USAGE, imageOption } from './imageOption.ts';
import { parseCommandArgs, UsageError, type Command } from './context.ts';
import { PROJECT_FOLDER_OPTIONS, PROJECT_FOLDER_USAGE, projectFolderParams } from './projectFolderOption.ts';
import { attachTerminal } from './shellCommand.ts';
import { throughVmOwner, untilExit, vmEventPrinter } from './vmOwner.ts';

export const runCommand: Command = {
  name: 'run',
  summary: 'boot a VM, run a command in it, and record everything it does',
  usage: `capsem run [--name N] ${IMAGE_SYNOPSIS} [--workspace DIR] -- CMD [ARGS...]
       capsem run --agent claude|codex|gemini [--name N] [--workspace DIR] [-- AGENT_ARGS...]

Boots a new session's VM, runs CMD in it (in /workspace, the session's shared folder), streams its
output here and exits with CMD's exit code. The VM's only way out is the recording proxy: every
connection, model call, tool call, file change and command is recorded in the session.

If the session cannot be recorded any more (its disk is full or failing), the proxy refuses the
guest's new requests, the VM is stopped in order, the session ends crashed with what was lost,
and capsem exits ${CANNOT_RECORD_EXIT} (EX_IOERR) saying why.

Output is taken at the pace of whatever reads it: a slow reader slows CMD down, it does not fill
memory. If the reader goes away (| head), capsem stops the VM in order and exits with 141, as a
command killed by SIGPIPE would.

With --agent, the session's terminal runs that coding agent (Claude Code, Codex or Gemini CLI,
pinned in the agent image) in /workspace instead of CMD: this terminal is attached to it, as with
capsem shell, the app shows it live and its transcript is kept. It opens at its prompt (its
first-run screens are answered by its settings files; updates and telemetry are off); the
session ends when it exits, with its exit code. AGENT_ARGS go to the agent, for example
capsem run --agent claude --workspace . -- -p "fix the failing test". Its API key comes from this
environment: ANTHROPIC_API_KEY (claude), OPENAI_API_KEY (codex), GEMINI_API_KEY or GOOGLE_API_KEY (gemini),
else from the stored keys (capsem keys); one stored encrypted by the app is used while the app runs.

  --name N         give the session a display name (resume and list by it)
${IMAGE_USAGE}
  --agent NAME     claude, codex or gemini, on the session's terminal
${PROJECT_FOLDER_USAGE}

The first run builds the image (1-3 minutes for agent, with the coding agents) and keeps it in your image cache (capsem doctor shows where).
If the app or another capsem command owns CAPSEM_HOME, the VM runs there and shows up live in it.`,
  async run(ctx, argv) {
    const dash = argv.indexOf('--');
    const { values, positionals } = parseCommandArgs(this, dash >= 0 ? argv.slice(0, dash) : argv, {
      name: { type: 'string' },
      ...IMAGE_OPTION,
      agent: { type: 'string' },
      ...PROJECT_FOLDER_OPTIONS,
    });
    const command = dash >= 0 ? argv.slice(dash + 1) : positionals;
    const image = imageOption(values.image);
    const name = (values.name as string | undefined) ?? null;
    const agent = values.agent as string | undefined;
    if (agent !== undefined) {
      if (!isAgentName(agent)) throw new UsageError(`--agent takes ${AGENT_NAMES.join(', ')}, not "${agent}"`);
      if (dash < 0 && positionals.length > 0)
        throw new UsageError(`the agent's own arguments go after --: capsem run --agent ${agent} -- ${positionals.join(' ')}`);
      if (!guestImageKind(image).codingAgents)
        throw new UsageError(`${codingAgent(agent).label} is in ${CODING_AGENTS_ARE_IN} only: leave out --image ${image}`);
      // Before anything starts, so a missing key leaves no session behind. A key only the app can
      // read is the owner's to check: the app reads it, a CLI owner refuses.
      const credentials = agentCredentials(agent, process.env, new HomeKeyStore(ctx.home), 'leave-to-owner');
      const folder = projectFolderParams(ctx, values);
      return attachTerminal(ctx, `capsem run --agent ${agent}`, {
        name,
        image,
        ...folder,
        agent: { name: agent, args: command, credentials: { ...credentials } },
      });
    }
    if (command.length === 0) throw new UsageError('run needs a command after -- (see capsem run --help)');
    const params: VmRunRequest = { name, image, ...projectFolderParams(ctx, values), argv: command };
    return throughVmOwner(ctx, `capsem run -- ${command.join(' ')}`, async (client) => {
      const output = ctx.output;
      const stream = await client.stream('vm.run', params, { onData: (b) => output.stdout(b), onEvent: vmEventPrinter(ctx, output) });
      return untilExit(ctx, client, stream.exit, output);
    });
  },
};
