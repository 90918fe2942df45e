/** Changing a queue's shard count (reshard): jobs in every state move to their shards and stay as they were. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Queue, ReshardInProgressError, ReshardRefusedError, reshard, ValidationError } from '../../src/index.js';
import { audit, populate, type Snapshot, snapshot } from '../helpers/reshard.js';
import { rawClient, redisUrl, uniqueQueue } from '../helpers/setup.js';

const raw = rawClient();
afterAll(() => raw.disconnect());

describe('reshard', () => {
  const name = uniqueQueue('reshard');
  let before: Snapshot;
  beforeAll(async () => {
    const ids = await populate(name);
    before = await snapshot(name, 1, ids, raw);
  });

  it('moves jobs in every state from 1 to 4, 2, 4 again, 2 and back to 1 shard, each where its id, parent or group puts it, as it was', async () => {
    for (const [from, to] of [
      [1, 4],
      [4, 2],
      [2, 4],
      [4, 2],
      [2, 1],
    ]) {
      const report = await reshard(redisUrl(), name, { to, batch: 7 });
      expect(report).toMatchObject({ from, to, resumed: false, recovered: 0 });
      expect(report.moved).toBeGreaterThan(0);
      await audit(name, to, before, raw);
    }
  });
});
