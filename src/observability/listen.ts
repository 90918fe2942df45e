/** Starting the observability servers (metrics, health). */
import type { Server } from 'node:http';

/** Starts `server` on `port` and `host` (default: every address); resolves to the port it listens on (a free one for 0). */
export async function listen(server: Server, port: number, host = '0.0.0.0'): Promise<number> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  const addr = server.address();
  return typeof addr === 'object' && addr ? addr.port : port;
}
