/**
 * How the CLI reaches Redis: a URL that is not a Redis URL is refused at once, and a failed
 * connection names the URL (password masked) and its cause; TLS with the --tls-* files.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EXIT_INVALID, EXIT_UNREACHABLE } from '../../src/cli/exit-codes.js';
import type { GlobalOptions } from '../../src/cli/main.js';
import { CliError, openClient } from '../../src/cli/support.js';
import { freePort, RedisServer } from '../helpers/redis-server.js';

let secured: RedisServer;
let tlsServer: RedisServer;
let tlsPort: number;
const certs = mkdtempSync(join(tmpdir(), 'rota-tls-'));

beforeAll(async () => {
  secured = await RedisServer.start({ args: ['--requirepass', 'sesame'] });
  // a self-signed CA and a server certificate it signed, for 127.0.0.1
  const ssl = (...args: string[]) => execFileSync('openssl', args, { cwd: certs, stdio: 'ignore' });
  ssl(
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-keyout',
    'ca.key',
    '-out',
    'ca.crt',
    '-days',
    '2',
    '-subj',
    '/CN=rota-test-ca',
  );
  ssl('req', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'server.key', '-out', 'server.csr', '-subj', '/CN=127.0.0.1');
  execFileSync('sh', ['-c', 'printf "subjectAltName=IP:127.0.0.1\\n" > san.cnf'], { cwd: certs });
  ssl(
    'x509',
    '-req',
    '-in',
    'server.csr',
    '-CA',
    'ca.crt',
    '-CAkey',
    'ca.key',
    '-CAcreateserial',
    '-out',
    'server.crt',
    '-days',
    '2',
    '-extfile',
    'san.cnf',
  );
  tlsPort = await freePort();
  tlsServer = await RedisServer.start({
    args: [
      '--tls-port',
      String(tlsPort),
      '--tls-cert-file',
      join(certs, 'server.crt'),
      '--tls-key-file',
      join(certs, 'server.key'),
      '--tls-ca-cert-file',
      join(certs, 'ca.crt'),
      '--tls-auth-clients',
      'no',
    ],
  });
}, 60_000);

afterAll(async () => {
  await secured?.destroy();
  await tlsServer?.destroy();
});

const opts = (redis: string, more: Partial<GlobalOptions> = {}): GlobalOptions => ({ redis, queue: 'default', ...more });

/** The CliError that opening a client with `g` fails with. */
async function failure(g: GlobalOptions): Promise<CliError> {
  const err = await openClient(g).then(
    (c) => {
      c.disconnect();
      return null;
    },
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(CliError);
  return err as CliError;
}

describe('rota reaching Redis', () => {
  it('refuses a URL that is not a Redis URL at once, as an invalid value', async () => {
    for (const url of ['notaurl', 'http://x']) {
      const err = await failure(opts(url));
      expect(err.exitCode).toBe(EXIT_INVALID);
      expect(err.message).toContain('--redis');
    }
  });

  it('names a refused password, without printing it', async () => {
    const err = await failure(opts(`redis://:WRONGPW@127.0.0.1:${secured.port}`));
    expect(err.exitCode).toBe(EXIT_UNREACHABLE);
    expect(err.message).toContain('WRONGPASS');
    expect(err.message).toContain(`redis://:***@127.0.0.1:${secured.port}`);
    expect(err.message).not.toContain('WRONGPW');
  });

  it('names a missing password', async () => {
    const err = await failure(opts(`redis://127.0.0.1:${secured.port}`));
    expect(err.message).toContain('NOAUTH');
  });

  it('names a server that is not there', async () => {
    const err = await failure(opts(`redis://127.0.0.1:${await freePort()}`));
    expect(err.exitCode).toBe(EXIT_UNREACHABLE);
    expect(err.message).toContain('ECONNREFUSED');
  });

  it('names an untrusted TLS certificate, and connects with --tls-ca', async () => {
    const url = `rediss://127.0.0.1:${tlsPort}`;
    const err = await failure(opts(url));
    expect(err.message).toMatch(
      /TLS certificate is not trusted \((SELF_SIGNED_CERT_IN_CHAIN|UNABLE_TO_VERIFY_LEAF_SIGNATURE|UNABLE_TO_GET_ISSUER_CERT_LOCALLY)/,
    );
    const client = await openClient(opts(url, { tlsCa: join(certs, 'ca.crt') }));
    try {
      expect(await client.ping()).toBe('PONG');
    } finally {
      client.disconnect();
    }
  });
});
