// The account view: servers, networks and subnets, floating IPs, load balancers (with
// their members' health), and deleted load balancers whose timelines remain.

import { h, update, table, empty, badge, getJSON, fmtTime } from './dom.js';

function section(id, title, region) {
  return h('section', { 'aria-labelledby': `${id}-h` }, h('h2', { id: `${id}-h` }, title), region);
}

/** The Kubernetes Service a load balancer serves, from the tags the cloudscale CCM sets:
 * `namespace/name` (tag `k8s.cloudscale.ch/service`), else its UID; with the cluster. */
export function serviceOf(tags) {
  const parts = serviceParts(tags);
  if (!parts) return null;
  return parts.cluster ? `${parts.service} (cluster ${parts.cluster})` : parts.service;
}

function serviceParts(tags) {
  const t = tags || {};
  const service = t['k8s.cloudscale.ch/service']
    || (t['k8s.cloudscale.ch/service-uid'] ? `uid ${t['k8s.cloudscale.ch/service-uid']}` : null);
  return service ? { service, cluster: t['k8s.cloudscale.ch/cluster'] } : null;
}

/** The Service on one line, its cluster below it. */
function serviceCell(tags) {
  const parts = serviceParts(tags);
  if (!parts) return h('span', { class: 'empty' }, 'none tagged');
  // It may wrap after the namespace, nowhere else.
  const slash = parts.service.indexOf('/');
  const name = slash < 0 ? parts.service
    : [parts.service.slice(0, slash + 1), h('wbr'), parts.service.slice(slash + 1)];
  return h('span', { class: 'service' }, h('span', { class: 'mono service-name' }, name),
    parts.cluster ? h('span', { class: 'service-cluster' }, `cluster ${parts.cluster}`) : null);
}

function lbLink(uuid, name) {
  return h('a', { href: `#/lb/${uuid}`, id: `lb-link-${uuid}` }, name || uuid);
}

/** `3 up · 1 changing`, each with its badge. */
function memberHealth(summary) {
  const counts = Object.entries((summary && summary.monitor_status) || {}).sort();
  if (!counts.length) return h('span', { class: 'empty' }, 'no members');
  return h('span', { class: 'member-counts' },
    counts.map(([status, n], i) => [i ? ' ' : null, h('span', { dataset: { count: n } }, `${n} `, badge(status))]));
}

function lbTable(d) {
  if (!d.load_balancers.length) return empty('No load balancers.');
  const fips = {};
  for (const f of d.floating_ips) {
    if (f.load_balancer) (fips[f.load_balancer.uuid] ||= []).push(f.network);
  }
  const cols = [{ label: 'Name' }, { label: 'Service' }, { label: 'Status' }, { label: 'Zone' }, { label: 'VIP addresses' },
    { label: 'Floating IPs' }, { label: 'Listeners', num: true }, { label: 'Pools', num: true },
    { label: 'Members (monitor status)' }, { label: 'Created (virtual)' }];
  const rows = d.load_balancers.map((lb) => {
    const sum = d.summaries[lb.uuid] || {};
    return [lbLink(lb.uuid, lb.name), serviceCell(lb.tags), badge(lb.status), lb.zone.slug,
      { content: lb.vip_addresses.map((v) => v.address).join(', '), mono: true },
      { content: (fips[lb.uuid] || []).join(', ') || '–', mono: true },
      sum.listeners || 0, sum.pools || 0, memberHealth(sum), fmtTime(lb.created_at, true)];
  });
  return table('lb-table', `${rows.length} load balancer(s)`, cols, rows,
    (i) => ({ dataset: { lb: d.load_balancers[i].uuid, status: d.load_balancers[i].status,
      service: serviceOf(d.load_balancers[i].tags) || '' } }));
}

function addresses(server, kind) {
  return server.interfaces.filter((i) => i.type === kind)
    .flatMap((i) => i.addresses.map((a) => (kind === 'private' ? `${a.address} (${i.network.name})` : a.address)))
    .join(', ') || '–';
}

