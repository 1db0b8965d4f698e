// The request log, live. Unfiltered, only entries newer than the last one seen are fetched
// (`/_fake/console/requests?after=SEQ`); with a filter (method, status, path), fakecloud
// searches everything its log keeps and returns the newest matches.

import { h, update, invalidate, table, empty, getJSON, send, fmtTime, announce, field } from './dom.js';

/** Rows drawn at most (the newest ones, or the newest matching ones). */
const SHOW = 300;

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

function active(f) {
  return f.method !== 'any' || f.status !== 'any' || Boolean(f.path);
}

/** The filter as query parameters of `/_fake/console/requests`. */
function query(f) {
  const q = new URLSearchParams({ limit: String(SHOW) });
  if (f.method !== 'any') q.set('method', f.method);
  if (f.status !== 'any') q.set('status', f.status);
  if (f.path) q.set('path', f.path);
  return q.toString();
}

function logTable(log, f) {
  const shown = [...log.entries].reverse().slice(0, SHOW);
  if (!shown.length) return empty(log.matched === undefined ? 'No API request yet.' : 'No request the log keeps matches the filter.');
  const cols = [{ label: 'Time (virtual)' }, { label: 'Method' }, { label: 'Path' }, { label: 'Route' },
    { label: 'Status', num: true }, { label: 'Duration (ms)', num: true }];
  const rows = shown.map((e) => [fmtTime(e.time), e.method, { content: e.path + (e.query ? `?${e.query}` : ''), mono: true },
    { content: e.route || '(unmatched)', mono: true }, e.status === 0 ? 'dropped' : e.status, e.duration_ms.toFixed(2)]);
  const kept = `fakecloud keeps the newest ${log.kept} of ${log.next} received since start`;
  const caption = active(f)
    ? `${rows.length} of ${log.matched} matching request(s) shown, newest first (the filter searched all ${log.kept} kept; ${log.next} received since start)`
    : `${rows.length} request(s) shown, newest first (${kept}; a filter searches them all)`;
  return table('request-table', caption, cols, rows,
    (i) => ({ dataset: { method: shown[i].method, status: shown[i].status, seq: shown[i].seq } }));
}

export const requestsView = {
  mount(main, _params, ctx) {
    const filters = { method: 'any', status: 'any', path: '' };
    // Unfiltered: the newest entries, followed with `after`. Filtered: the last answer.
    const log = { entries: [], next: 0, kept: 0, matched: undefined, filtered: false };
    const region = h('div', { id: 'request-region' });
    const redraw = () => update(region, [log.next, log.kept, log.matched, log.entries.map((e) => e.seq), filters],
      () => logTable(log, filters));
    const refilter = () => {
      // The table shows the new filter's matches once fakecloud answered.
      ctx.refreshSoon();
    };
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
      controls(filters, refilter, clear), region);
    return {
      title: 'Requests',
      async refresh(signal) {
        if (active(filters)) {
          const page = await getJSON(`/_fake/console/requests?${query(filters)}`, signal);
          Object.assign(log, { entries: page.entries, next: page.next, kept: page.kept, matched: page.matched, filtered: true });
          redraw();
          return page.clock;
        }
        // Back from a filter: follow the log from its newest entries again.
        if (log.filtered) Object.assign(log, { entries: [], next: 0, matched: undefined, filtered: false });
        const page = await getJSON(`/_fake/console/requests?after=${log.next}&limit=${SHOW}`, signal);
        // A `next` below what was seen: fakecloud was reset, start over.
        if (page.next < log.next) log.entries = [];
        log.entries.push(...page.entries);
        if (log.entries.length > SHOW) log.entries.splice(0, log.entries.length - SHOW);
        Object.assign(log, { next: page.next, kept: page.kept });
        redraw();
        return page.clock;
      },
    };
  },
};
