/** Starting the observability servers (metrics, health). */
import type { Server } from 'node:http';

/** The address the metrics and health servers bind unless told otherwise: loopback only. */
export const DEFAULT_HOST = '127.0.0.1';

/** Where a server listens: the address it bound and its port. */
export interface Bound {
  host: string;
  port: number;
  /** `http://host:port`, an IPv6 address in brackets. */
  origin: string;
}

/**
 * Starts `server` on `port` and `host` (default 127.0.0.1); resolves to the address and port it
 * really listens on (a free port for 0).
 */
export async function listen(server: Server, port: number, host = DEFAULT_HOST): Promise<Bound> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const addr = server.address();
  const bound = typeof addr === 'object' && addr ? { host: addr.address, port: addr.port } : { host, port };
  const origin = `http://${bound.host.includes(':') ? `[${bound.host}]` : bound.host}:${bound.port}`;
  return { ...bound, origin };
}
