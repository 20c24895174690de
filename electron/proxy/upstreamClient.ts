import { isIP } from 'node:net';
import { Agent, type buildConnector, type Dispatcher } from 'undici';
import type { Egress } from './egress.ts';

// The proxy's side toward real servers: undici's HTTP/1.1 client, which takes less CPU per request
// than node:http's, over sockets from the one egress function (egress.ts), so the address the
// policy checks is the address connected to and upstream TLS verifies the name asked for.
// Connections are pooled per origin and per kind of decision: a host a rule names exactly may be
// dialled in private space, one allowed through `*` may not, and the two never share a socket.

export interface UpstreamClientOptions {
  readonly egress: Egress;
  /** Idle time before an exchange is given up: waiting for the head, or between body pieces. */
  readonly idleMs: number;
  /** The policy's generation (PolicyStore.generation): a new one retires every pooled connection. */
  readonly policyGeneration: () => number;
}

export interface UpstreamClient {
  /** Sends one request; `explicit` (a rule names the host) allows private space. */
  dispatch(explicit: boolean, options: Dispatcher.DispatchOptions, handler: Dispatcher.DispatchHandlers): void;
  close(): Promise<void>;
}

/** An authority for a URL origin: IPv6 addresses in brackets. */
export function originOf(scheme: 'https' | 'http', host: string, port: number): string {
  return `${scheme}://${isIP(host) === 6 ? `[${host}]` : host}:${port}`;
}

/** undici's raw header list as node:http shapes it: lower-case names, repeats joined, set-cookie kept apart. */
export function headersFromRaw(raw: readonly Buffer[]): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i]!.toString('latin1').toLowerCase();
    const value = raw[i + 1]!.toString('latin1');
    const seen = out[name];
    if (seen === undefined) out[name] = name === 'set-cookie' ? [value] : value;
    else if (Array.isArray(seen)) seen.push(value);
    else out[name] = `${seen}, ${value}`;
  }
  return out;
}

export function startUpstreamClient(options: UpstreamClientOptions): UpstreamClient {
  function connector(explicit: boolean): buildConnector.connector {
    return (opts, callback) => {
      const tls = opts.protocol === 'https:';
      // A pooled connection serves every method, so only rules without methods judge its address.
      options.egress.dial({ host: opts.hostname, port: Number(opts.port) || (tls ? 443 : 80), tls, explicit }).then(
        ({ socket }) => callback(null, socket),
        (err: Error) => callback(err, null),
      );
    };
  }

  const agentOptions = { headersTimeout: options.idleMs, bodyTimeout: options.idleMs, connections: 256 };
  const pools = (): { explicit: Agent; checked: Agent } => ({
    explicit: new Agent({ ...agentOptions, connect: connector(true) }),
    checked: new Agent({ ...agentOptions, connect: connector(false) }),
  });
  let agents = pools();
  let generation = options.policyGeneration();
  return {
    dispatch(explicit, dispatchOptions, handler) {
      // A connection is checked once, when it is dialled: after a policy change, requests go out
      // on new connections, checked under the new policy (the old ones finish what they carry).
      if (options.policyGeneration() !== generation) {
        generation = options.policyGeneration();
        const retired = agents;
        agents = pools();
        void Promise.all([retired.explicit.close(), retired.checked.close()]);
      }
      (explicit ? agents.explicit : agents.checked).dispatch(dispatchOptions, handler);
    },
    close: async () => {
      await Promise.all([agents.explicit.destroy(), agents.checked.destroy()]);
    },
  };
}
