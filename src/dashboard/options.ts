/**
 * The dashboard's options (its handler's and its server's): their TSDoc, bounds and defaults in
 * one shape each (see src/options.ts).
 */
import { z } from 'zod';
import { bool, connection, type OptionsOf, text, whole } from '../options.js';
import { MAX_SHARDS } from '../redis/shards.js';

/** Options of {@link dashboard}. */
export const DASHBOARD_OPTIONS = {
  /** Where Redis is: a URL, ioredis options or an ioredis client (the dashboard opens its own connection from it). */
  connection,
  /** The queues shown: with one, its pages are at the root; with several, under `/q/<queue>/`. */
  queues: z.array(z.string({ error: 'must be queue names' }), { error: 'must be an array of queue names' }).readonly(),
  /** Path the handler is mounted at, e.g. `/admin/rota` (default: the root). */
  basePath: z.string({ error: 'must be a path such as /admin/rota' }).optional(),
  /** Shows no action and refuses every POST. */
  readOnly: bool.optional(),
  /**
   * When set (8 to 1,000 characters), every request must carry it: an `Authorization: Bearer`
   * header, or the session cookie that opening a page with `?token=` sets (it lasts 12 hours, or
   * until the process ends). Wrong tokens are limited to 10 a minute per client.
   */
  token: z
    .string({ error: 'must be a string' })
    .min(8, 'must be at least 8 characters')
    .max(1000, 'must be at most 1000 characters')
    .optional(),
  /**
   * The dashboard is behind a proxy that sets `X-Forwarded-Proto` and `X-Forwarded-For`: its
   * cookies are `Secure` when the proxy was reached over https, and wrong tokens are counted per
   * forwarded client. Leave it off when clients reach the dashboard directly (they could forge them).
   */
  trustProxy: bool.optional(),
  /**
   * Host names (or addresses) the dashboard answers for besides loopback (`localhost`,
   * 127.0.0.0/8, `[::1]`, with the port a request came in on) and the address a request came in
   * on: `name` (any port), `name:port`, or `.example.com` (that name and every name under it).
   * A request whose `Host` is none of them is refused (421), so that a page of another site whose
   * name resolves to the dashboard's address (DNS rebinding) reads nothing and acts on nothing.
   * List the names browsers reach the dashboard by (a proxy's public name among them).
   */
  allowedHosts: z
    .array(text(255), { error: 'must be an array of host names' })
    .max(1000, 'must list at most 1000 hosts')
    .readonly()
    .optional(),
  /**
   * The queues' shard count (see QueueOptions.shards): one for every queue, or one per queue name
   * (a queue not named has 1). A queue laid out with another count is refused (ShardCountError).
   */
  shards: z
    .union([whole(1, MAX_SHARDS), z.record(z.string(), whole(1, MAX_SHARDS)).readonly()], {
      error: `must be a shard count (1 to ${MAX_SHARDS}), or one per queue name`,
    })
    .optional(),
};

/** Options of {@link dashboard}. */
export type DashboardOptions = OptionsOf<typeof DASHBOARD_OPTIONS>;

/** The server's timeouts, ms. */
export interface ServerTimeouts {
  /** To receive a request's headers (default 10 s). */
  headersMs: number;
  /** To receive a whole request, its body included (default 30 s; a live page's stream is a response, not bound by it). */
  requestMs: number;
  /** An idle keep-alive connection is closed after this (default 5 s). */
  keepAliveMs: number;
}

/** Options of {@link serveDashboard}. */
export const SERVE_DASHBOARD_OPTIONS = {
  ...DASHBOARD_OPTIONS,
  /** Port (0: a free one; up to 65,535); default 8080. */
  port: whole(0, 65_535).default(8080),
  /**
   * Address to bind; default 127.0.0.1. Any other than a loopback address needs a token. A name
   * bound is also a host it answers for (as if listed in `allowedHosts`).
   */
  host: text(255).default('127.0.0.1'),
  /** The server's timeouts (each defaults as ServerTimeouts says; each a whole number of ms above 0). */
  timeouts: z.custom<Partial<ServerTimeouts>>().optional(),
};

/** Options of {@link serveDashboard}. */
export type ServeDashboardOptions = OptionsOf<typeof SERVE_DASHBOARD_OPTIONS>;
