// The least a TLS-intercepting proxy does, as a ceiling for ours on this machine: take a CONNECT, end the
// client's TLS with a leaf from the same CA, open TLS to the upstream, and pipe bytes both ways.
// No HTTP parsing, no policy, no recording. Its own process, like ours and mockttp.
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { connect, TLSSocket } from 'node:tls';
import { CertificateAuthority } from '../../electron/proxy/certificateAuthority.ts';
import { parseAuthority } from '../../electron/proxy/requestTarget.ts';
import { parseResolveMap } from '../../electron/proxy/resolveMap.ts';
import { capsemHome } from '../../electron/store/paths.ts';

const ca = await CertificateAuthority.load(capsemHome());
const resolve = parseResolveMap(process.env.CAPSEM_RESOLVE);
const upstreamCa = readFileSync(process.env.CAPSEM_UPSTREAM_CA_FILE!, 'utf8');

const server = createServer((_req, res) => res.writeHead(405).end());
server.on('connect', (req, client: Socket) => {
  const dest = parseAuthority(req.url ?? '', 443);
  const to = dest && resolve.get(`${dest.host}:${dest.port}`);
  if (!dest || !to) return void client.end('HTTP/1.1 502 Bad Gateway\r\ncontent-length: 0\r\n\r\n');
  void ca.contextFor(dest.host).then((secureContext) => {
    client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
    const inner = new TLSSocket(client, { isServer: true, secureContext });
    const upstream = connect({ host: to.address, port: to.port, servername: dest.host, ca: upstreamCa });
    inner.pipe(upstream).pipe(inner);
    for (const side of [client, inner, upstream])
      side.on('error', () => {
        inner.destroy();
        upstream.destroy();
      });
  });
});
server.listen(0, '127.0.0.1', () => process.stdout.write(`http://127.0.0.1:${(server.address() as AddressInfo).port}\n`));
process.on('SIGTERM', () => process.exit(0));
