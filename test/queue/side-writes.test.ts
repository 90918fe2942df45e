/**
 * Side writes (ctx.log lines, staging deletions) that Redis refuses: sent again after a backoff,
 * then dropped with an error event and a warning that count them; the executor goes on.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { closeAll, openQueue, openWorker, rawClient, uniqueQueue } from '../helpers/setup.js';

afterEach(closeAll);

describe('side writes Redis refuses', () => {
  it('drops them with a counted warning, and the executor goes on running jobs', async () => {
    const name = uniqueQueue('side');
    const q = openQueue(name);
    const c = rawClient();
    const warnings: Array<{ obj: Record<string, unknown>; msg?: string }> = [];
    try {
      // a string where the job's log list goes: every RPUSH of its lines answers WRONGTYPE
      await c.set(`{rota:${name}}:log:refused`, 'not a list');
      const w = openWorker(
        name,
        { talk: ({ log }) => log('a line') },
        { logger: { debug: () => {}, warn: (obj, msg) => warnings.push({ obj: obj as Record<string, unknown>, msg }) } },
      );
      const errors: Error[] = [];
      w.on('error', (e) => errors.push(e));
      const ended: string[] = [];
      const both = new Promise<void>((resolve) =>
        w.on('completed', (job) => {
          if (ended.push(job.id) === 2) resolve();
        }),
      );
      await q.submit({ task: 'talk', id: 'refused' });
      await q.submit({ task: 'talk', id: 'kept' });
      await both;
      // (close() sends what is left of the side writes, the refused ones again until dropped)
      await w.close();
      expect(ended.sort()).toEqual(['kept', 'refused']);
      expect(await q.jobLogs('kept')).toHaveLength(1);
      expect(errors.map((e) => e.message)).toEqual([
        expect.stringMatching(/^dropped 1 log line.*after 3 failed send.*WRONGTYPE/),
      ]);
      expect(warnings.filter((w) => w.obj.droppedTotal === 1)).toHaveLength(1);
    } finally {
      c.disconnect();
    }
  });
});
