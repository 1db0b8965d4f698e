// One load balancer: a diagram (entry addresses → listeners → pools with their health
// monitor → members with their live monitor_status) and its availability timeline.

import { h, s, update, badge, getJSON, fmtTime, empty } from './dom.js';
import { createTimeline } from './timeline.js';
import { serviceOf } from './account.js';

function card(node, title, lines, extra) {
  return h('li', { class: `card${extra && extra.cls ? ` ${extra.cls}` : ''}`, id: node, dataset: { node } },
    h('div', { class: 'title' }, title), lines.filter(Boolean).map((l) => h('div', { class: 'sub' }, l)),
    extra && extra.body);
}

function column(id, title, items, emptyText, arrow) {
  return h('section', { class: 'diagram-col', 'aria-labelledby': `${id}-h` },
    arrow ? h('div', { class: 'flow-arrow', 'aria-hidden': 'true' }, '↓') : null,
    h('h3', { id: `${id}-h` }, title),
    items.length ? h('ul', { id }, items) : empty(emptyText));
}

function monitorText(m) {
  if (!m) return 'no health monitor (members: no_monitor)';
  const http = m.http ? `, ${m.http.method || 'GET'} ${m.http.url_path || '/'} expects ${(m.http.expected_codes || []).join(',')}` : '';
  return `health monitor: ${m.type} every ${m.delay_s} s, timeout ${m.timeout_s} s, up after ${m.up_threshold}, down after ${m.down_threshold}${http}`;
}

function memberItem(m) {
  const at = `${m.address}:${m.protocol_port}`;
  const checks = m.monitor_port && m.monitor_port !== m.protocol_port ? ` (checked on ${m.monitor_port})` : '';
  return h('li', { class: 'member', id: `member-${m.uuid}`,
    dataset: { memberUuid: m.uuid, memberStatus: m.monitor_status, enabled: m.enabled } },
  h('span', {}, h('span', { class: 'mono' }, at + checks), m.name === at ? null : ` ${m.name}`,
    m.enabled ? null : h('strong', {}, ' (disabled: no traffic)')),
  badge(m.monitor_status));
}

/** Columns and the edges between their cards (drawn as lines on wide screens). */
function diagram(d) {
  const edges = [];
  const entries = [];
  for (const v of (d.load_balancer ? d.load_balancer.vip_addresses : [])) {
    entries.push(card(`entry-${v.address}`, h('span', { class: 'mono' }, v.address), [`VIP, IPv${v.version}`]));
  }
  for (const f of d.floating_ips) {
    entries.push(card(`entry-${f.network}`, h('span', { class: 'mono' }, f.network),
      [`floating IP (${f.type}${f.region ? ` ${f.region.slug}` : ''}), carries traffic once propagated`]));
  }
  const monitors = Object.fromEntries(d.health_monitors.map((m) => [m.pool.uuid, m]));
  const poolIndex = Object.fromEntries(d.pools.map((p, i) => [p.uuid, i]));
  const listeners = [...d.listeners].sort((a, b) =>
    (poolIndex[a.pool && a.pool.uuid] ?? 1e9) - (poolIndex[b.pool && b.pool.uuid] ?? 1e9) || a.protocol_port - b.protocol_port);
  const listenerCards = listeners.map((l) => {
    edges.push(['entries', `listener-${l.uuid}`]);
    if (l.pool) edges.push([`listener-${l.uuid}`, `pool-${l.pool.uuid}`]);
    const cidrs = l.allowed_cidrs.length ? `allowed: ${l.allowed_cidrs.join(', ')}` : 'allowed: every client';
    return card(`listener-${l.uuid}`, `${l.protocol}/${l.protocol_port}`, [l.name, cidrs,
      l.pool ? `to pool ${l.pool.name}` : 'no pool: connections fail']);
  });
  const poolCards = d.pools.map((p) => {
    edges.push([`pool-${p.uuid}`, `members-${p.uuid}`]);
    return card(`pool-${p.uuid}`, p.name, [`${p.protocol}, ${p.algorithm}`, monitorText(monitors[p.uuid])],
      { cls: monitors[p.uuid] ? '' : 'monitorless' });
  });
  const memberCards = d.pools.map((p) => {
    const ms = d.members.filter((m) => m.pool.uuid === p.uuid);
    return card(`members-${p.uuid}`, `members of ${p.name}`, [],
      { body: ms.length ? h('ul', {}, ms.map(memberItem)) : empty('no members: connections fail') });
  });
  const cols = h('div', { class: 'diagram-cols' },
    column('entries', 'Entry addresses', entries, 'No entry address.'),
    column('listeners', 'Listeners', listenerCards, 'No listener.', true),
    column('pools', 'Pools and health monitors', poolCards, 'No pool.', true),
    column('members', 'Members (monitor status)', memberCards, 'No members.', true));
  const lines = s('svg', { class: 'connectors', 'aria-hidden': 'true', focusable: 'false' });
  const el = h('div', { class: 'diagram', id: 'diagram' }, lines, cols);
  el.edges = edges;
  return el;
}