function serverTable(d) {
  if (!d.servers.length) return empty('No servers.');
  const cols = [{ label: 'Name' }, { label: 'Status' }, { label: 'Flavor' }, { label: 'Zone' },
    { label: 'Public addresses' }, { label: 'Private addresses' }, { label: 'Created (virtual)' }];
  const rows = d.servers.map((sv) => [sv.name, badge(sv.status), sv.flavor ? sv.flavor.slug : '–',
    sv.zone.slug, { content: addresses(sv, 'public'), mono: true },
    { content: addresses(sv, 'private'), mono: true }, fmtTime(sv.created_at, true)]);
  return table('server-table', `${rows.length} server(s)`, cols, rows,
    (i) => ({ dataset: { server: d.servers[i].uuid, status: d.servers[i].status } }));
}

function networkTable(d) {
  if (!d.networks.length) return empty('No private networks.');
  const cols = [{ label: 'Name' }, { label: 'Zone' }, { label: 'MTU', num: true }, { label: 'Subnets (gateway)' }];
  const rows = d.networks.map((n) => {
    const subnets = d.subnets.filter((sn) => sn.network.uuid === n.uuid)
      .map((sn) => `${sn.cidr}${sn.gateway_address ? ` (${sn.gateway_address})` : ''}`);
    return [n.name, n.zone.slug, n.mtu, { content: subnets.join(', ') || 'none', mono: true }];
  });
  return table('network-table', `${rows.length} network(s)`, cols, rows);
}

function fipTable(d) {
  if (!d.floating_ips.length) return empty('No floating IPs.');
  const cols = [{ label: 'Address' }, { label: 'Type' }, { label: 'Region' }, { label: 'Target' },
    { label: 'Next hop' }, { label: 'Created (virtual)' }];
  const rows = d.floating_ips.map((f) => {
    let target = h('span', { class: 'empty' }, 'unassigned');
    if (f.server) target = ['server ', f.server.name];
    if (f.load_balancer) target = ['load balancer ', lbLink(f.load_balancer.uuid, f.load_balancer.name)];
    return [{ content: f.network, mono: true }, f.type, f.region ? f.region.slug : 'global', target,
      { content: f.next_hop || '–', mono: true }, fmtTime(f.created_at, true)];
  });
  return table('fip-table', `${rows.length} floating IP(s)`, cols, rows);
}

function deletedTable(d) {
  if (!d.deleted_load_balancers.length) return empty('None.');
  const cols = [{ label: 'Name' }, { label: 'Service' }, { label: 'Created (virtual)' }, { label: 'Deleted (virtual)' }];
  const rows = d.deleted_load_balancers.map((l) => [lbLink(l.uuid, l.name), serviceCell(l.tags),
    fmtTime(l.created_at, true), fmtTime(l.deleted_at, true)]);
  return table('deleted-lb-table', 'Deleted load balancers (their availability history stays)', cols, rows);
}

function counts(d) {
  const item = (label, n) => h('div', {}, h('dt', {}, label), h('dd', {}, n));
  return h('dl', { class: 'counts' }, item('Servers', d.servers.length), item('Networks', d.networks.length),
    item('Subnets', d.subnets.length), item('Floating IPs', d.floating_ips.length),
    item('Load balancers', d.load_balancers.length));
}

export const accountView = {
  mount(main) {
    const r = {};
    for (const k of ['counts', 'lbs', 'servers', 'networks', 'fips', 'deleted']) r[k] = h('div', { id: `region-${k}` });
    main.append(
      h('h1', {}, 'Account'),
      h('p', { class: 'lead' }, 'What the API shows, with virtual times. Choose a load balancer for its diagram and availability timeline.'),
      r.counts,
      section('lbs', 'Load balancers', r.lbs),
      section('servers', 'Servers', r.servers),
      section('networks', 'Networks and subnets', r.networks),
      section('fips', 'Floating IPs', r.fips),
      section('deleted', 'Deleted load balancers', r.deleted),
    );
    return {
      title: 'Account',
      async refresh(signal) {
        const d = await getJSON('/_fake/console/account', signal);
        update(r.counts, [d.servers.length, d.networks.length, d.subnets.length, d.floating_ips.length,
          d.load_balancers.length], () => counts(d));
        update(r.lbs, [d.load_balancers, d.summaries, d.floating_ips], () => lbTable(d));
        update(r.servers, d.servers, () => serverTable(d));
        update(r.networks, [d.networks, d.subnets], () => networkTable(d));
        update(r.fips, d.floating_ips, () => fipTable(d));
        update(r.deleted, d.deleted_load_balancers, () => deletedTable(d));
        return d.clock;
      },
    };
  },
};
