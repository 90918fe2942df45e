/**
 * The private Redis that `rota demo` and `rota bench` start without `--redis`: another user of the
 * machine, who knows its port but not its password, is refused; the URL Rota is given gets in.
 */
import { connect } from 'node:net';
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { startPrivateRedis } from '../../src/dev/redis-server.js';

/** What the server answers `commands` sent on a connection that gave no password (two replies). */
function unauthenticated(port: number, commands: string): Promise<string> {
  return new Promise((resolve, reject) => {
    let got = '';
    const sock = connect(port, '127.0.0.1', () => sock.write(commands));
    sock.on('data', (d) => {
      got += d.toString();
      if (got.split('\r\n').length > 2) {
        sock.destroy();
        resolve(got);
      }
    });
    sock.once('error', reject);
  });
}

describe('the private Redis of the demo and the bench', () => {
  it('refuses a client without its password and listens on 127.0.0.1 only', async () => {
    const server = await startPrivateRedis('tests');
    const u = new URL(server.url);
    const owner = new Redis(server.url);
    try {
      expect(u.password.length).toBeGreaterThanOrEqual(24);
      expect(await unauthenticated(Number(u.port), 'PING\r\nSET planted 1\r\n')).toMatch(/^-NOAUTH[^\n]*\n-NOAUTH/);
      expect(await owner.ping()).toBe('PONG');
      expect(await owner.exists('planted')).toBe(0);
      expect(await owner.config('GET', 'bind')).toEqual(['bind', '127.0.0.1']);
      // (a second one gets a password of its own)
      const other = await startPrivateRedis('tests');
      expect(new URL(other.url).password).not.toBe(u.password);
      await other.destroy();
    } finally {
      owner.disconnect();
      await server.destroy();
    }
  });
});
