/**
 * The Redis page: the server's health as the dashboard's connection sees it (memory and its
 * peak, clients, ops/s, persistence, replication role and lag), the slowlog's newest entries and
 * Rota's function libraries loaded. Read by one store call (src/redis/server-store.ts), which
 * reads no secret: the page shows no password, no connection URL, no server file path.
 */
import { homeShard } from '../../redis/shards.js';
import type { Page, PageContext } from '../context.js';
import { ago, bytes, count, duration, type Html, html } from '../html.js';

/** Slowlog entries shown. */
export const SLOW_ENTRIES = 10;

export async function redisPage(ctx: PageContext): Promise<Page> {
  const live = ctx.q.live;
  const store = live.stores[live.shards > 1 ? homeShard(live.shards) : 0];
  const r = await store.detail.server(SLOW_ENTRIES);
  const i = r.info;
  const now = Date.now();
  const n = (k: string) => (i[k] === undefined ? undefined : Number(i[k]));
  const num = (k: string) => (i[k] === undefined ? '–' : count(Number(i[k])));
  const mem = (k: string) => (n(k) === undefined ? '–' : bytes(n(k)!));
  const ok = (k: string) => {
    const v = i[k];
    if (v === undefined) return html`–`;
    return html`<span class="${v === 'ok' ? 'status-success' : 'status-failed'}">${v}</span>`;
  };
  const row = (label: string, value: Html | string, title?: string) =>
    html`<tr><th${title ? html` title="${title}"` : ''}>${label}</th><td>${value}</td></tr>`;
  const role = i.role ?? '–';
  const lastSave = n('rdb_last_save_time');
  return {
    title: 'Redis',
    nav: 'redis',
    main: html`<h1>Redis <small>${i.redis_version ? `version ${i.redis_version}` : ''}${i.redis_mode ? ` · ${i.redis_mode}` : ''}${live.shards > 1 ? ' · the home shard’s node' : ''}</small></h1>
<section class="cards">
<div class="card"><span>memory used</span><b id="redis-used">${mem('used_memory')}</b></div>
<div class="card"><span>memory peak</span><b>${mem('used_memory_peak')}</b></div>
<div class="card"><span>clients</span><b>${num('connected_clients')}</b></div>
<div class="card"><span>ops/s</span><b>${num('instantaneous_ops_per_sec')}</b></div>
<div class="card"><span>role</span><b>${role}</b></div>
</section>
<div class="columns">
<section><h2>Memory and clients</h2><table class="fields">
${row('used', mem('used_memory'))}${row('peak', mem('used_memory_peak'))}${row('resident (RSS)', mem('used_memory_rss'))}
${row('maxmemory', n('maxmemory') ? mem('maxmemory') : 'none', 'the limit past which Redis evicts or refuses writes')}${row('eviction policy', i.maxmemory_policy ?? '–')}
${row('fragmentation', i.mem_fragmentation_ratio ?? '–')}${row('evicted keys', num('evicted_keys'))}
${row('clients', num('connected_clients'))}${row('blocked clients', num('blocked_clients'), 'executors waiting for work block on the marker key')}${row('max clients', num('maxclients'))}
${row('commands', num('total_commands_processed'))}${row('uptime', n('uptime_in_seconds') === undefined ? '–' : duration(n('uptime_in_seconds')! * 1000))}
</table></section>
<section><h2>Persistence</h2><table class="fields">
${row('loading', i.loading === '1' ? 'yes' : 'no')}
${row('RDB last save', lastSave ? ago(lastSave * 1000, now) : '–')}${row('RDB last status', ok('rdb_last_bgsave_status'))}
${row('changes since save', num('rdb_changes_since_last_save'))}${row('RDB save running', i.rdb_bgsave_in_progress === '1' ? 'yes' : 'no')}
${row('AOF', i.aof_enabled === '1' ? 'on' : 'off', 'the append-only file: with it, no acknowledged submission is lost while Redis keeps its data')}
${i.aof_enabled === '1' ? html`${row('AOF last write', ok('aof_last_write_status'))}${row('AOF last rewrite', ok('aof_last_bgrewrite_status'))}` : ''}
</table>
<h2>Replication</h2><table class="fields">
${row('role', role)}
${
  role === 'master'
    ? html`${row('replicas', num('connected_slaves'))}${r.replicas.map((rep, k) => row(`replica ${k}`, `${rep.state}${rep.lag !== undefined ? `, lag ${rep.lag} s` : ''}${rep.behind !== undefined ? `, ${bytes(rep.behind)} behind` : ''}`))}`
    : html`${row('link to primary', i.master_link_status ?? '–')}${row('last contact', i.master_last_io_seconds_ago === undefined ? '–' : `${i.master_last_io_seconds_ago} s ago`)}${row('syncing', i.master_sync_in_progress === '1' ? 'yes' : 'no')}`
}
</table></section>
</div>
<section><h2>Rota's function libraries loaded</h2>
${
  typeof r.libraries === 'string'
    ? html`<p class="muted">${r.libraries}</p>`
    : html`<table class="libraries"><thead><tr><th>library</th><th>schema</th><th>functions</th><th></th></tr></thead><tbody>${r.libraries.map(
        (l) =>
          html`<tr><td class="mono">${l.name}</td><td class="num">${l.schema ?? '–'}</td><td class="num">${l.functions}</td><td>${l.name === r.expectedLibrary ? html`<b>this dashboard's</b>` : html`<span class="muted">another Rota version's</span>`}</td></tr>`,
      )}</tbody></table>${r.libraries.length === 0 ? html`<p class="empty">None loaded (the first client to start loads it, or <code>rota migrate</code>).</p>` : ''}`
}</section>
<section><h2>Slowlog <small>newest ${SLOW_ENTRIES}</small></h2>
${
  typeof r.slowlog === 'string'
    ? html`<p class="muted">${r.slowlog}</p>`
    : r.slowlog.length === 0
      ? html`<p class="empty">No slow command logged.</p>`
      : html`<table class="slowlog"><thead><tr><th>when</th><th>took</th><th>command</th></tr></thead><tbody>${r.slowlog.map(
          (e) =>
            html`<tr><td>${ago(e.at, now)}</td><td class="num">${e.micros < 1000 ? `${e.micros} µs` : `${(e.micros / 1000).toFixed(1)} ms`}</td><td class="mono">${e.command.join(' ')}${e.more ? html` <small>… ${count(e.more)} more</small>` : ''}</td></tr>`,
        )}</tbody></table>`
}</section>`,
  };
}
