// mockttp (HTTP Toolkit's MITM engine) passing everything through to the benchmark's upstream,
// in its own process like ours.
import { generateCACertificate, getLocal } from 'mockttp';

const ca = await generateCACertificate();
const server = getLocal({ https: { key: ca.key, cert: ca.cert } });
await server.start();
await server.forAnyRequest().thenPassThrough({
  transformRequest: { replaceHost: { targetHost: process.env.BENCH_UPSTREAM!, updateHostHeader: false } },
  ignoreHostHttpsErrors: true,
});
process.stdout.write(`${JSON.stringify({ url: server.url, ca: ca.cert })}\n`);
process.on('SIGTERM', () => void server.stop().then(() => process.exit(0)));
