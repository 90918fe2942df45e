/**
 * The migration machinery in process (src/queue/migrate.ts), with the test-only step of
 * test/fixtures/migrate-step.ts: two migrates at once rewrite each record once between them; a
 * shard whose schema no step leads on from, or a bad batch, is refused with nothing written; a
 * step list that does not follow on is refused.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { MigrationPathError, ValidationError } from '../../src/errors.js';
import { migrateQueue, registerMigrationStep } from '../../src/queue/migrate.js';
import { META, SCHEMA_VERSION } from '../../src/redis/wire.js';
import { TEST_STEP } from '../fixtures/migrate-step.js';
import { closeAll, openQueue, rawClient, uniqueQueue } from '../helpers/setup.js';

afterEach(closeAll);

const FAR = Date.now() + 365 * 86_400_000;

describe('migrateQueue', () => {
  it('run twice at once, rewrites each record once between the two', async () => {
    const name = uniqueQueue('migrate2');
    const queue = openQueue(name);
    const N = 3000;
    for (let i = 0; i < N; i += 1000) {
      await queue.submitBulk(Array.from({ length: 1000 }, (_, k) => ({ task: 't', group: `g${(i + k) % 7}`, runAt: FAR })));
    }
    const a = rawClient();
    const b = rawClient();
    try {
      const seen: number[] = [];
      const [ra, rb] = await Promise.all([
        migrateQueue(a, name, { steps: [TEST_STEP], batch: 10, onProgress: (p) => seen.push(p.batches) }),
        migrateQueue(b, name, { steps: [TEST_STEP], batch: 10, onProgress: (p) => seen.push(p.batches) }),
      ]);
      expect(seen.length).toBeGreaterThan(0);
      // each reports the step's count as it last saw it; the last batch saw every rewrite
      expect(Math.max(ra[0].steps[0].rewritten, rb[0].steps[0].rewritten)).toBe(N);
      expect(await a.hgetall(`{rota:${name}}:meta`)).toEqual({
        [META.schema]: String(TEST_STEP.to),
        [META.compat]: String(TEST_STEP.compat),
        shards: '1',
      });
      const keys = await a.keys(`{rota:${name}}:j:*`);
      expect(keys).toHaveLength(N);
      const pipe = a.pipeline();
      for (const k of keys) pipe.hmget(k, 'group', 'g8');
      for (const [, v] of (await pipe.exec()) ?? []) {
        const [group, g8] = v as [string, string];
        expect(g8).toBe(group);
      }
    } finally {
      a.disconnect();
      b.disconnect();
    }
  });

  it('refuses a shard whose schema no step leads on from, and a bad batch, writing nothing', async () => {
    const name = uniqueQueue('migrate-old');
    const raw = rawClient();
    try {
      await raw.hset(`{rota:${name}}:meta`, META.schema, String(SCHEMA_VERSION - 1));
      const err = await migrateQueue(raw, name, { steps: [TEST_STEP] }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(MigrationPathError);
      expect((err as Error).message).toContain(`schema version ${SCHEMA_VERSION - 1}`);
      await expect(migrateQueue(raw, name, { steps: [TEST_STEP], batch: 0 })).rejects.toBeInstanceOf(ValidationError);
      expect(await raw.hgetall(`{rota:${name}}:meta`)).toEqual({ [META.schema]: String(SCHEMA_VERSION - 1) });
    } finally {
      raw.disconnect();
    }
  });

  it('takes only a step that follows on from the last', () => {
    expect(() => registerMigrationStep({ ...TEST_STEP, from: SCHEMA_VERSION + 1, to: SCHEMA_VERSION + 2 })).toThrow(
      ValidationError,
    );
  });
});
