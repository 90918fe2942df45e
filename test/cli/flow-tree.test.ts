/** `rota job <id> --tree` and `rota stats` with a flow, run from source against the test Redis. */
import { afterEach, describe, expect, it } from 'vitest';
import { EXIT_NOT_FOUND } from '../../src/cli/exit-codes.js';
import { rota } from '../helpers/cli.js';
import { closeAll, openQueue, redisUrl, uniqueQueue } from '../helpers/setup.js';

afterEach(closeAll);

describe('rota job --tree', () => {
  it('prints a flow indented by depth with each job state and its children ended, and as JSON', async () => {
    const q = openQueue(uniqueQueue('cli-tree'));
    const args = ['--redis', redisUrl(), '--queue', q.name];
    const tree = await q.submitFlow({
      id: 'report',
      task: 'merge',
      children: [{ task: 'part', children: [{ task: 'leaf' }] }, { task: 'part' }],
    });
    expect(tree.id).toBe('report');
    const out = await rota([...args, 'job', 'report', '--tree']);
    expect(out.code).toBe(0);
    const lines = out.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^ID\s+TASK\s+STATE\s+CHILDREN$/);
    // (depth first, each child indented under its parent)
    expect(lines[3]).toMatch(/^ {4}report\/0\/0 /);
    expect(lines.slice(1).map((l) => l.replace(/\s+/g, ' ').trim())).toEqual([
      'report merge waiting-children 0/2 ended',
      'report/0 part waiting-children 0/1 ended',
      'report/0/0 leaf waiting',
      'report/1 part waiting',
    ]);
    const json = JSON.parse((await rota([...args, 'job', 'report', '--tree', '--json'])).stdout);
    expect(json.job.state).toBe('waiting-children');
    expect(json.children.map((c: { job: { id: string } }) => c.job.id)).toEqual(['report/0', 'report/1']);
    expect((await rota([...args, 'job', 'nope', '--tree'])).code).toBe(EXIT_NOT_FOUND);
  });

  it('prints the children in other queues with their queue', async () => {
    const [qa, qb] = [openQueue(uniqueQueue('cli-tree-a')), openQueue(uniqueQueue('cli-tree-b'))];
    await qa.submitFlow({
      id: 'xreport',
      task: 'merge',
      children: [{ task: 'part' }, { task: 'part', queue: qb.name, children: [{ task: 'leaf' }] }],
    });
    const out = await rota(['--redis', redisUrl(), '--queue', qa.name, 'job', 'xreport', '--tree']);
    expect(out.code).toBe(0);
    const lines = out.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^ID\s+TASK\s+STATE\s+CHILDREN\s+QUEUE$/);
    expect(lines.slice(1).map((l) => l.replace(/\s+/g, ' ').trim())).toEqual([
      'xreport merge waiting-children 0/2 ended',
      'xreport/0 part waiting',
      `xreport/1 part waiting-children 0/1 ended ${qb.name}`,
      `xreport/1/0 leaf waiting ${qb.name}`,
    ]);
  });
});
