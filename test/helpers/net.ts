/** Loopback networking for tests. */
import { createServer, type AddressInfo } from 'node:net';

/** A TCP port on loopback that was free a moment ago (listened on with port 0, then closed). */
export async function freePort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const port = (srv.address() as AddressInfo).port;
  await new Promise<void>((r) => srv.close(() => r()));
  return port;
}
