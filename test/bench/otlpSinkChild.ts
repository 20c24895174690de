import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

// An OTLP/HTTP endpoint for the otel benchmark, in a process of its own so that taking the
// requests costs the measured process nothing: it reads each body and answers 200. Prints its URL.

const server = createServer((req, res) => {
  req.resume();
  req.on('end', () => res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end());
});
server.listen(0, '127.0.0.1', () => console.log(`http://127.0.0.1:${(server.address() as AddressInfo).port}`));
