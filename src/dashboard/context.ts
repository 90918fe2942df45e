/** What a page is rendered from: the queue it shows, where the dashboard is mounted, and the request's settings. */
import type { PeriodicTasks } from '../periodic/tasks.js';
import type { Queue } from '../queue/queue.js';
import type { Html } from './html.js';
import type { QueueLive } from './reader.js';

/** One queue the dashboard shows, with its readers (its shard stores are the live reader's). */
export interface QueueHandle {
  name: string;
  queue: Queue;
  periodic: PeriodicTasks;
  live: QueueLive;
}

/** A request's view of the dashboard. */
export interface PageContext {
  /** Path of the dashboard's root, e.g. `/admin` ('' at the server's root). */
  root: string;
  /** Path of the queue's pages: the root, or `<root>/q/<queue>` when there are several queues. */
  base: string;
  q: QueueHandle;
  queues: readonly string[];
  readOnly: boolean;
  /** The CSRF value for forms ('' in live updates: the page fills it in). */
  csrf: string;
  /** The view below the queue's base, e.g. `/groups`. */
  path: string;
  query: URLSearchParams;
}

/** A rendered page: its title and main content. */
export interface Page {
  title: string;
  nav: 'overview' | 'groups' | 'jobs' | 'executors' | 'periodic' | 'redis';
  main: Html;
}
