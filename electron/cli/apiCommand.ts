import { DEFAULT_API_PORT, startApiServer } from '../api/server.ts';
import { oncePerPeer } from '../platform/loopbackListener.ts';
import { socketTableReadable } from '../platform/socketTable.ts';
import { parseCommandArgs, parseCount, UsageError, type Command } from './context.ts';

export const apiCommand: Command = {
  name: 'api',
  summary: 'serve the session events API on 127.0.0.1',
  usage: `capsem api [--port P] [--allow-delete] [--any-local-user]

Serves the session events API (GET /v1/sessions, paging, event detail, timeline, search, the
SSE live tail) over CAPSEM_HOME on 127.0.0.1 until interrupted, or until the line that gives its
address cannot be written. Routes take session ids; every
route refuses a non-loopback Host and any Origin header. Only the user who owns CAPSEM_HOME is
served: a connection from another local account gets 403 (Linux tells who connects through
/proc/net/tcp; where that cannot be read, as on macOS, every connection is refused unless
--any-local-user is given).

  --port P          port to listen on (default ${DEFAULT_API_PORT}; 0 picks a free one)
  --allow-delete    allow DELETE /v1/sessions and DELETE /v1/sessions/{id} (erase ended sessions)
  --any-local-user  serve every account on this machine, not only CAPSEM_HOME's owner`,
  async run(ctx, argv) {
    const { values, positionals } = parseCommandArgs(this, argv, {
      port: { type: 'string' },
      'allow-delete': { type: 'boolean' },
      'any-local-user': { type: 'boolean' },
    });
    if (positionals.length > 0) throw new UsageError('api takes no arguments (see capsem api --help)');
    const port = parseCount(values.port as string | undefined, '--port', DEFAULT_API_PORT);
    if (port > 65535) throw new UsageError('--port takes a port number up to 65535');
    let server;
    try {
      server = await startApiServer({
        home: ctx.home,
        port,
        allowDelete: values['allow-delete'] === true,
        anyLocalUser: values['any-local-user'] === true,
        // A line for each uid that tries, however often it retries; GET /v1/status counts every refusal.
        onRefused: oncePerPeer((reason) => ctx.err(`capsem api: ${reason}`)),
      });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'EADDRINUSE') throw new Error(`port ${port} is already in use; pick another with --port`);
      throw err;
    }
    ctx.out(`Capsem API: ${server.url}`);
    if (values['any-local-user'] !== true && !socketTableReadable())
      ctx.err(
        'capsem api: /proc/net/tcp cannot be read here, so no connection can be told to be yours and every one is refused; --any-local-user serves every local account',
      );
    let stopped = false;
    await new Promise<void>((resolve) => {
      const stop = (): void => {
        if (stopped) return;
        stopped = true;
        process.off('SIGINT', stop);
        process.off('SIGTERM', stop);
        void server.close().then(resolve);
      };
      process.on('SIGINT', stop);
      process.on('SIGTERM', stop);
      // Nobody learnt the address: as a program killed by SIGPIPE would, stop serving.
      void ctx.output.broken.then(stop);
    });
    return 0;
  },
};
