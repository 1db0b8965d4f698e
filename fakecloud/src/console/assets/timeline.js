// The availability timeline of one load balancer: one lane per entry address × listener
// port, down intervals coloured, patterned and labelled by reason (colour alone never
// tells them apart), applied operations marked on the virtual time axis, and the same
// data as tables. Data: `/_fake/load-balancers/{uuid}/availability` and `/timeline`
// (fakecloud/MODEL.md §3 rule 14 lists the reasons, §6 the endpoints).

import { h, s, update, table, empty, field, fmtTime, fmtDuration, ms } from './dom.js';

/** Every reason the oracle gives (MODEL.md §3, rule 14): colour (Okabe-Ito), pattern, code. */
export const REASONS = [
  { reason: 'load balancer not provisioned', code: 'PROV', color: '#bbbbbb', pattern: 'dots' },
  { reason: 'load balancer deleted', code: 'DEL', color: '#555555', pattern: 'grid' },
  { reason: 'floating IP not assigned or not propagated', code: 'FIP', color: '#56b4e9', pattern: 'horizontal' },
  { reason: 'no listener', code: 'LSTN', color: '#d55e00', pattern: 'diagonal' },
  { reason: 'client not in allowed_cidrs', code: 'CIDR', color: '#cc79a7', pattern: 'vertical' },
  { reason: 'listener has no pool', code: 'POOL', color: '#f0e442', pattern: 'cross' },
  { reason: 'no member up', code: 'MBR', color: '#e69f00', pattern: 'backslash' },
  { reason: 'no member answers', code: 'ANS', color: '#009e73', pattern: 'checker' },
];
const UNKNOWN = { reason: 'other', code: '?', color: '#000000', pattern: 'none' };

function reasonOf(text) {
  return REASONS.find((r) => r.reason === text) || { ...UNKNOWN, reason: text };
}

function patternId(r) {
  return `pat-${r.code.toLowerCase().replace(/[^a-z]/g, 'x')}`;
}

const STROKES = {
  dots: (ink) => s('circle', { cx: 4, cy: 4, r: 1.6, fill: ink }),
  grid: (ink) => s('path', { d: 'M0 4H8M4 0V8', stroke: ink, 'stroke-width': 1.5 }),
  horizontal: (ink) => s('path', { d: 'M0 2H8M0 6H8', stroke: ink, 'stroke-width': 1.5 }),
  diagonal: (ink) => s('path', { d: 'M-2 2L2 -2M0 8L8 0M6 10L10 6', stroke: ink, 'stroke-width': 1.6 }),
  vertical: (ink) => s('path', { d: 'M2 0V8M6 0V8', stroke: ink, 'stroke-width': 1.5 }),
  cross: (ink) => s('path', { d: 'M0 0L8 8M8 0L0 8', stroke: ink, 'stroke-width': 1.2 }),
  backslash: (ink) => s('path', { d: 'M-2 6L2 10M0 0L8 8M6 -2L10 2', stroke: ink, 'stroke-width': 1.6 }),
  checker: (ink) => s('path', { d: 'M0 0H4V4H0ZM4 4H8V8H4Z', fill: ink }),
  none: () => null,
};

/** The patterns, defined once per page (every SVG of the document can use them). */
function patternDefs() {
  const defs = [...REASONS, UNKNOWN].map((r) => {
    const ink = r.code === 'DEL' || r.code === '?' ? '#ffffff' : '#000000';
    return s('pattern', { id: patternId(r), patternUnits: 'userSpaceOnUse', width: 8, height: 8 },
      s('rect', { width: 8, height: 8, fill: r.color }), STROKES[r.pattern](ink));
  });
  return s('svg', { class: 'pattern-defs', 'aria-hidden': 'true', focusable: 'false' }, s('defs', {}, defs));
}

function swatch(r) {
  return s('svg', { class: 'swatch', width: 28, height: 16, viewBox: '0 0 28 16', 'aria-hidden': 'true' },
    s('rect', { width: 28, height: 16, fill: `url(#${patternId(r)})` }));
}

function legend() {
  return h('ul', { class: 'legend', 'aria-label': 'Down reasons' }, REASONS.map((r) =>
    h('li', { dataset: { reason: r.reason } }, swatch(r), h('span', { class: 'code' }, r.code), r.reason)));
}

