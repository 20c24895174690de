// The upstream behind the proxy for the guest download benchmark, in its own process as a real
// upstream is elsewhere: serving 64 MiB would otherwise share the benchmark's main thread with
// the proxy being measured. HTTPS with the leaf and key in DOWNLOAD_CERT_FILE and
// DOWNLOAD_KEY_FILE, and plain HTTP; it sends its two ports to its parent.
import { readFileSync } from 'node:fs';
import { createServer as createPlainServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { createServer } from 'node:https';
import type { AddressInfo } from 'node:net';

const BYTES = Number(process.env.DOWNLOAD_BYTES);
const chunk = Buffer.alloc(1 << 20, 0x61);

/** `/64m` is the download, anything else "ok". */
function serve(req: IncomingMessage, res: ServerResponse): void {
  if (req.url !== '/64m') {
    res.writeHead(200, { 'content-type': 'text/plain', 'content-length': 3 });
    return void res.end('ok\n');
  }
  res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': BYTES });
  let sent = 0;
  const pump = (): void => {
    while (sent < BYTES) {
      sent += chunk.length;
      if (!res.write(chunk)) return void res.once('drain', pump);
    }
    res.end();
  };
  pump();
}

const tls = createServer(
  { cert: readFileSync(process.env.DOWNLOAD_CERT_FILE!, 'utf8'), key: readFileSync(process.env.DOWNLOAD_KEY_FILE!, 'utf8') },
  serve,
);
const plain = createPlainServer(serve);
await Promise.all([tls, plain].map((server) => new Promise<void>((r) => server.listen(0, '127.0.0.1', r))));
process.send!({ tls: (tls.address() as AddressInfo).port, plain: (plain.address() as AddressInfo).port });
process.on('disconnect', () => process.exit(0));
