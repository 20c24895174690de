import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export type ImageKind = 'minimal' | 'agent';

/** The recipe in build/guest/: plain files, so what the image is made of is readable without the code. */
export interface GuestRecipe {
  readonly dir: string;
  /** Every file the image depends on, name to contents; all of them go into the image hash. */
  readonly files: Readonly<Record<string, string>>;
  readonly initScript: string;
  readonly modules: readonly string[];
  readonly packages: readonly string[];
  readonly aptSources: readonly string[];
  readonly suite: string;
}

const COMMON_FILES = ['init-common.sh', 'modules.txt'];
/** The coding agents and the Node they run on, pinned by npm's lockfile (installed by imageCodingAgents.ts). */
export const AGENTS_PACKAGE = 'agents/package.json';
export const AGENTS_LOCK = 'agents/package-lock.json';
const KIND_FILES: Record<ImageKind, readonly string[]> = {
  minimal: ['init-minimal.sh'],
  agent: ['init-agent.sh', 'packages.txt', 'sources.list', 'modules-agent.txt', AGENTS_PACKAGE, AGENTS_LOCK],
};

/** The recipe files an image of `kind` is made from, relative to the recipe folder. */
export function recipeFileNames(kind: ImageKind): readonly string[] {
  return [...COMMON_FILES, ...KIND_FILES[kind]];
}

export function defaultRecipeDir(): string {
  return fileURLToPath(new URL('../../../build/guest/', import.meta.url));
}

function listLines(text: string): string[] {
  return text
    .split('\n')
    .map((line) => line.replace(/#.*$/, '').trim())
    .filter((line) => line.length > 0);
}

export function readRecipe(kind: ImageKind, dir: string = defaultRecipeDir()): GuestRecipe {
  const files: Record<string, string> = {};
  for (const name of recipeFileNames(kind)) {
    try {
      files[name] = readFileSync(join(dir, name), 'utf8');
    } catch (err) {
      throw new Error(`guest image recipe file ${join(dir, name)} cannot be read: ${(err as Error).message}`);
    }
  }
  const aptSources = kind === 'agent' ? listLines(files['sources.list']!) : [];
  const suite = aptSources[0]?.split(/\s+/)[2] ?? '';
  if (kind === 'agent' && suite.length === 0) throw new Error(`${join(dir, 'sources.list')} has no "deb URL SUITE ..." line`);
  return {
    dir,
    files,
    initScript: files[`init-${kind}.sh`]!,
    // The agent image's transparent network path needs netfilter; the minimal image goes without.
    modules: [...listLines(files['modules.txt']!), ...(kind === 'agent' ? listLines(files['modules-agent.txt']!) : [])],
    packages: kind === 'agent' ? listLines(files['packages.txt']!) : [],
    aptSources,
    suite,
  };
}
