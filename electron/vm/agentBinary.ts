import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

// The guest agent that goes into the image. A packaged app ships it beside its resources
// (CAPSEM_AGENT_BINARY points there); a checkout builds it from native/agent/ with make, which is
// incremental, so this costs nothing once built.

const AGENT_DIR = fileURLToPath(new URL('../../native/agent/', import.meta.url));

export function agentBinary(env: NodeJS.ProcessEnv = process.env): string {
  if (env.CAPSEM_AGENT_BINARY) {
    if (!existsSync(env.CAPSEM_AGENT_BINARY))
      throw new Error(
        `CAPSEM_AGENT_BINARY names ${env.CAPSEM_AGENT_BINARY}, which does not exist: point it at a built capsem-agent, or unset it to build the one in native/agent`,
      );
    return env.CAPSEM_AGENT_BINARY;
  }
  const built = join(AGENT_DIR, 'build', 'capsem-agent');
  if (!existsSync(join(AGENT_DIR, 'Makefile'))) {
    if (existsSync(built)) return built;
    throw new Error(`the guest agent is missing (${built}); reinstall the app`);
  }
  const make = spawnSync('make', ['-s', '-C', AGENT_DIR], { encoding: 'utf8' });
  if (make.error)
    throw new Error(`building the guest agent needs make and gcc (apt-get install -y build-essential): ${make.error.message}`);
  if (make.status !== 0) throw new Error(`building the guest agent failed: ${make.stderr.trim().split('\n').slice(-3).join(' ')}`);
  return built;
}
