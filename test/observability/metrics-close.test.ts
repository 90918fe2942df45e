/**
 * Closing the metrics server while a Prometheus scrapes it over a keep-alive connection, a scrape
 * in progress: the scrape gets its answer, the connection ends with it, and close() resolves, so
 * an executor's or scheduler's shutdown is not held open by a scraper that comes back more often
 * than the keep-alive timeout. A scrape that does not end is cut after a grace.
 */
import { Agent, request } from 'node:http';
import { Gauge } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { Queue, serveMetrics } from '../../src/index.js';
import { redisUrl, uniqueQueue } from '../helpers/setup.js';

const open: Array<{ close(): Promise<unknown> }> = [];
afterEach(async () => {
  for (const c of open.splice(0).reverse()) await c.close();
});

/** A scrape of `url` on `agent`: its status, or the error's code. */
function scrape(url: string, agent: Agent): Promise<number | string> {
  return new Promise((resolve) => {
    request(url, { agent }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    })
      .on('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message))
      .end();
  });
}

/**
 * A metrics server whose next scrape waits in `collect` until `release()` (`inCollect` resolves
 * when it does), and a keep-alive agent of one connection to scrape it with; both, and the gate,
 * are closed after the test whatever it did.
 */
async function gatedServer() {
  const queue = new Queue(uniqueQueue('metrics-close'), { connection: redisUrl() });
  open.push(queue);
  const server = await serveMetrics({ port: 0, queue });
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  let started!: () => void;
  let release!: () => void;
  const inCollect = new Promise<void>((r) => {
    started = r;
  });
  const gate = new Promise<void>((r) => {
    release = r;
  });
  // (a second close() of the server resolves at once)
  open.push(server, {
    close: async () => {
      release();
      agent.destroy();
    },
  });
  let gated = false;
  new Gauge({
    name: 'test_gate',
    help: 'holds one scrape',
    registers: [server.registry],
    async collect() {
      if (gated) return;
      gated = true;
      started();
      await gate;
    },
  });
  return { server, agent, inCollect, release };
}

describe('closing the metrics server', () => {
  it('answers the scrape in progress, ends its keep-alive connection and resolves, the scraper coming straight back', async () => {
    const { server, agent, inCollect, release } = await gatedServer();
    const first = scrape(server.url, agent);
    await inCollect;
    let closed = false;
    const closing = server.close().then(() => {
      closed = true;
    });
    release();
    expect(await first).toBe(200);
    // (a scraper on the same agent comes back at once, as a short scrape interval does)
    const after: Array<number | string> = [];
    for (let i = 0; i < 20 && !closed; i++) after.push(await scrape(server.url, agent));
    await closing;
    expect(closed).toBe(true);
    expect(after.filter((s) => s === 200)).toEqual([]);
    expect(await scrape(server.url, agent)).toBe('ECONNREFUSED');
  });

  it('cuts a scrape that does not end, after a grace, and resolves', async () => {
    const { server, agent, inCollect } = await gatedServer();
    const first = scrape(server.url, agent);
    await inCollect;
    await server.close();
    expect(await first).toBe('ECONNRESET');
  });
});
