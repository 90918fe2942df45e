/**
 * The pages of a queue, as a table of paths: each renders its main content from a request's
 * context, or redirects (the jump boxes of the jobs and periodic lists). The same table renders a
 * page for a request and its view for a live update.
 */
import type { Page, PageContext } from './context.js';
import { executors } from './views/executors.js';
import { groups } from './views/groups.js';
import { jobDetail, jobList } from './views/jobs.js';
import { overview } from './views/overview.js';
import { periodicList, periodicTask } from './views/periodic.js';
import { redisPage } from './views/redis.js';

/** A rendered page's main content, or a redirect. */
export type Rendered = Page | { redirect: string };

/** A page: at `path` exactly, or (`prefix`) at every path below it, whose rest (percent-decoded) it is given. */
interface PageRoute {
  path: string;
  prefix?: true;
  render(ctx: PageContext, rest: string): Promise<Rendered> | Rendered;
}

/** A list page with a jump box: `?id=` sends the browser to that item's page. */
const jumping =
  (list: (ctx: PageContext) => Promise<Page>, below: string) =>
  (ctx: PageContext): Promise<Rendered> | Rendered => {
    const id = ctx.query.get('id');
    if (id) return { redirect: `${ctx.base}${below}${encodeURIComponent(id.trim())}` };
    return list(ctx);
  };

/** The pages, by path below the queue's base. */
const PAGES: readonly PageRoute[] = [
  { path: '', render: overview },
  { path: '/', render: overview },
  { path: '/groups', render: groups },
  { path: '/jobs', render: jumping(jobList, '/jobs/') },
  { path: '/jobs/', prefix: true, render: (ctx, id) => jobDetail(ctx, id) },
  { path: '/executors', render: executors },
  { path: '/redis', render: redisPage },
  { path: '/periodic', render: jumping(periodicList, '/periodic/') },
  { path: '/periodic/', prefix: true, render: (ctx, id) => periodicTask(ctx, id) },
];

/**
 * The page at `ctx.path`, or null when there is none.
 * @throws {URIError} for a malformed percent-escape in the rest of a path
 */
export async function renderPage(ctx: PageContext): Promise<Rendered | null> {
  for (const p of PAGES) {
    if (p.prefix ? ctx.path.startsWith(p.path) : ctx.path === p.path) {
      return p.render(ctx, p.prefix ? decodeURIComponent(ctx.path.slice(p.path.length)) : '');
    }
  }
  return null;
}
