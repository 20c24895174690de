import { findOwner, becomeOwner, type Ownership } from '../owner/ownership.ts';
import { hostVms, type VmChoice } from '../owner/vmHosting.ts';
import type { CapsemHome } from '../store/paths.ts';
import type { VmHost } from '../vm/vmHost.ts';
import type { AppCore } from './appCore.ts';

// The app owns CAPSEM_HOME while it runs: it hosts the VMs and serves the control socket the way a
// CLI owner does (owner/vmHosting.ts), so `capsem run` in a terminal starts its VM here and the session
// shows live in the window. When a CLI owns the home (a `capsem run` started before the app), the
// app does not wait for it: it starts browse-only (every recorded session can be opened; starting
// and stopping VMs say why not), and takes ownership as soon as the CLI lets go.

export class AlreadyRunningError extends Error {
  override name = 'AlreadyRunningError';
  constructor(
    readonly pid: number,
    message: string,
  ) {
    super(message);
  }
}

export interface AppOwnership {
  /** The VMs, once this process owns the home. */
  readonly vmHost: () => VmHost | null;
  /** Stops the VMs in order, then releases the home. */
  close(): Promise<void>;
}

const RETRY_MS = 2000;

export async function ownHome(
  home: CapsemHome,
  core: AppCore,
  command: string,
  vm: VmChoice = {},
  note: (text: string) => void = () => {},
): Promise<AppOwnership> {
  let ownership: Ownership | null = null;
  let host: VmHost | null = null;
  let retry: NodeJS.Timeout | null = null;
  let closed = false;

  const take = (owned: Ownership): void => {
    ownership = owned;
    if (owned.tookOver)
      note(`took over ${home.root} from pid ${owned.tookOver.pid} (${owned.tookOver.command}), which is no longer running`);
    host = hostVms(owned, home, vm);
    if (host.leftovers.folders > 0)
      note(`cleaned up after an earlier run that was killed: ${host.leftovers.sessionsEnded.length} session(s) marked crashed`);
    core.setVmHost(host);
  };

  const attempt = async (): Promise<boolean> => {
    const owned = await becomeOwner(home, { kind: 'app', command });
    if (!('holder' in owned)) {
      if (closed) await owned.close();
      else take(owned);
      return true;
    }
    const running = await findOwner(home, 1000);
    running?.client.close();
    if (running?.info.kind === 'app')
      throw new AlreadyRunningError(running.info.pid, `Capsem already runs for ${home.root} (pid ${running.info.pid})`);
    const who = `${owned.holder.command} (pid ${owned.holder.pid})`;
    core.setVmHost(null, `${who} owns ${home.root} now; recorded sessions can be browsed, and VMs start here once it has finished`);
    return false;
  };

  if (!(await attempt())) {
    note(`${home.root} is owned by a capsem command; browsing only until it finishes`);
    const again = (): void => {
      retry = setTimeout(() => {
        if (closed) return;
        attempt().then(
          (done) => (done ? note(`now the owner of ${home.root}: VMs can be started`) : again()),
          (err: unknown) => {
            note(`could not take ownership: ${(err as Error).message}`);
            again();
          },
        );
      }, RETRY_MS);
      retry.unref();
    };
    again();
  }

  return {
    vmHost: () => host,
    async close() {
      closed = true;
      if (retry) clearTimeout(retry);
      const vms = host as VmHost | null;
      const owned = ownership as Ownership | null;
      if (vms) await vms.stopAll();
      if (owned) await owned.close();
    },
  };
}
