/**
 * Where the CLI could show a secret, and the database a URL names: `--help` does not print
 * $REDIS_URL (a password in it), a malformed URL is echoed with its password masked,
 * `--redis-file` and `--token-file` keep the password and the token out of the process list, and
 * a database the server does not have is refused (status 3) rather than written to database 0.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EXIT_INVALID, EXIT_UNREACHABLE, EXIT_USAGE } from '../../src/cli/exit-codes.js';
import { BIN, rota, servedPage } from '../helpers/cli.js';
import { NodeProcess } from '../helpers/processes.js';
import { freePort, RedisServer } from '../helpers/redis-server.js';

const PASSWORD = 'pw-s3cret-4x9';
const TOKEN = 'tok-s3cret-7q2w';
let server: RedisServer;
let admin: Redis;
const dir = mkdtempSync(join(tmpdir(), 'rota-secrets-'));

beforeAll(async () => {
  server = await RedisServer.start({ args: ['--requirepass', PASSWORD] });
  admin = new Redis({ port: server.port, password: PASSWORD });
});
afterAll(async () => {
  admin.disconnect();
  await server.destroy();
  rmSync(dir, { recursive: true, force: true });
});

const secretUrl = () => `redis://:${PASSWORD}@127.0.0.1:${server.port}`;

describe('secrets the CLI is given', () => {
  it('does not show $REDIS_URL (and its password) as the --redis default in --help', async () => {
    const r = await rota(['--help'], { REDIS_URL: secretUrl() });
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('--redis-file');
    expect(r.stdout).not.toContain(PASSWORD);
  });

  it('masks the password of a malformed URL it refuses', async () => {
    for (const url of [`redis://u:${PASSWORD}@ho st:6379`, `redis://:${PASSWORD}@127.0.0.1:99999999`]) {
      const r = await rota(['--redis', url, 'stats']);
      expect(r.code, url).toBe(EXIT_INVALID);
      expect(r.stderr).toMatch(/^rota: --redis: "redis:\/\/\*\*\*@.*" is not a URL/);
      expect(r.stderr + r.stdout).not.toContain(PASSWORD);
    }
  });

  it('does not show a --redis-file that holds a password and no URL', async () => {
    const file = join(dir, 'password-only');
    writeFileSync(file, `${PASSWORD}\n`);
    const r = await rota(['--redis-file', file, 'stats']);
    expect(r.code).toBe(EXIT_INVALID);
    expect(r.stderr).toMatch(/^rota: --redis: "\*\*\*" is not a URL/);
    expect(r.stderr + r.stdout).not.toContain(PASSWORD);
  });

  it('masks a password given as a query parameter of the URL, in every message', async () => {
    const closed = await freePort();
    for (const url of [
      `redis://127.0.0.1:${closed}/?password=${PASSWORD}`,
      `redis://127.0.0.1:${server.port}/?password=${PASSWORD}`,
      `redis://u:${PASSWORD}@127.0.0.1:${closed}/?token=${PASSWORD}`,
      `redis://127.0.0.1:${closed}/9999?password=${PASSWORD}`,
    ]) {
      const r = await rota(['--redis', url, 'stats']);
      expect(r.code, `${url}: ${r.stderr}`).not.toBe(0);
      expect(r.stderr, url).toMatch(/^rota: /);
      expect(r.stderr + r.stdout, url).not.toContain(PASSWORD);
    }
    const file = join(dir, 'query-url');
    writeFileSync(file, `redis://127.0.0.1:${closed}/?password=${PASSWORD}`);
    const fromFile = await rota(['--redis-file', file, 'stats']);
    expect(fromFile.code).not.toBe(0);
    expect(fromFile.stderr + fromFile.stdout).not.toContain(PASSWORD);
  });

  it('reads the Redis URL from --redis-file, and refuses it beside --redis', async () => {
    const file = join(dir, 'redis-url');
    writeFileSync(file, `${secretUrl()}\n`);
    const ok = await rota(['--redis-file', file, '--queue', 'secrets', 'submit', 'job']);
    expect(ok.code, ok.stderr).toBe(0);
    expect(await admin.exists('{rota:secrets}:meta')).toBe(1);
    const both = await rota(['--redis', secretUrl(), '--redis-file', file, 'stats']);
    expect(both.code).toBe(EXIT_USAGE);
    expect(both.stderr).toMatch(/^rota: give --redis or --redis-file, not both/);
    const missing = await rota(['--redis-file', join(dir, 'nothing'), 'stats']);
    expect(missing.code).toBe(EXIT_INVALID);
  });

  it('keeps the password and the dashboard token out of the process list with --redis-file and --token-file', async () => {
    const urlFile = join(dir, 'url');
    const tokenFile = join(dir, 'token');
    writeFileSync(urlFile, secretUrl());
    writeFileSync(tokenFile, `${TOKEN}\n`);
    const port = await freePort();
    const p = new NodeProcess(BIN, ['dashboard', '--redis-file', urlFile, '--token-file', tokenFile, '--port', String(port)]);
    try {
      await servedPage(port);
      const cmdline = readFileSync(`/proc/${p.pid}/cmdline`, 'utf8');
      expect(cmdline).toContain('--token-file');
      expect(cmdline).not.toContain(PASSWORD);
      expect(cmdline).not.toContain(TOKEN);
      expect((await fetch(`http://127.0.0.1:${port}/`)).status).toBe(401);
      const page = await fetch(`http://127.0.0.1:${port}/`, { headers: { authorization: `Bearer ${TOKEN}` } });
      expect(page.status).toBe(200);
    } finally {
      p.child.kill('SIGTERM');
      await p.exited;
    }
  });
});

describe('a database number the server does not have', () => {
  it('is refused (status 3) and nothing is written to database 0', async () => {
    const r = await rota(['--redis', `${secretUrl()}/99`, '--queue', 'db99', 'submit', 'job']);
    expect(r.code).toBe(EXIT_UNREACHABLE);
    expect(r.stderr).toMatch(/^rota: cannot reach Redis at redis:\/\/:\*\*\*@127\.0\.0\.1:\d+\/99: the server has no database/);
    expect(r.stderr).not.toContain(PASSWORD);
    expect(await admin.exists('{rota:db99}:meta')).toBe(0);
    const three = await rota(['--redis', `${secretUrl()}/3`, '--queue', 'db3', 'submit', 'job']);
    expect(three.code, three.stderr).toBe(0);
    expect(await admin.exists('{rota:db3}:meta')).toBe(0);
    const db3 = new Redis({ port: server.port, password: PASSWORD, db: 3 });
    try {
      expect(await db3.exists('{rota:db3}:meta')).toBe(1);
    } finally {
      db3.disconnect();
    }
  });
});
