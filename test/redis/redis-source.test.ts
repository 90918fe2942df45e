/**
 * Where the tests' and the demo's private Redis comes from: the local redis-server when it is on
 * PATH, else a container when a Docker engine answers, else nowhere, with one line saying what to do.
 */
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { onPath } from '../../src/dev/redis-server.js';
import { chooseRedisSource, noRedisMessage, REDIS_IMAGE, startRedis } from '../helpers/redis-server.js';

describe('the choice of a private Redis', () => {
  it('is the local redis-server when it is on PATH, Docker or not', () => {
    expect(chooseRedisSource({ redisServerOnPath: true, dockerReachable: true })).toBe('local');
    expect(chooseRedisSource({ redisServerOnPath: true, dockerReachable: false })).toBe('local');
  });

  it('is a container without redis-server where a Docker engine answers', () => {
    expect(chooseRedisSource({ redisServerOnPath: false, dockerReachable: true })).toBe('container');
  });

  it('is none with neither, and then one line says what to install, or to set REDIS_URL for the demo', async () => {
    expect(chooseRedisSource({ redisServerOnPath: false, dockerReachable: false })).toBe('missing');
    expect(noRedisMessage('tests')).toBe(
      'The tests need Redis: install redis-server (apt-get install -y redis-server, or brew install redis), ' +
        `or start a Docker engine to run ${REDIS_IMAGE} in containers.`,
    );
    expect(noRedisMessage('demo')).toBe(
      'The demo needs Redis: install redis-server (apt-get install -y redis-server, or brew install redis), ' +
        'start a Docker engine, or set REDIS_URL (or --redis) to a Redis to use.',
    );
    for (const m of [noRedisMessage('tests'), noRedisMessage('demo')]) expect(m).not.toContain('\n');
    await expect(startRedis({}, 'missing')).rejects.toThrow(noRedisMessage('tests'));
    await expect(startRedis({}, 'missing', 'demo')).rejects.toThrow(noRedisMessage('demo'));
  });

  it("runs the Redis version CI installs (Debian's redis-server) in a container", () => {
    expect(REDIS_IMAGE).toBe('redis:7.0.15');
  });

  it('finds redis-server on PATH only as an executable file', () => {
    const dir = mkdtempSync(join(tmpdir(), 'rota-path-'));
    try {
      expect(onPath('redis-server', dir)).toBe(false);
      const file = join(dir, 'redis-server');
      writeFileSync(file, '#!/bin/sh\n');
      expect(onPath('redis-server', dir)).toBe(false);
      chmodSync(file, 0o755);
      expect(onPath('redis-server', `/nonexistent:${dir}`)).toBe(true);
      expect(onPath('redis-server', '')).toBe(false);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
