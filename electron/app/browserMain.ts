import { parseArgs } from 'node:util';
import { runBrowserMode } from './appMain.ts';

// `npm start -- --browser` lands here (through scripts/start.mjs): the core and the renderer on
// loopback. Options: --port (else CAPSEM_UI_PORT, else a free port), --reason (why browser mode,
// shown by the page), --dev-port (a Vite dev server proxying /ws). CAPSEM_UI_TOKEN fixes the token
// (the dev script prints the dev server's URL with it); otherwise each run makes a new one.

const { values } = parseArgs({
  // --no-spare-vm is read from the command line by the core (store/appSettings.ts).
  options: { port: { type: 'string' }, reason: { type: 'string' }, 'dev-port': { type: 'string' }, 'no-spare-vm': { type: 'boolean' } },
  strict: true,
});

function portOf(value: string | undefined, what: string): number | undefined {
  if (value === undefined || value === '') return undefined;
  const port = Number(value);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`${what} must be a port number, not "${value}"`);
  return port;
}

const app = await runBrowserMode({
  port: portOf(values.port ?? process.env.CAPSEM_UI_PORT, values.port ? '--port' : 'CAPSEM_UI_PORT'),
  devPort: portOf(values['dev-port'], '--dev-port'),
  reason: values.reason ?? 'started with --browser',
  token: process.env.CAPSEM_UI_TOKEN || undefined,
});
if (app) {
  let stopping = false;
  const stop = (signal: string): void => {
    if (stopping) return;
    stopping = true;
    process.stderr.write(`capsem: ${signal}: stopping VMs and closing\n`);
    app.stop().then(
      () => process.exit(0),
      (err: unknown) => {
        process.stderr.write(`capsem: did not stop cleanly: ${(err as Error).message}\n`);
        process.exit(1);
      },
    );
  };
  process.once('SIGINT', () => stop('interrupted'));
  process.once('SIGTERM', () => stop('terminated'));
}
