/** `rota dashboard`: its queues from repeated --queue, and its refusal to bind elsewhere than loopback without a token. */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { queuesOf } from '../../src/cli/commands/dashboard.js';
import { main } from '../../src/cli/main.js';
import { redisUrl } from '../helpers/setup.js';

describe('rota dashboard', () => {
  afterEach(() => {
    vi.restoreAllMocks();
    process.exitCode = undefined;
  });

  it('takes every --queue given, in order, once each', () => {
    expect(queuesOf(['node', 'rota', 'dashboard', '--queue', 'a', '--queue=b', '--queue', 'a'], 'default')).toEqual(['a', 'b']);
    expect(queuesOf(['node', 'rota', 'dashboard', '--port', '0'], 'default')).toEqual(['default']);
  });

  it('refuses to start on another address than loopback without a token', async () => {
    const err = vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
    const env = process.env.ROTA_DASHBOARD_TOKEN;
    delete process.env.ROTA_DASHBOARD_TOKEN;
    try {
      const code = await main(['node', 'rota', '--redis', redisUrl(), 'dashboard', '--host', '0.0.0.0', '--port', '0']);
      expect(code).toBe(1);
    } finally {
      if (env !== undefined) process.env.ROTA_DASHBOARD_TOKEN = env;
    }
    expect(err.mock.calls.map((c) => String(c[0])).join('')).toMatch(/token.*0\.0\.0\.0|0\.0\.0\.0.*token/);
  });
});
