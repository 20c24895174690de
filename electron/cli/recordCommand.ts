import { spawn, type ChildProcess } from 'node:child_process';
import { basename } from 'node:path';
import { constants } from 'node:os';
import { HomeKeyStore, LOCKED_KEY_TEXT } from '../credentials/homeKeyStore.ts';
import { withOwnership } from '../owner/ownership.ts';
import { CANNOT_RECORD_EXIT, startRecording } from '../recording/sessionRecording.ts';
import { parseCommandArgs, UsageError, type CliContext, type Command } from './context.ts';

/** How long a command told to stop (SIGTERM) has before it is killed. */
const STOP_GRACE_MS = 5_000;

export const recordCommand: Command = {
  name: 'record',
  summary: 'record a program on this machine through the proxy (no sandbox)',
  usage: `capsem record [--name N] -- CMD [ARGS...]

Runs CMD on this machine (no VM, no sandbox: it can touch everything you can) with its HTTP(S)
traffic sent through the recording proxy and the local CA trusted, records everything into a new
session, ends the session when CMD exits and exits with CMD's exit code.

If the session cannot be recorded any more (its disk is full or failing), the proxy refuses every
new request (507), CMD is stopped (SIGTERM, SIGKILL ${STOP_GRACE_MS / 1000} s later), the session ends crashed with
what was lost, and capsem exits ${CANNOT_RECORD_EXIT} (EX_IOERR) saying why.

Node's fetch, http.request and https.request are routed through the proxy by a preload
(NODE_OPTIONS=--require), in every worker thread too, and so are the libraries built on them (got,
node-fetch, undici on its global dispatcher, ws given { agent: https.globalAgent }). Child
processes inherit the proxy settings.

What is not recorded (it does not pass through the proxy):
  - hosts in your NO_PROXY (or no_proxy; both are kept, as one list), and hosts the program adds
    to its own NO_PROXY while it runs.
  - a request given a connection of its own: an http.Agent or https.Agent the program made,
    createConnection, undici's Client, Pool or Agent as the dispatcher, the ws package without an
    agent (give it { agent: https.globalAgent }, or http.globalAgent for ws://, to record it).
  - Node's http2 module, raw sockets (net, tls), UDP.
  - programs that ignore HTTPS_PROXY (Python's http.client, anything with its own sockets), and a
    child process started with an environment that leaves the proxy variables out.
  - the program's own name lookups (dns.lookup): they go to the system's resolver.

Local destinations (localhost, private networks) are refused (403) unless the policy names them:
the refusal says which rule to add to CAPSEM_HOME/policy.json, for example
  {"id":"allow-ollama","action":"allow","domains":["localhost"],"ports":[11434]}
before the "*" rule, or "privateAddresses": "allow" to open all private space.

  --name N   give the session a display name (resume and list by it)

Settings for tests and corporate setups:
  CAPSEM_RESOLVE="host:port=ip:port,..."   send a host to another address (like curl --resolve)
  CAPSEM_UPSTREAM_CA_FILE=FILE             also trust these CAs for upstream TLS`,
  async run(ctx, argv) {
    const dash = argv.indexOf('--');
    const { values } = parseCommandArgs(this, dash >= 0 ? argv.slice(0, dash) : argv, { name: { type: 'string' } });
    const command = dash >= 0 ? argv.slice(dash + 1) : [];
    if (command.length === 0) throw new UsageError('record needs a command after -- (see capsem record --help)');
    // The program must run here, in the caller's terminal and environment, whoever owns
    // CAPSEM_HOME; so with a live owner this is a plain client, and with none it owns meanwhile.
    const name = (values.name as string | undefined) ?? null;
    const recordHere = (): Promise<number> => recordLocally(ctx, name, command);
    return withOwnership(ctx.home, { kind: 'cli', command: `capsem record -- ${command.join(' ')}` }, recordHere, recordHere, {
      onNote: (text) => ctx.err(`capsem: ${text}`),
    });
  },
};

/** Asks the program to stop, and kills it if it has not within the grace period. */
async function stopChild(ctx: CliContext, child: ChildProcess, program: string, exited: Promise<number>): Promise<void> {
  child.kill('SIGTERM');
  let timer: NodeJS.Timeout | undefined;
  const graceOver = new Promise<true>((resolve) => (timer = setTimeout(() => resolve(true), STOP_GRACE_MS)));
  const late = await Promise.race([exited.then(() => false), graceOver]);
  clearTimeout(timer);
  if (!late) return;
  ctx.err(`capsem record: ${program} did not stop within ${STOP_GRACE_MS / 1000} s of SIGTERM; killed it`);
  child.kill('SIGKILL');
}

async function recordLocally(ctx: CliContext, name: string | null, command: readonly string[]): Promise<number> {
  const keyStore = new HomeKeyStore(ctx.home);
  const recording = await startRecording(ctx.home, { name, command, origin: { processName: basename(command[0]!) }, keyStore });
  const label = recording.session.name ? `${recording.session.id} (${recording.session.name})` : recording.session.id;
  const program = basename(command[0]!);
  ctx.err(
    `capsem record: session ${label}; proxy 127.0.0.1:${recording.proxy.port} (its credentials are in the command's HTTPS_PROXY). No sandbox: ${command[0]} runs directly on this machine.`,
  );
  const brokered = new Set(recording.credentials.broker.keys.map((k) => k.provider.id));
  for (const provider of keyStore.lockedProviders().filter((p) => !brokered.has(p))) {
    ctx.err(
      `capsem record: the ${provider} key is ${LOCKED_KEY_TEXT}, so this session has none for ${provider}: export it, or store it with capsem keys set ${provider}`,
    );
  }
  if (recording.unrecordedHosts.length > 0)
    ctx.err(`capsem record: NO_PROXY=${recording.unrecordedHosts.join(',')}: requests to these hosts go directly and are not recorded`);
  const child = spawn(command[0]!, command.slice(1), { stdio: 'inherit', env: recording.childEnv });
  const forward = (signal: NodeJS.Signals): void => void child.kill(signal);
  process.on('SIGINT', forward);
  process.on('SIGTERM', forward);
  const exited = new Promise<number>((resolve) => {
    child.on('error', (err) => {
      ctx.err(`capsem: cannot run ${command[0]}: ${err.message}`);
      resolve(127);
    });
    child.on('exit', (exitCode, signal) => resolve(exitCode ?? 128 + (signal ? (constants.signals[signal] ?? 0) : 0)));
  });
  const failure = await Promise.race([exited.then(() => null), recording.failed]);
  if (failure !== null) {
    ctx.err(`capsem record: stopping ${program}: ${failure}`);
    await stopChild(ctx, child, program, exited);
  }
  const code = await exited;
  // Still ours while the last rows are written: a second SIGTERM then must not kill this process
  // before the session ends (forwarding it to a program that has exited does nothing).
  const end = await recording
    .stop({ status: 'stopped', reason: code === 0 ? undefined : `${command[0]} exited with code ${code}` })
    .finally(() => {
      process.off('SIGINT', forward);
      process.off('SIGTERM', forward);
    });
  if (recording.failure()) {
    ctx.err(`capsem record: session ${label} crashed: ${end.reason}`);
    return CANNOT_RECORD_EXIT;
  }
  ctx.err(`capsem record: ${recording.writer.stats.committed} rows recorded in session ${label}`);
  return code;
}