/** A tick step (seconds) giving about `n` ticks over `span` seconds. */
function tickStep(span, n) {
  const steps = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 21600, 43200, 86400];
  return steps.find((st) => span / st <= n) || 86400 * Math.ceil(span / n / 86400);
}

function laneName(e) {
  return `${e.address} ${e.kind === 'vip' ? 'VIP' : 'floating IP'} · ${e.protocol}/${e.port}`;
}

/** The part of a load balancer's life an interval [from, to) (ms) of entry `e` falls in:
 * before the entry first served (provisioning, the first configuration), while it served,
 * or after the load balancer was deleted. */
function phaseOf(e, from, deletedAt) {
  if (deletedAt !== null && from >= deletedAt) return 'after deletion';
  if (!e.first_served_at || from < ms(e.first_served_at)) return 'before serving';
  return 'serving';
}

/** Seconds of `intervals` (clipped, of one lane) within the entry's serving life: from its
 * first success to the deletion. The totals a person compares with the documented downtime
 * of a change; provisioning and the time after deletion are not outages. */
function servingDown(e, intervals, deletedAt) {
  if (!e.first_served_at) return 0;
  const start = ms(e.first_served_at);
  const end = deletedAt === null ? Infinity : deletedAt;
  return intervals.reduce((a, iv) => a + Math.max(0, Math.min(iv.to, end) - Math.max(iv.from, start)) / 1000, 0);
}

/** The lane's label: its downtime while serving, and when it first served. */
function laneLabel(e, intervals, view) {
  const down = `${fmtDuration(servingDown(e, intervals, view.deletedAt))} down while serving`;
  if (!e.first_served_at) return `${laneName(e)} · never served yet`;
  const after = (ms(e.first_served_at) - view.createdAt) / 1000;
  return `${laneName(e)} · ${down} · first served ${fmtDuration(after)} after creation`;
}

/** The down intervals of `entries` clipped to [t0, t1] (ms), with their lane and phase;
 * `end` is where the oracle's answer ends (now). */
function clipped(entries, t0, t1, end, deletedAt) {
  const out = [];
  entries.forEach((e, lane) => {
    for (const d of e.down) {
      const from = Math.max(ms(d.from), t0);
      const to = Math.min(ms(d.to), t1);
      // An interval that reaches the end of the data is still going on (a deleted load
      // balancer's data ends at its deletion: nothing is going on any more).
      const ongoing = deletedAt === null && ms(d.to) >= end;
      if (to > from) {
        out.push({ lane, entry: e, reason: reasonOf(d.reason), from, to, d, ongoing, phase: phaseOf(e, from, deletedAt) });
      }
    }
  });
  return out;
}

function axis(x, t0, t1, y, width) {
  const step = tickStep((t1 - t0) / 1000, Math.max(2, Math.floor(width / 110))) * 1000;
  // Labels near an edge grow inwards, so none is cut off.
  const anchor = (at) => (at < 32 ? 'start' : at > width - 32 ? 'end' : 'middle');
  const ticks = [];
  for (let t = Math.ceil(t0 / step) * step; t <= t1; t += step) {
    ticks.push(s('g', {}, s('line', { x1: x(t), x2: x(t), y1: y, y2: y + 5 }),
      s('text', { x: x(t), y: y + 17, 'text-anchor': anchor(x(t)) }, fmtTime(new Date(t).toISOString()))));
  }
  return s('g', { class: 'axis', 'aria-hidden': 'true' }, s('line', { x1: x(t0), x2: x(t1), y1: y, y2: y }), ticks);
}

function downShape(iv, x, y) {
  const x0 = x(iv.from);
  const w = Math.max(2, x(iv.to) - x0);
  const secs = (iv.to - iv.from) / 1000;
  const label = `${laneName(iv.entry)}: ${iv.reason.reason}, ${fmtTime(iv.d.from)} to ${fmtTime(iv.d.to)} (${fmtDuration(secs)})`;
  const text = w >= iv.reason.code.length * 7 + 6
    ? s('text', { class: 'down-code', x: x0 + w / 2, y: y + 15, 'text-anchor': 'middle', stroke: '#ffffff',
      'stroke-width': 3, 'paint-order': 'stroke' }, iv.reason.code)
    : null;
  return s('g', { class: 'down', dataset: { reason: iv.reason.reason, code: iv.reason.code, lane: iv.lane,
    from: iv.d.from, to: iv.d.to, duration: secs.toFixed(3), ongoing: iv.ongoing, phase: iv.phase } },
  s('title', {}, label),
  s('rect', { x: x0, y, width: w, height: 22, fill: `url(#${patternId(iv.reason)})`, stroke: '#000', 'stroke-width': 0.75 }),
  text);
}

