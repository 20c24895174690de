import { setTimeout as sleep } from 'node:timers/promises';
import type { CapsemHome } from '../store/paths.ts';
import { capsemVersion } from '../platform/capsemVersion.ts';
import { ControlClient } from './controlClient.ts';
import { startControlServer, type ControlServer, type MethodRegistry } from './controlSocket.ts';
import { acquireOwnerLock, type OwnerIdentity, type OwnerLock, type OwnerRecord } from './ownerLock.ts';
import { ownerPaths } from './ownerPaths.ts';
import { OwnerInfoSchema, type OwnerInfo } from './wire.ts';

// At most one process owns a CAPSEM_HOME. Whoever wants an owner first asks the control socket;
// only when nobody answers does it take the lock and serve the socket itself.

export interface Ownership {
  readonly info: OwnerInfo;
  readonly server: ControlServer;
  readonly lock: OwnerLock;
  /** The dead owner whose lock this one took over, if any. */
  readonly tookOver: OwnerRecord | null;
  /** Closes the socket, then releases the lock. */
  close(): Promise<void>;
}

export interface RunningOwner {
  readonly client: ControlClient;
  readonly info: OwnerInfo;
}

/** Asks the control socket who owns `home`; null when nobody answers there. */
export async function findOwner(home: CapsemHome, timeoutMs = 2000): Promise<RunningOwner | null> {
  let client: ControlClient;
  try {
    client = await ControlClient.connect(ownerPaths(home).socket, timeoutMs);
  } catch {
    // No socket, or a socket file left by a killed owner (ECONNREFUSED): nobody is home.
    return null;
  }
  let timer: NodeJS.Timeout | undefined;
  try {
    const answer = await Promise.race([
      client.call('owner.info'),
      new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error('owner.info timed out')), timeoutMs))),
    ]);
    return { client, info: OwnerInfoSchema.parse(answer) };
  } catch {
    client.close();
    return null;
  } finally {
    clearTimeout(timer);
  }
}

/** Takes the lock and serves the control socket, or reports the live owner that holds the lock. */
export async function becomeOwner(
  home: CapsemHome,
  who: OwnerIdentity,
  methods: MethodRegistry = {},
): Promise<Ownership | { readonly holder: OwnerRecord }> {
  const taken = await acquireOwnerLock(home, who);
  if (!taken.acquired) return { holder: taken.holder };
  const { lock } = taken;
  const info: OwnerInfo = {
    pid: lock.record.pid,
    kind: lock.record.kind,
    command: lock.record.command,
    startedAt: lock.record.startedAt,
    version: capsemVersion(),
  };
  let server: ControlServer;
  try {
    server = await startControlServer({ path: lock.record.socket, info, methods });
  } catch (err) {
    lock.release();
    throw err;
  }
  return {
    info,
    server,
    lock,
    tookOver: taken.tookOver,
    async close() {
      await server.close();
      lock.release();
    },
  };
}

export interface OwnershipOptions {
  readonly methods?: MethodRegistry;
  /** How long to wait for an owner that holds the lock but does not answer yet (it may be starting). */
  readonly waitMs?: number;
  /** Told when a dead owner's lock is taken over. */
  readonly onNote?: (text: string) => void;
}

/**
 * Runs `runAsClient` against the live owner of `home` if there is one, else becomes the owner for
 * the length of `runAsOwner`. Of several processes starting at once exactly one becomes the owner;
 * the others find the lock held, wait for its socket to answer, and run as its clients.
 */
export async function withOwnership<T>(
  home: CapsemHome,
  who: OwnerIdentity,
  runAsOwner: (owner: Ownership) => Promise<T>,
  runAsClient: (client: ControlClient, info: OwnerInfo) => Promise<T>,
  options: OwnershipOptions = {},
): Promise<T> {
  const deadline = Date.now() + (options.waitMs ?? 5000);
  for (;;) {
    const running = await findOwner(home);
    if (running) {
      try {
        return await runAsClient(running.client, running.info);
      } finally {
        running.client.close();
      }
    }
    const owned = await becomeOwner(home, who, options.methods);
    if ('holder' in owned) {
      if (Date.now() > deadline) {
        const { pid, kind, command } = owned.holder;
        throw new Error(`${home.root} is owned by pid ${pid} (${kind}: ${command}), but its control socket does not answer`);
      }
      await sleep(50);
      continue;
    }
    if (owned.tookOver)
      options.onNote?.(`took over ${home.root} from pid ${owned.tookOver.pid} (${owned.tookOver.command}), which is no longer running`);
    try {
      return await runAsOwner(owned);
    } finally {
      await owned.close();
    }
  }
}
