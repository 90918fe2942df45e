/**
 * The CLI's output through a pipe whose reader is slower than the CLI: all of it arrives before the
 * CLI exits (a pipe takes 64 KiB at a time, and an exit before the rest is taken would cut it).
 */
import { execFile } from 'node:child_process';
import { afterAll, describe, expect, it } from 'vitest';
import { cliEntry } from '../helpers/cli.js';
import { closeAll, openQueue, redisUrl, uniqueQueue } from '../helpers/setup.js';

afterAll(closeAll);

/** A reader that starts taking its input only after the pipe has filled, then parses all of it as JSON. */
const SLOW_JSON_READER = `setTimeout(() => {
  const chunks = [];
  process.stdin.on('data', (c) => chunks.push(c)).on('end', () => {
    const text = Buffer.concat(chunks).toString();
    JSON.parse(text);
    process.stdout.write(String(text.length));
  });
}, 500);`;

/** Runs `rota ...args | node -e SLOW_JSON_READER`, resolving with both exit statuses and what the reader printed. */
function pipeIntoReader(args: string[]): Promise<{ statuses: string; read: string; stderr: string }> {
  const quote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;
  const rota = [process.execPath, ...cliEntry(), ...args].map(quote).join(' ');
  const reader = [process.execPath, '-e', SLOW_JSON_READER].map(quote).join(' ');
  const script = `${rota} | ${reader}; echo " \${PIPESTATUS[0]} \${PIPESTATUS[1]}" >&2`;
  return new Promise((resolve, reject) => {
    execFile('bash', ['-c', script], { timeout: 60_000, maxBuffer: 16 << 20 }, (err, stdout, stderr) => {
      if (err) return reject(err);
      const statuses = /(\d+) (\d+)\s*$/.exec(stderr)?.slice(1).join(' ') ?? '';
      resolve({ statuses, read: stdout, stderr });
    });
  });
}

describe('output through a pipe', () => {
  it('gives a reader all of `rota job --json` for a job of about 1 MB', async () => {
    const name = uniqueQueue('pipe');
    const queue = openQueue(name, { maxArgsBytes: 4 << 20 });
    const blob = 'x'.repeat(1_000_000);
    const job = await queue.submit({ task: 'big', args: { blob } });
    const r = await pipeIntoReader(['--redis', redisUrl(), '--queue', name, 'job', job.id, '--json']);
    // (0 0: the CLI ended well and the reader parsed the whole JSON text, which holds the blob)
    expect(r.statuses, r.stderr).toBe('0 0');
    expect(Number(r.read)).toBeGreaterThan(blob.length);
  });
});
