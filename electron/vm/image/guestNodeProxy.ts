import { readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

// Node's built-in fetch and http/https modules ignore HTTP(S)_PROXY, and in the guest the proxy is
// the only way out, so the agent image carries the preload `capsem record` uses on the host, with
// what it loads, and loads it into every Node program and its threads (NODE_OPTIONS=--require, set by init).

export const GUEST_NODE_DIR = 'lib/capsem/node';
const PRELOAD = fileURLToPath(new URL('../../../resources/node-proxy-preload.cjs', import.meta.url));
/** The global http/https agents the preload loads, beside it under its own name. */
const AGENTS = fileURLToPath(new URL('../../../resources/node-proxy-agents.cjs', import.meta.url));

export interface GuestFile {
  /** Where it goes in the initramfs, relative to its root. */
  readonly guestPath: string;
  readonly hostPath: string;
}

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    return entry.isDirectory() ? filesUnder(path) : entry.isFile() ? [path] : [];
  });
}

export function guestNodeProxyFiles(): GuestFile[] {
  const undiciDir = join(createRequire(import.meta.url).resolve('undici/package.json'), '..');
  const undici = filesUnder(undiciDir)
    .filter((path) => !/\.(md|d\.ts)$/.test(path) && statSync(path).size > 0)
    .map((hostPath) => ({ guestPath: `${GUEST_NODE_DIR}/node_modules/undici/${relative(undiciDir, hostPath)}`, hostPath }));
  return [
    { guestPath: `${GUEST_NODE_DIR}/proxy-preload.cjs`, hostPath: PRELOAD },
    { guestPath: `${GUEST_NODE_DIR}/node-proxy-agents.cjs`, hostPath: AGENTS },
    ...undici,
  ];
}
