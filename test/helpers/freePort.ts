import { createServer, type AddressInfo } from 'node:net';

/** A TCP port on 127.0.0.1 that nothing listens on right now. */
export async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const { port } = s.address() as AddressInfo;
  await new Promise((r) => s.close(r));
  return port;
}