/** Draws each edge from the right of its source to the left of its target. */
function connect(region) {
  const el = region.querySelector('.diagram');
  if (!el) return;
  const svg = el.querySelector('.connectors');
  const base = el.getBoundingClientRect();
  const paths = [];
  for (const [from, to] of el.edges) {
    const a = document.getElementById(from);
    const b = document.getElementById(to);
    if (!a || !b) continue;
    const ra = a.getBoundingClientRect();
    const rb = b.getBoundingClientRect();
    if (rb.left <= ra.right) continue; // stacked columns: the arrows say it
    const x1 = ra.right - base.left;
    const y1 = ra.top + Math.min(ra.height / 2, 24) - base.top;
    const x2 = rb.left - base.left;
    const y2 = rb.top + Math.min(rb.height / 2, 24) - base.top;
    const mid = (x1 + x2) / 2;
    paths.push(s('path', { d: `M${x1} ${y1}C${mid} ${y1} ${mid} ${y2} ${x2} ${y2}` }));
  }
  svg.replaceChildren(...paths);
}

function facts(d) {
  const lb = d.load_balancer;
  const hist = d.history || {};
  const tags = (lb ? lb.tags : hist.tags) || {};
  const service = serviceOf(tags);
  const list = lb
    ? [`zone ${lb.zone.slug}`, `created ${fmtTime(lb.created_at, true)} (virtual)`,
      hist.ready_at ? `provisioned ${fmtTime(hist.ready_at, true)}` : null]
    : [`created ${fmtTime(hist.created_at, true)}`, `deleted ${fmtTime(hist.deleted_at, true)} (virtual): history only`];
  const tagText = Object.entries(tags).map(([k, v]) => `${k}=${v}`).join(', ');
  return [h('span', { id: 'lb-service' }, service ? `Service ${service}` : 'no Service tagged'), ' · ',
    list.filter(Boolean).join(' · '), h('br'), h('span', { id: 'lb-tags', class: 'mono' }, tagText ? `tags: ${tagText}` : 'no tags')];
}

export const lbView = {
  mount(main, [uuid], ctx) {
    // The heading stays (it takes the focus on navigation); only its parts are updated.
    const name = h('span', { id: 'lb-name' }, uuid);
    const status = h('span', { id: 'lb-status' });
    const about = h('p', { class: 'lead', id: 'lb-facts' });
    const diagramRegion = h('div', { id: 'diagram-region' });
    const timeline = createTimeline(() => ctx.refreshSoon());
    main.append(h('p', {}, h('a', { href: '#/account' }, '← Account')),
      h('h1', { id: 'lb-title' }, 'Load balancer ', name, ' ', status), about,
      h('section', { 'aria-labelledby': 'diagram-h' }, h('h2', { id: 'diagram-h' }, 'Diagram'), diagramRegion),
      timeline.el);
    const resize = new ResizeObserver(() => connect(diagramRegion));
    resize.observe(diagramRegion);
    const base = `/_fake/load-balancers/${uuid}`;
    return {
      title: 'Load balancer',
      async refresh(signal) {
        const client = encodeURIComponent(timeline.client());
        const [d, av, tl] = await Promise.all([
          getJSON(`/_fake/console/load-balancers/${uuid}`, signal),
          getJSON(`${base}/availability?client=${client}`, signal),
          getJSON(`${base}/timeline`, signal),
        ]);
        const lb = d.load_balancer;
        update(name, [lb && lb.name, d.history && d.history.name], () => (lb ? lb.name : d.history.name));
        update(status, lb && lb.status, () => badge(lb ? lb.status : 'deleted'));
        update(about, [lb, d.history], () => facts(d));
        const shown = [lb && lb.vip_addresses, d.floating_ips, d.listeners, d.pools, d.members, d.health_monitors];
        if (update(diagramRegion, shown, () => diagram(d))) connect(diagramRegion);
        timeline.show(av, tl);
        return d.clock;
      },
      destroy() {
        resize.disconnect();
        timeline.destroy();
      },
    };
  },
};
