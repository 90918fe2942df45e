/** The executors page: the live executors from the shared reader's last tick (no Redis command). */
import type { Page, PageContext } from '../context.js';
import { ago, html } from '../html.js';

export function executors(ctx: PageContext): Page {
  const t = ctx.q.live.tick;
  const list = t?.executors ?? [];
  const now = t?.now ?? Date.now();
  return {
    title: 'Executors',
    nav: 'executors',
    main: html`<h1>Executors <small>${t ? t.liveExecutors : 0} live</small></h1>
<table class="executors"><thead><tr><th>id</th><th>host</th><th>pid</th><th>slots</th><th>running</th><th>started</th><th>last heartbeat</th></tr></thead>
<tbody>${list.map((e) => {
      const ttl = Number(e.info.ttlMs);
      return html`<tr><td class="mono">${e.id}</td><td>${String(e.info.host ?? '')}</td><td>${String(e.info.pid ?? '')}</td><td>${String(e.info.concurrency ?? '')}</td><td>${String(e.info.running ?? '')}</td><td>${ago(Number(e.info.started) || undefined, now)}</td><td>${Number.isFinite(ttl) ? ago(e.expiry - ttl, now) : html`registration expires ${ago(e.expiry, now)}`}</td></tr>`;
    })}</tbody></table>
${list.length === 0 ? html`<p class="empty">No live executor.</p>` : ''}`,
  };
}