/** Lane geometry: each lane is its label's line, a gap, then its bar (px). */
const LANE = { height: 54, label: 14, bar: 22, barHeight: 22 };

/** The SVG drawing of the lanes over [t0, t1] (ms). */
function drawing(view, width) {
  const { entries, ops, t0, t1, atNow } = view;
  const left = 8;
  const right = 14;
  const x = (t) => left + ((t - t0) / Math.max(1, t1 - t0)) * (width - left - right);
  const intervals = clipped(entries, t0, t1, view.end, view.deletedAt);
  const top = 8;
  const lanesBottom = top + entries.length * LANE.height;
  const height = lanesBottom + 22 + 26;
  const children = [];
  const labels = [];
  entries.forEach((e, i) => {
    const y = top + i * LANE.height;
    const text = laneLabel(e, intervals.filter((iv) => iv.lane === i), view);
    // Drawn last, with a halo: the operation lines pass under them, never through them.
    labels.push(s('text', { class: 'lane-label', x: left, y: y + LANE.label, dataset: { lane: i,
      serving: servingDown(e, intervals.filter((iv) => iv.lane === i), view.deletedAt).toFixed(3) } }, text));
    children.push(s('rect', { class: 'track', x: x(t0), y: y + LANE.bar, width: x(t1) - x(t0), height: LANE.barHeight }));
  });
  for (const iv of intervals) children.push(downShape(iv, x, top + iv.lane * LANE.height + LANE.bar));
  for (const op of ops) {
    const t = ms(op.effective_at);
    if (t < t0 || t > t1) continue;
    const title = `${fmtTime(op.effective_at)} applied: ${op.operation} (requested ${fmtTime(op.requested_at)})`;
    children.push(s('g', { class: 'op', dataset: { at: op.effective_at } }, s('title', {}, title),
      s('line', { class: 'op-line', x1: x(t), x2: x(t), y1: top + LANE.bar, y2: lanesBottom + 4 }),
      s('path', { class: 'op-marker', d: `M${x(t)} ${lanesBottom + 4}l-5 9h10z` })));
  }
  if (atNow) children.push(s('line', { class: 'now-line', x1: x(t1), x2: x(t1), y1: 4, y2: lanesBottom + 14 }));
  children.push(...labels);
  children.push(axis(x, t0, t1, lanesBottom + 20, width));
  const summary = `${entries.length} lane(s), ${intervals.length} down interval(s), ${ops.length} applied operation(s); details in the tables below.`;
  return s('svg', { class: 'timeline-svg', id: 'timeline-svg', width, height, viewBox: `0 0 ${width} ${height}`,
    role: 'img', 'aria-label': `Availability timeline: ${summary}` }, children);
}

function downTable(intervals) {
  if (!intervals.length) return empty('No down intervals in this window: every entry answered.');
  const cols = [{ label: 'Entry and port' }, { label: 'Reason' }, { label: 'Life' }, { label: 'From (virtual)' },
    { label: 'To (virtual)' }, { label: 'Duration', num: true }];
  const rows = intervals.map((iv) => [laneName(iv.entry),
    h('span', { class: 'reason' }, swatch(iv.reason), ` ${iv.reason.code}: ${iv.reason.reason}`), iv.phase,
    fmtTime(new Date(iv.from).toISOString()), iv.ongoing ? 'now (ongoing)' : fmtTime(new Date(iv.to).toISOString()),
    `${iv.ongoing ? 'so far ' : ''}${fmtDuration((iv.to - iv.from) / 1000)}`]);
  const serving = intervals.filter((iv) => iv.phase === 'serving').length;
  return table('down-table', `${rows.length} down interval(s), ${serving} while serving`, cols, rows, (i) => ({
    dataset: { reason: intervals[i].reason.reason, from: intervals[i].d.from, ongoing: intervals[i].ongoing,
      phase: intervals[i].phase, duration: ((intervals[i].to - intervals[i].from) / 1000).toFixed(3) },
  }));
}

