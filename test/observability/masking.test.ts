/**
 * Secrets in URLs are masked wherever Rota shows or logs text: the library's maskUrl (the password
 * and secret-named query parameters), the executor's log lines (a logger given to a Worker, and
 * the CLI's pino logger), and the metrics server, whose failed scrape answers a generic 500.
 */
import { Gauge } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { Queue, serveMetrics, Worker } from '../../src/index.js';
import { createLogger } from '../../src/observability/logger.js';
import { maskText, maskUrl } from '../../src/redis/connection.js';
import { redisUrl, uniqueQueue, until } from '../helpers/setup.js';

const open: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  for (const c of open.splice(0).reverse()) await c.close();
});

describe('maskUrl', () => {
  it('masks the password and the values of secret-named query parameters, and keeps the rest', () => {
    expect(maskUrl('redis://u:pw@h:6379/0?password=s3cret&name=x&token=t0k')).toBe(
      'redis://u:***@h:6379/0?password=***&name=x&token=***',
    );
    expect(maskUrl('rediss://h:6380?pass=abc')).toBe('rediss://h:6380?pass=***');
    // (a string that is not a URL)
    expect(maskUrl('redis://u:pw@[bad?auth=zz')).toBe('redis://***@[bad?auth=***');
  });

  it('masks every URL in a text, and stays linear on long text', () => {
    expect(maskText('failed: postgres://app:hunter2@db:5432/x?sslkey=k&secret=abc and more')).toBe(
      'failed: postgres://app:***@db:5432/x?sslkey=k&secret=*** and more',
    );
    const long = 'a.'.repeat(200_000) + '?'.repeat(200_000);
    const started = performance.now();
    expect(maskText(long)).toBe(long);
    // (a quadratic scan of this text would take minutes; this bounds nothing on a loaded machine but that)
    expect(performance.now() - started).toBeLessThan(30_000);
  });
});

describe("the executor's log lines", () => {
  it("of a logger given to a Worker: a failed run's error is logged with its URL's password masked", async () => {
    const name = uniqueQueue('mask-log');
    const lines: string[] = [];
    const logger = { debug: () => {}, warn: (obj: object, msg?: string) => void lines.push(JSON.stringify([obj, msg])) };
    const queue = new Queue(name, { connection: redisUrl() });
    const worker = new Worker(
      name,
      {
        leak: () => {
          throw new Error('cannot reach https://bot:tops3cret@api.example.com/?api_key=1&token=tok3n');
        },
      },
      { connection: redisUrl(), logger, retryDelay: 10 },
    );
    open.push(queue, worker);
    let failed = 0;
    worker.on('failed', () => failed++);
    await queue.submit({ task: 'leak', maxRetries: 0 });
    await until(worker, 'failed', () => failed === 1);
    const line = lines.find((l) => l.includes('job failed'));
    expect(line).toContain('https://bot:***@api.example.com/?api_key=1&token=***');
    expect(lines.join('\n')).not.toMatch(/tops3cret|tok3n/);
  });

  it("of the CLI's pino logger: fields, errors and messages are masked", () => {
    const out: string[] = [];
    const log = createLogger({ name: 'test' }, { write: (s: string) => void out.push(s) });
    const err = new Error('redis://u:pw1@h:1?password=pw2 refused');
    log.warn({ err, url: 'redis://u:pw3@h' }, 'executor error at redis://x:pw4@h');
    log.warn(err);
    const text = out.join('');
    expect(text).not.toMatch(/pw[1-4]/);
    expect(text).toContain('redis://u:***@h:1?password=*** refused');
    expect(text).toContain('executor error at redis://x:***@h');
    // (an error keeps its class and stack, masked)
    expect(JSON.parse(out[0]).err.type).toBe('Error');
    expect(JSON.parse(out[0]).err.stack).toContain('redis://u:***@h:1');
  });
});

describe('the metrics server', () => {
  it('answers a failed scrape with a generic 500 and gives the detail to onError', async () => {
    const queue = new Queue(uniqueQueue('mask-metrics'), { connection: redisUrl() });
    open.push(queue);
    const errors: Error[] = [];
    const metrics = await serveMetrics({ port: 0, host: '127.0.0.1', queue, onError: (e) => errors.push(e) });
    open.push(metrics);
    new Gauge({
      name: 'test_failing',
      help: 'fails its collection',
      registers: [metrics.registry],
      collect() {
        throw new Error('NOAUTH at redis://admin:s3cret@10.0.0.1:6379');
      },
    });
    const res = await fetch(metrics.url);
    expect(res.status).toBe(500);
    const body = await res.text();
    expect(body).toBe('the scrape failed; see the server log\n');
    expect(errors.map((e) => e.message)).toEqual(['NOAUTH at redis://admin:s3cret@10.0.0.1:6379']);
  });
});
