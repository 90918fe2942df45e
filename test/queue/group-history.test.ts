/**
 * The per-group run counts an executor sends apart from its finish calls (src/executor/
 * group-history.ts): every count arrives, in calls of at most GROUP_HISTORY_CHUNK groups, so that
 * no send holds Redis long however many groups an executor served.
 */
import { describe, expect, it } from 'vitest';
import { GROUP_HISTORY_CHUNK, GroupHistory } from '../../src/executor/group-history.js';
import type { StringValue } from '../../src/redis/string-array.js';

describe('GroupHistory', () => {
  it('sends the counts of many groups in calls of at most GROUP_HISTORY_CHUNK groups, none lost', async () => {
    const sent: Array<{ shard: number; fields: StringValue[] }> = [];
    const history = new GroupHistory(
      async (shard, fields) => {
        sent.push({ shard, fields: [...fields] });
      },
      (err) => {
        throw err;
      },
    );
    const groups = 2 * GROUP_HISTORY_CHUNK + 500;
    for (let g = 0; g < groups; g++) {
      history.add(0, `g${g}`);
      if (g % 2 === 0) history.add(0, `g${g}`);
    }
    history.add(1, 'other');
    await history.flush();

    expect(sent.every((s) => s.fields.length / 2 <= GROUP_HISTORY_CHUNK)).toBe(true);
    expect(sent.filter((s) => s.shard === 0)).toHaveLength(3);
    const counts = new Map<string, number>();
    for (const { shard, fields } of sent) {
      for (let i = 0; i < fields.length; i += 2) counts.set(`${shard}/${fields[i]}`, Number(fields[i + 1]));
    }
    expect(counts.size).toBe(groups + 1);
    expect(counts.get('0/g0')).toBe(2);
    expect(counts.get('0/g1')).toBe(1);
    expect(counts.get('1/other')).toBe(1);
  });

  it('reports a failed send and still sends the rest', async () => {
    const errors: unknown[] = [];
    let calls = 0;
    const history = new GroupHistory(
      async () => {
        calls++;
        if (calls === 1) throw new Error('refused');
      },
      (err) => errors.push(err),
    );
    for (let g = 0; g < GROUP_HISTORY_CHUNK + 1; g++) history.add(0, `g${g}`);
    await history.flush();
    expect(calls).toBe(2);
    expect(errors).toHaveLength(1);
  });
});
