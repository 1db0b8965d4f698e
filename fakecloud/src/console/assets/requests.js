// The request log, live: only entries newer than the last one seen are fetched
// (`/_fake/console/requests?after=SEQ`), filtered here by method, status and path.

import { h, update, invalidate, table, empty, getJSON, send, fmtTime, announce, field } from './dom.js';

/** Entries kept in the page; older ones are dropped (the server keeps its own 10,000). */
const KEEP = 2000;
/** Rows drawn at most (the newest matching ones). */
const SHOW = 300;

function statusClass(status) {
  if (status === 0) return 'dropped';
  return `${Math.floor(status / 100)}xx`;
}

function controls(filters, onChange, onClear) {
  const method = h('select', { id: 'rq-method' }, ['any', 'GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']
    .map((m) => h('option', { value: m }, m)));
  const status = h('select', { id: 'rq-status' }, [['any', 'any'], ['2xx', '2xx success'], ['4xx', '4xx client error'],
    ['5xx', '5xx server error'], ['dropped', 'dropped (fault)']].map(([v, t]) => h('option', { value: v }, t)));
  const path = h('input', { id: 'rq-path', type: 'search', placeholder: 'e.g. load-balancers', size: 24 });
  const changed = () => {
    Object.assign(filters, { method: method.value, status: status.value, path: path.value.trim().toLowerCase() });
    onChange();
  };
  method.addEventListener('change', changed);
  status.addEventListener('change', changed);
  path.addEventListener('input', changed);
  const clear = h('button', { type: 'button', class: 'danger', id: 'rq-clear' }, 'Clear the log');
  clear.addEventListener('click', onClear);
  return h('form', { class: 'form-grid', role: 'search', 'aria-label': 'Filter requests', on: { submit: (e) => e.preventDefault() } },
    field('Method', method), field('Status', status), field('Path contains', path), h('div', {}, clear));
}

function matches(e, f) {
  return (f.method === 'any' || e.method === f.method)
    && (f.status === 'any' || statusClass(e.status) === f.status)
    && (!f.path || `${e.path}?${e.query || ''}`.toLowerCase().includes(f.path));
}

function logTable(entries, f, total) {
  const shown = [];
  for (let i = entries.length - 1; i >= 0 && shown.length < SHOW; i -= 1) {
    if (matches(entries[i], f)) shown.push(entries[i]);
  }
  if (!shown.length) return empty(entries.length ? 'No request matches the filter.' : 'No API request yet.');
  const cols = [{ label: 'Time (virtual)' }, { label: 'Method' }, { label: 'Path' }, { label: 'Route' },
    { label: 'Status', num: true }, { label: 'Duration (ms)', num: true }];
  const rows = shown.map((e) => [fmtTime(e.time), e.method, { content: e.path + (e.query ? `?${e.query}` : ''), mono: true },
    { content: e.route || '(unmatched)', mono: true }, e.status === 0 ? 'dropped' : e.status, e.duration_ms.toFixed(2)]);
  return table('request-table', `${rows.length} request(s) shown, newest first (${total} received since start)`, cols, rows,
    (i) => ({ dataset: { method: shown[i].method, status: shown[i].status, seq: shown[i].seq } }));
}

export const requestsView = {
  mount(main, _params, ctx) {
    const filters = { method: 'any', status: 'any', path: '' };
    const log = { entries: [], next: 0 };
    const region = h('div', { id: 'request-region' });
    const redraw = () => update(region, [log.next, log.entries.length, filters], () => logTable(log.entries, filters, log.next));
    const clear = async () => {
      try {
        await send('DELETE', '/_fake/requests');
        log.entries = [];
        invalidate(region);
        redraw();
        announce('Request log cleared.');
        ctx.refreshSoon();
      } catch (e) {
        announce(`Could not clear the log: ${e.message}`);
      }
    };
    main.append(h('h1', {}, 'Requests'),
      h('p', { class: 'lead' }, 'Every /v1 request fakecloud answered (admin and console requests are not logged), newest first, updated live.'),
      controls(filters, redraw, clear), region);
    return {
      title: 'Requests',
      async refresh(signal) {
        const page = await getJSON(`/_fake/console/requests?after=${log.next}`, signal);
        // A `next` below what was seen: fakecloud was reset, start over.
        if (page.next < log.next) log.entries = [];
        log.entries.push(...page.entries);
        if (log.entries.length > KEEP) log.entries.splice(0, log.entries.length - KEEP);
        log.next = page.next;
        redraw();
        return page.clock;
      },
    };
  },
};
