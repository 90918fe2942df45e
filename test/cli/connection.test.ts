/**
 * How the CLI reaches Redis: a URL that is not a Redis URL is refused at once, and a failed
 * connection names the URL (password masked) and its cause; TLS with the --tls-* files; a
 * Cluster node's URL gives a Cluster client carrying the URL's user and password and the TLS.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Cluster, Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EXIT_INVALID, EXIT_UNREACHABLE } from '../../src/cli/exit-codes.js';
import type { GlobalOptions } from '../../src/cli/support.js';
import { CliError, openClient, openTarget } from '../../src/cli/support.js';
import { Queue } from '../../src/index.js';
import { freeClusterPort, freePort, RedisServer } from '../helpers/redis-server.js';
import { eventually } from '../helpers/setup.js';

let secured: RedisServer;
let tlsServer: RedisServer;
let tlsPort: number;
/** A one-node Redis Cluster (every slot on it) over TLS, for user "rota" only. */
let tlsCluster: RedisServer;
let tlsClusterPort: number;
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
  // (the server's certificate, key and CA; clients show none)
  const tlsFiles = [
    '--tls-cert-file',
    join(certs, 'server.crt'),
    '--tls-key-file',
    join(certs, 'server.key'),
    '--tls-ca-cert-file',
    join(certs, 'ca.crt'),
    '--tls-auth-clients',
    'no',
  ];
  tlsPort = await freePort();
  tlsServer = await RedisServer.start({
    args: ['--tls-port', String(tlsPort), ...tlsFiles],
  });
  tlsClusterPort = await freeClusterPort();
  tlsCluster = await RedisServer.start({
    cluster: true,
    args: [
      '--tls-port',
      String(tlsClusterPort),
      '--tls-cluster',
      'yes',
      // (a lone node knows no address of its own to announce until it meets another)
      '--cluster-announce-ip',
      '127.0.0.1',
      ...tlsFiles,
      '--user',
      'default',
      'off',
      '--user',
      'rota',
      'on',
      '>sesame',
      '~*',
      '&*',
      '+@all',
    ],
  });
  const admin = new Redis({ port: tlsCluster.port, username: 'rota', password: 'sesame' });
  try {
    await admin.cluster('ADDSLOTSRANGE', 0, 16383);
    await eventually(async () => (await admin.cluster('INFO')).includes('cluster_state:ok'));
  } finally {
    admin.disconnect();
  }
}, 60_000);

afterAll(async () => {
  await secured?.destroy();
  await tlsServer?.destroy();
  await tlsCluster?.destroy();
  rmSync(certs, { recursive: true, force: true });
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

  it('takes a Cluster node for its cluster, with the user, password and TLS of the URL', async () => {
    const g = opts(`rediss://rota:sesame@127.0.0.1:${tlsClusterPort}`, { tlsCa: join(certs, 'ca.crt'), queue: 'tls-cluster' });
    const client = await openClient(g);
    try {
      expect(client).toBeInstanceOf(Cluster);
      expect((client as Cluster).nodes('master').map((n) => n.options.port)).toEqual([tlsClusterPort]);
      expect(await client.acl('WHOAMI')).toBe('rota');
    } finally {
      client.disconnect();
    }
    // (what an executor or the dashboard connects with: a Cluster with the same user and TLS)
    const target = await openTarget({ ...g, shards: 3 });
    const queue = new Queue('tls-cluster', { connection: target.connection, shards: target.shards['tls-cluster'] });
    try {
      expect(target.connection).toBeInstanceOf(Cluster);
      await queue.submitBulk([
        { task: 't', group: 'a' },
        { task: 't', group: 'b' },
        { task: 't', group: 'c' },
      ]);
      expect((await queue.counts()).waiting).toBe(3);
    } finally {
      await queue.close();
      target.close();
    }
  });
});
