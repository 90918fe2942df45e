/** Paging of the list pages: `offset` and `limit` from the query, and the links to other pages. */
import type { PageContext } from '../context.js';
import { count, type Html, html } from '../html.js';

export const PAGE_SIZE = 50;

/** The page the query asks for (offset >= 0, limit 1..500). */
export function pageOf(query: URLSearchParams): { offset: number; limit: number } {
  const offset = Math.max(0, Math.floor(Number(query.get('offset') ?? 0)) || 0);
  const limit = Math.min(500, Math.max(1, Math.floor(Number(query.get('limit') ?? PAGE_SIZE)) || PAGE_SIZE));
  return { offset, limit };
}

/** Previous / next links; `total` when known, else `more` says whether a next page exists. */
export function pager(ctx: PageContext, path: string, offset: number, limit: number, total?: number, more?: boolean): Html {
  const link = (to: number, label: string) => {
    const q = new URLSearchParams(ctx.query);
    q.set('offset', String(to));
    return html`<a href="${ctx.base}${path}?${q}">${label}</a>`;
  };
  const hasNext = total !== undefined ? offset + limit < total : more === true;
  return html`<nav class="pager">${offset > 0 ? link(Math.max(0, offset - limit), '← previous') : ''}
<span>${count(offset + 1)}–${count(offset + limit)}${total !== undefined ? ` of ${count(total)}` : ''}</span>
${hasNext ? link(offset + limit, 'next →') : ''}</nav>`;
}
