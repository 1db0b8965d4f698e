// DOM and data helpers shared by the views. No framework: elements are built with `h`,
// and a region is only rebuilt when its data changed, keeping focus where it was.

const SVG_NS = 'http://www.w3.org/2000/svg';

function build(el, attrs, children) {
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === 'on') {
      for (const [ev, fn] of Object.entries(v)) el.addEventListener(ev, fn);
    } else if (k === 'text') {
      el.textContent = v;
    } else if (k === 'dataset') {
      for (const [dk, dv] of Object.entries(v)) el.dataset[dk] = dv;
    } else {
      el.setAttribute(k, v === true ? '' : String(v));
    }
  }
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

/** An HTML element: `h('a', {href: '#/x'}, 'text', child, [more])`. */
export function h(tag, attrs, ...children) {
  return build(document.createElement(tag), attrs, children);
}

/** An SVG element. */
export function s(tag, attrs, ...children) {
  return build(document.createElementNS(SVG_NS, tag), attrs, children);
}

const lastData = new WeakMap();

/**
 * Replaces the content of `region` with `render()` when `data` differs from the last call
 * (compared as JSON), and puts the focus back on the element with the same id.
 */
export function update(region, data, render) {
  const key = JSON.stringify(data);
  if (lastData.get(region) === key) return false;
  lastData.set(region, key);
  const focused = document.activeElement;
  const focusId = focused && region.contains(focused) ? focused.id : null;
  region.replaceChildren(...[render()].flat(Infinity).filter(Boolean));
  if (focusId) {
    const again = document.getElementById(focusId);
    if (again) again.focus({ preventScroll: true });
  }
  return true;
}

/** Forgets what `update` last drew into `region` (the next update redraws). */
export function invalidate(region) {
  lastData.delete(region);
}

/**
 * A table with a caption and column headers inside a scrollable, focusable region (so a
 * keyboard can scroll a wide table on a narrow screen). `cols`: [{label, num}], rows:
 * arrays of cells (a cell is text, a node, or {content, num, mono}).
 */
export function table(id, caption, cols, rows, rowAttrs) {
  const head = h('tr', {}, cols.map((c) => h('th', { scope: 'col', class: c.num ? 'num' : null }, c.label)));
  const body = rows.map((cells, i) =>
    h('tr', rowAttrs ? rowAttrs(i) : {}, cells.map((cell, j) => {
      const plain = cell === null || typeof cell !== 'object' || cell instanceof Node || Array.isArray(cell);
      const content = plain ? cell : cell.content;
      const cls = [cols[j].num || (!plain && cell.num) ? 'num' : null, !plain && cell.mono ? 'mono' : null]
        .filter(Boolean).join(' ');
      return j === 0
        ? h('th', { scope: 'row', class: cls || null }, content ?? '')
        : h('td', { class: cls || null }, content ?? '');
    })));
  return h('div', { class: 'table-wrap', role: 'region', 'aria-labelledby': `${id}-caption`, tabindex: 0 },
    h('table', { id }, h('caption', { id: `${id}-caption` }, caption), h('thead', {}, head), h('tbody', {}, body)));
}

/** A paragraph saying a list is empty. */
export function empty(text) {
  return h('p', { class: 'empty' }, text);
}

/** A status badge: a symbol, a word and a colour class, so that colour is never needed. */
export function badge(status) {
  const kinds = {
    up: ['ok', '✔'], running: ['ok', '●'], no_monitor: ['neutral', '–'],
    changing: ['warn', '◐'], down: ['bad', '✖'], stopped: ['neutral', '■'], deleted: ['neutral', '✝'],
  };
  const [cls, sym] = kinds[status] || ['neutral', '?'];
  return h('span', { class: `badge ${cls}`, dataset: { status } },
    h('span', { 'aria-hidden': 'true' }, sym), status.replace('_', ' '));
}

/** `GET` a JSON document; throws with the status on anything but 2xx. */
export async function getJSON(url, signal) {
  const r = await fetch(url, { signal, cache: 'no-store', headers: { accept: 'application/json' } });
  if (!r.ok) throw new Error(`${url}: HTTP ${r.status}`);
  return r.json();
}

/** Sends a JSON body (or none); returns the parsed answer, or throws with its error text. */
export async function send(method, url, body) {
  const init = { method, headers: {} };
  if (body !== undefined) {
    init.headers['content-type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  const r = await fetch(url, init);
  const text = await r.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch { data = text; }
  if (!r.ok) {
    const detail = data && typeof data === 'object'
      ? Object.entries(data).map(([k, v]) => (k === 'detail' ? v : `${k}: ${v}`)).join('; ')
      : String(data || r.statusText);
    throw new Error(`HTTP ${r.status}: ${detail}`);
  }
  return data;
}

/** Milliseconds since the epoch of an RFC 3339 time. */
export function ms(iso) {
  return Date.parse(iso);
}

/** `12:03:04.5` (UTC, virtual); the date too when `withDate`. */
export function fmtTime(iso, withDate) {
  if (!iso) return '–';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  const t = d.toISOString();
  const frac = d.getUTCMilliseconds() ? t.slice(19, 21) : '';
  return (withDate ? `${t.slice(0, 10)} ` : '') + t.slice(11, 19) + frac;
}

/** `9.5 s`, `2 min 5 s`, `1 h 3 min`. */
export function fmtDuration(seconds) {
  const sec = Math.max(0, seconds);
  if (sec < 60) return `${Number(sec.toFixed(1))} s`;
  if (sec < 3600) return `${Math.floor(sec / 60)} min ${Math.round(sec % 60)} s`;
  return `${Math.floor(sec / 3600)} h ${Math.round((sec % 3600) / 60)} min`;
}

/** Says `text` to screen readers (the polite live region of the page). */
export function announce(text) {
  const el = document.getElementById('announce');
  if (el) el.textContent = text;
}

/** A labelled form control: `<div><label for>…</label>control</div>`. */
export function field(label, control, hint) {
  return h('div', {}, h('label', { for: control.id }, label, hint ? h('span', { class: 'hint' }, ` ${hint}`) : null), control);
}
