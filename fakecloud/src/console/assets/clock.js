// The clock: mode, scale, virtual now; advancing virtual time (`POST /_fake/clock/advance`,
// fakecloud/MODEL.md §1).

import { h, update, getJSON, send, fmtTime, announce, field } from './dom.js';

function modeText(m) {
  if (m.manual) return 'manual: virtual time moves only when advanced';
  if (m.simulated) return 'simulated: follows the simulation\'s clock';
  return `scaled: ${m.scale} virtual seconds per real second`;
}

function facts(c) {
  const row = (k, v, id) => h('div', {}, h('dt', {}, k), h('dd', { id }, v));
  return h('dl', { class: 'counts' }, row('Mode', modeText(c.mode), 'clock-mode'),
    row('Virtual now (UTC)', fmtTime(c.now, true), 'clock-now'),
    row('API timestamps show', `${c.timestamps} (${fmtTime(c.api_now, true)} now)`, 'clock-api-now'));
}

export const clockView = {
  mount(main, _params, ctx) {
    const region = h('div', { id: 'clock-region' });
    const note = h('p', { id: 'advance-note', class: 'hint' });
    const error = h('p', { id: 'advance-error', class: 'form-error', role: 'alert' });
    const seconds = h('input', { id: 'advance-seconds', type: 'number', min: 0, step: 'any', value: 10, required: true });
    const advance = async (by) => {
      error.textContent = '';
      try {
        const r = await send('POST', '/_fake/clock/advance', { seconds: by });
        announce(`Virtual time advanced by ${by} s to ${fmtTime(r.now, true)}.`);
        ctx.refreshSoon();
      } catch (e) {
        error.textContent = `Could not advance: ${e.message}`;
      }
    };
    const form = h('form', { id: 'advance-form', 'aria-labelledby': 'advance-h' },
      h('div', { class: 'form-grid' }, field('Seconds', seconds),
        h('div', {}, h('button', { type: 'submit', id: 'advance-button' }, 'Advance'))),
      h('div', { class: 'actions' }, [1, 10, 60, 600].map((n) => h('button', {
        type: 'button', class: 'secondary', id: `advance-${n}`, on: { click: () => advance(n) },
      }, n < 60 ? `+${n} s` : `+${n / 60} min`))),
      note, error);
    form.addEventListener('submit', (e) => {
      e.preventDefault();
      const by = Number(seconds.value);
      if (!Number.isFinite(by) || by < 0) {
        error.textContent = 'Seconds must be a number of at least 0.';
        seconds.focus();
        return;
      }
      advance(by);
    });
    main.append(h('h1', {}, 'Clock'),
      h('p', { class: 'lead' }, 'Every status change, timeline and log entry follows this virtual clock.'),
      region, h('h2', { id: 'advance-h' }, 'Advance virtual time'), form);
    return {
      title: 'Clock',
      async refresh(signal) {
        const c = await getJSON('/_fake/clock', signal);
        update(region, c, () => facts(c));
        update(note, c.mode, () => (c.mode.manual ? 'Manual clock: nothing changes until you advance it.'
          : 'The clock also runs by itself; advancing jumps ahead of it.'));
        return c;
      },
    };
  },
};
