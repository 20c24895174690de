import { DEFAULT_API_PORT, startApiServer } from '../api/server.ts';
import { parseCommandArgs, parseCount, UsageError, type Command } from './context.ts';

export const apiCommand: Command = {
  name: 'api',
  summary: 'serve the session events API on 127.0.0.1',
  usage: `capsem api [--port P] [--allow-delete]

Serves the session events API (GET /v1/sessions, paging, event detail, timeline, search, the
SSE live tail) over CAPSEM_HOME on 127.0.0.1 until interrupted, or until the line that gives its
address cannot be written. Routes take session ids; every route refuses a non-loopback Host and
any Origin header.

  --port P        port to listen on (default ${DEFAULT_API_PORT}; 0 picks a free one)
  --allow-delete  allow DELETE /v1/sessions and DELETE /v1/sessions/{id} (erase ended sessions)`,
  async run(ctx, argv) {
    const { values, positionals } = parseCommandArgs(this, argv, { port: { type: 'string' }, 'allow-delete': { type: 'boolean' } });
    if (positionals.length > 0) throw new UsageError('api takes no arguments (see capsem api --help)');
    const port = parseCount(values.port as string | undefined, '--port', DEFAULT_API_PORT);
    if (port > 65535) throw new UsageError('--port takes a port number up to 65535');
    let server;
    try {
      server = await startApiServer({ home: ctx.home, port, allowDelete: values['allow-delete'] === true });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'EADDRINUSE') throw new Error(`port ${port} is already in use; pick another with --port`);
      throw err;
    }
    ctx.out(`Capsem API: ${server.url}`);
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
