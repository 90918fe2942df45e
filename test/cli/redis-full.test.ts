/** The CLI against a full Redis (maxmemory reached, noeviction): a one-line typed message and exit status 3. */
import { describe, expect, it } from 'vitest';
import { EXIT_OK, EXIT_UNREACHABLE } from '../../src/cli/exit-codes.js';
import { rota } from '../helpers/cli.js';
import { privateRedis } from '../helpers/setup.js';

const own = privateRedis({ args: ['--maxmemory-policy', 'noeviction'] });

describe('rota submit while Redis is full', () => {
  it('prints the RedisFullError in one line, writes nothing and exits 3; it submits once Redis has room', async () => {
    const q = ['--redis', own.server.url, '--queue', 'full'];
    expect((await rota([...q, 'submit', 'send', '--id', 'first'])).code).toBe(EXIT_OK);
    await own.admin.config('SET', 'maxmemory', '1');
    try {
      const full = await rota([...q, 'submit', 'send', '--id', 'second']);
      expect(full.stderr).toMatch(
        /^rota: Redis refused FCALL submit on queue "full": its memory is full \(used memory reached maxmemory, .*\); nothing was written\. .*\(Redis: OOM command not allowed[^\n]*\)\n$/,
      );
      expect(full.code).toBe(EXIT_UNREACHABLE);
      expect(await own.admin.exists('{rota:full}:j:second')).toBe(0);
    } finally {
      await own.admin.config('SET', 'maxmemory', '0');
    }
    expect((await rota([...q, 'submit', 'send', '--id', 'second'])).code).toBe(EXIT_OK);
  });
});
