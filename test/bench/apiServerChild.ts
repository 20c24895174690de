// The API server alone in its own process, so the benchmark can read its memory from /proc.
import { startApiServer } from '../../electron/api/server.ts';
import { capsemHome } from '../../electron/store/paths.ts';

const server = await startApiServer({ home: capsemHome(), port: 0 });
process.stdout.write(`${server.url}\n`);
process.on('SIGTERM', () => void server.close().then(() => process.exit(0)));