function opsTable(ops) {
  if (!ops.length) return empty('No operations applied yet.');
  const cols = [{ label: 'Applied (virtual)' }, { label: 'Requested (virtual)' }, { label: 'Operation' }];
  return table('ops-table', `${ops.length} applied operation(s)`, cols,
    ops.map((o) => [fmtTime(o.effective_at), fmtTime(o.requested_at), { content: o.operation, mono: true }]));
}

function controls(state, redraw) {
  const win = h('select', { id: 'tl-window' }, [['all', 'Whole life'], ['60', 'Last minute'], ['300', 'Last 5 minutes'],
    ['900', 'Last 15 minutes'], ['3600', 'Last hour']].map(([v, t]) => h('option', { value: v }, t)));
  win.addEventListener('change', () => { state.window = win.value; redraw(); });
  const client = h('input', { id: 'tl-client', type: 'text', value: state.client, size: 18 });
  client.addEventListener('change', () => { state.client = client.value.trim() || '203.0.113.10'; state.onClient(); });
  return h('div', { class: 'timeline-controls' },
    field('Window', win, 'virtual time'),
    field('Client address', client, 'judged against allowed CIDRs'));
}

/** The timeline section; `show(availability, timeline)` draws it. */
export function createTimeline(onClient) {
  const state = { window: 'all', client: '203.0.113.10', onClient, last: null };
  const svgRegion = h('div', { id: 'timeline-drawing' });
  const downRegion = h('div', { id: 'down-region' });
  const opsRegion = h('div', { id: 'ops-region' });
  const draw = () => {
    if (!state.last) return;
    const { availability: av, timeline: tl } = state.last;
    // A deleted load balancer's history ends at its deletion: nothing after it grows.
    const deletedAt = tl.deleted_at ? ms(tl.deleted_at) : null;
    const end = deletedAt === null ? ms(av.to) : Math.min(ms(av.to), deletedAt);
    const t0 = state.window === 'all' ? ms(tl.created_at) : Math.max(ms(tl.created_at), end - Number(state.window) * 1000);
    const order = (e) => `${e.kind === 'vip' ? 0 : 1} ${e.address.includes(':') ? 1 : 0} ${e.address} ${String(e.port).padStart(5, '0')}`;
    const entries = [...av.entries].sort((a, b) => order(a).localeCompare(order(b)));
    const ops = tl.operations.filter((o) => ms(o.effective_at) <= end);
    const width = Math.max(300, svgRegion.clientWidth || 900);
    const view = { entries, ops, t0, t1: Math.max(end, t0 + 1000), end, atNow: !tl.deleted_at, deletedAt,
      createdAt: ms(tl.created_at) };
    update(svgRegion, [width, view], () => drawing(view, width));
    const intervals = clipped(entries, view.t0, view.t1, end, deletedAt).sort((a, b) => a.from - b.from || a.lane - b.lane);
    update(downRegion, intervals.map((iv) => [iv.lane, iv.from, iv.to, iv.reason.code, iv.ongoing, iv.phase]), () => downTable(intervals));
    update(opsRegion, ops, () => opsTable(ops));
  };
  const el = h('section', { 'aria-labelledby': 'timeline-h', id: 'timeline' },
    h('h2', { id: 'timeline-h' }, 'Availability timeline'),
    h('p', { class: 'lead' }, 'New connections per entry address and listener port, in virtual time (UTC). Hatched bars are down intervals; triangles mark applied operations.'),
    patternDefs(), controls(state, draw), legend(), svgRegion,
    h('h3', {}, 'Down intervals'), downRegion,
    h('details', { id: 'ops-details' }, h('summary', {}, 'Applied operations'), opsRegion));
  const resize = new ResizeObserver(() => draw());
  resize.observe(svgRegion);
  return {
    el,
    client: () => state.client,
    show(availability, timeline) {
      state.last = { availability, timeline };
      draw();
    },
    destroy() { resize.disconnect(); },
  };
}
