// Which tool call made a workspace change: among the tool spans open when the change was made (the
// timeline's, from the response that asked for the tool to the request that carried its result),
// the one whose arguments name the path (an Edit or Write of that file), else a shell command (it
// can write anything), else the one started last. None open: made outside any tool call. Pure.

/** A tool call on the clock, with what it was asked and the Conversation turn that asked. */
export interface ToolWindow {
  readonly callId: string;
  readonly name: string;
  /** What it was asked to do, as the timeline's tool span previews it. */
  readonly preview: string | null;
  readonly agent: string;
  readonly turn: number;
  /** Milliseconds; `end` is Infinity while the tool has no result yet. */
  readonly start: number;
  readonly end: number;
  /** The workspace path its arguments name (file_path, notebook_path), relative to /workspace; null when none. */
  readonly path: string | null;
}

const WORKSPACE = '/workspace/';

/** Tools that run a shell command: what they write, no argument names. */
const SHELL_TOOLS = new Set(['bash', 'shell', 'local_shell', 'exec_command', 'run_shell_command', 'execute_command']);

/** The workspace path a tool's arguments (JSON) name, relative to /workspace; null for none or a path outside it. */
export function namedPath(argumentsJson: string | null): string | null {
  if (argumentsJson === null) return null;
  let args: unknown;
  try {
    args = JSON.parse(argumentsJson);
  } catch {
    return null;
  }
  if (typeof args !== 'object' || args === null) return null;
  const { file_path: file, notebook_path: notebook } = args as Record<string, unknown>;
  const named = typeof file === 'string' ? file : typeof notebook === 'string' ? notebook : null;
  if (named === null || named === '') return null;
  if (named.startsWith(WORKSPACE)) return named.slice(WORKSPACE.length);
  if (named.startsWith('/')) return null;
  return named.startsWith('./') ? named.slice(2) : named;
}

function best(open: readonly ToolWindow[], path: string): ToolWindow | null {
  let shell: ToolWindow | null = null;
  let latest: ToolWindow | null = null;
  for (const tool of open) {
    if (tool.path === path) return tool;
    if (SHELL_TOOLS.has(tool.name.toLowerCase()) && (shell === null || tool.start >= shell.start)) shell = tool;
    if (latest === null || tool.start >= latest.start) latest = tool;
  }
  return shell ?? latest;
}

/**
 * The source of each change (by its index in `changes`): a sweep over changes and tools in time
 * order, holding the tools open at each change, so a long session costs its length, not its
 * changes times its tools.
 */
export function attribute(
  changes: readonly { readonly path: string; readonly t: number }[],
  tools: readonly ToolWindow[],
): (ToolWindow | null)[] {
  const order = changes.map((_, i) => i).sort((a, b) => changes[a]!.t - changes[b]!.t || a - b);
  const byStart = [...tools].sort((a, b) => a.start - b.start);
  const out: (ToolWindow | null)[] = new Array<ToolWindow | null>(changes.length).fill(null);
  let open: ToolWindow[] = [];
  let next = 0;
  for (const i of order) {
    const { path, t } = changes[i]!;
    while (next < byStart.length && byStart[next]!.start <= t) open.push(byStart[next++]!);
    open = open.filter((tool) => tool.end >= t);
    out[i] = best(open, path);
  }
  return out;
}
