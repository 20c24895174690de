import { randomBytes } from 'node:crypto';
import { agentTerminal, codingAgent, type AgentName } from './codingAgents.ts';
import { GUEST_WORKSPACE } from './image/imagePlan.ts';

// Under TCG the agent's first start after boot costs more than its later ones even with its
// binary in the page cache (Claude Code 10.7 s, then 7.1 / 6.1 / 5.4 s in fresh HOMEs, one boot):
// what its first run leaves behind for the next is the guest's and QEMU's own (the translated
// code of its binary, which is not position-independent, and the files it and its helpers page in),
// not its HOME (a start in a HOME used before gained nothing). So a spare runs the agent's real
// start once, on a pty of its own, in a HOME under /tmp made for it and removed after: the
// adopted session's first start is then a later one. The spare has no network and no key: the
// agent gets a placeholder key of its key's shape, approved in its settings, which reaches no one.

/** A key of the stand-in's shape: the agent must find one to open at its prompt; it is never sent anywhere. */
const PLACEHOLDER_KEY = 'sk-ant-api03-capsem-warm-up-placeholder-0123456789abcdef';
/** Where each warm-up's HOME and TMPDIR live, one folder per run (a random name). */
export const WARM_UP_ROOT = '/tmp/capsem-warm-up-';
/** Its start to the prompt took 10.7-27 s here under load; past this it is stopped, warm or not. */
export const WARM_UP_LIMIT_MS = 60_000;

/** What shows the agent is at its prompt, by agent: text its first screen draws. */
const PROMPT_MARKS: Partial<Record<AgentName, readonly string[]>> = {
  claude: ['Claude Code', GUEST_WORKSPACE, '─'.repeat(20)],
};

/**
 * In the guest: writes the settings files into a HOME of its own, starts the agent on a pty in
 * the workspace, and reads its screen until every mark is drawn, the time limit passes, the agent
 * exits or stdin ends (the host's stop). Then it kills the agent's process group and any process
 * still carrying the run's token in its environment (one that left the group), waits for them,
 * removes the folder, and prints how it went as one JSON line.
 */
export const WARM_UP_SCRIPT = `
import json, os, pty, select, shutil, signal, struct, sys, termios, fcntl, time
folder, limit, cwd = sys.argv[1], float(sys.argv[2]) / 1000, sys.argv[3]
marks = [m.encode() for m in json.loads(sys.argv[4])]
files, argv = json.loads(sys.argv[5]), sys.argv[6:]
token = os.path.basename(folder)
home, tmp = os.path.join(folder, 'home'), os.path.join(folder, 'tmp')
def clean():
    for pid in os.listdir('/proc'):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            if ('CAPSEM_WARM_UP=' + token).encode() in open('/proc/%s/environ' % pid, 'rb').read().split(b'\\0'):
                os.kill(int(pid), signal.SIGKILL)
        except OSError:
            pass
    shutil.rmtree(folder, ignore_errors=True)
outcome, child, t = 'failed', None, time.monotonic()
try:
    os.makedirs(tmp)
    for f in files:
        path = os.path.join(home, f['path'])
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, 'w') as out:
            out.write(f['content'])
    env = dict(os.environ, HOME=home, TMPDIR=tmp, TERM='xterm-256color', CAPSEM_WARM_UP=token)
    pid, fd = pty.fork()
    if pid == 0:
        os.chdir(cwd)
        os.execvpe(argv[0], argv, env)
    child = pid
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack('HHHH', 40, 120, 0, 0))
    screen, outcome = b'', 'limit'
    while time.monotonic() - t < limit:
        ready = select.select([fd, 0], [], [], 0.05)[0]
        if 0 in ready and not os.read(0, 1):
            outcome = 'stopped'
            break
        if fd in ready:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                chunk = b''
            if not chunk:
                outcome = 'exited'
                break
            screen = (screen + chunk)[-262144:]
            if all(m in screen for m in marks):
                outcome = 'prompt'
                break
finally:
    ms = round((time.monotonic() - t) * 1000)
    if child:
        try:
            os.killpg(child, signal.SIGKILL)
        except OSError:
            pass
        os.waitpid(child, 0)
    clean()
    print(json.dumps({'outcome': outcome, 'ms': ms}))
`;

/** How a warm-up ended: at the agent's prompt, at the time limit, stopped by the host, the agent gone, or failed (why). */
export interface WarmUp {
  readonly outcome: 'prompt' | 'limit' | 'stopped' | 'exited' | 'failed';
  readonly ms: number;
  readonly error: string | null;
  /** The script said it ended: its processes killed and its folder removed. */
  readonly cleaned: boolean;
}

/** The exec's argv and environment for one warm-up of `name`, its folder named at random. */
export function warmUpCommand(name: AgentName = 'claude', limitMs = WARM_UP_LIMIT_MS): { argv: string[]; env: Record<string, string> } {
  const marks = PROMPT_MARKS[name];
  if (!marks) throw new Error(`no warm-up for ${codingAgent(name).label}: its prompt is not known`);
  const terminal = agentTerminal(name, [], { ANTHROPIC_API_KEY: PLACEHOLDER_KEY });
  const folder = `${WARM_UP_ROOT}${randomBytes(6).toString('hex')}`;
  return {
    argv: [
      'python3',
      '-c',
      WARM_UP_SCRIPT,
      folder,
      String(limitMs),
      GUEST_WORKSPACE,
      JSON.stringify(marks),
      JSON.stringify(terminal.homeFiles),
      ...terminal.argv,
    ],
    env: terminal.env,
  };
}

/** The script's last line, or why there is none. */
export function parseWarmUp(stdout: string, stderr: string, code: number | null): WarmUp {
  const last = stdout.trim().split('\n').pop() ?? '';
  try {
    const parsed = JSON.parse(last) as { outcome?: unknown; ms?: unknown };
    const outcomes = ['prompt', 'limit', 'stopped', 'exited', 'failed'] as const;
    const outcome = outcomes.find((o) => o === parsed.outcome);
    if (outcome && typeof parsed.ms === 'number')
      return {
        outcome,
        ms: parsed.ms,
        error: outcome === 'failed' ? stderr.trim().slice(-500) || `exit ${code ?? 'unknown'}` : null,
        cleaned: true,
      };
  } catch {
    // Not the script's line: reported below.
  }
  return { outcome: 'failed', ms: 0, error: stderr.trim().slice(-500) || `exit ${code ?? 'unknown'}, no outcome printed`, cleaned: false };
}
