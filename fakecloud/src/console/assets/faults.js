// Fault rules (`/_fake/faults`, fakecloud/MODEL.md §7): add one, see each rule's hits live,
// remove one or all.

import { h, update, table, empty, getJSON, send, announce, field } from './dom.js';

function effectText(e) {
  switch (e.type) {
    case 'status': return `answer ${e.status}${e.retry_after ? `, Retry-After ${e.retry_after} s` : ''}`;
    case 'latency': return `delay ${e.ms} ms`;
    case 'drop': return 'drop the connection (not executed)';
    case 'lose_answer': return 'execute, then lose the answer';
    default: return e.type;
  }
}

function input(id, attrs) {
  return h('input', { id, name: id, ...attrs });
}

/** The add form: the effect's own fields show only for that effect. */
function addForm(onAdded) {
  const c = {
    method: h('select', { id: 'f-method' }, ['any', 'GET', 'POST', 'PUT', 'PATCH', 'DELETE'].map((m) => h('option', { value: m }, m))),
    path: input('f-path', { type: 'text', value: '/v1/**', required: true, size: 28, 'aria-describedby': 'f-path-hint' }),
    resource: input('f-resource', { type: 'text', size: 20 }),
    effect: h('select', { id: 'f-effect' }, [['status', 'status code'], ['latency', 'latency'], ['drop', 'drop connection'],
      ['lose_answer', 'lose answer']].map(([v, t]) => h('option', { value: v }, t))),
    status: input('f-status', { type: 'number', min: 100, max: 599, value: 503 }),
    retry: input('f-retry', { type: 'number', min: 0 }),
    latency: input('f-ms', { type: 'number', min: 0, value: 250 }),
    probability: input('f-probability', { type: 'number', min: 0, max: 1, step: 'any' }),
    times: input('f-times', { type: 'number', min: 1 }),
  };
  const statusFields = h('div', { class: 'form-grid' }, field('Status', c.status), field('Retry-After (s)', c.retry, 'optional'));
  const latencyFields = h('div', { class: 'form-grid' }, field('Latency (ms)', c.latency));
  const error = h('p', { id: 'f-error', class: 'form-error', role: 'alert' });
  const showEffect = () => {
    statusFields.hidden = c.effect.value !== 'status';
    latencyFields.hidden = c.effect.value !== 'latency';
  };
  c.effect.addEventListener('change', showEffect);
  showEffect();
  const num = (el) => (el.value === '' ? undefined : Number(el.value));
  const form = h('form', { id: 'fault-form', 'aria-labelledby': 'add-fault-h' },
    h('div', { class: 'form-grid' }, field('Method', c.method), field('Path (glob)', c.path),
      field('Resource', c.resource, 'optional UUID or IP'), field('Effect', c.effect),
      field('Probability', c.probability, '0-1, optional'), field('Times', c.times, 'optional')),
    h('p', { id: 'f-path-hint', class: 'hint' }, '* matches within a path segment, ** across segments: /v1/load-balancers/**'),
    statusFields, latencyFields,
    h('div', { class: 'actions' }, h('button', { type: 'submit', id: 'f-add' }, 'Add rule')), error);
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    error.textContent = '';
    const effect = { type: c.effect.value };
    if (effect.type === 'status') Object.assign(effect, { status: num(c.status), retry_after: num(c.retry) });
    if (effect.type === 'latency') effect.ms = num(c.latency);
    const rule = { path: c.path.value.trim(), effect, probability: num(c.probability), times: num(c.times) };
    if (c.method.value !== 'any') rule.method = c.method.value;
    if (c.resource.value.trim()) rule.resource = c.resource.value.trim();
    try {
      const added = await send('POST', '/_fake/faults', JSON.parse(JSON.stringify(rule)));
      announce(`Fault rule ${added.id} added.`);
      onAdded();
    } catch (err) {
      error.textContent = `Not added: ${err.message}`;
    }
  });
  return form;
}

function ruleTable(rules, remove) {
  if (!rules.length) return empty('No fault rules: every request is answered normally.');
  const cols = [{ label: 'Rule' }, { label: 'Method' }, { label: 'Path' }, { label: 'Resource' }, { label: 'Effect' },
    { label: 'Probability', num: true }, { label: 'Times', num: true }, { label: 'Hits', num: true }, { label: 'Action' }];
  const rows = rules.map((r) => [`#${r.id}`, r.method || 'any', { content: r.path, mono: true },
    { content: r.resource || '–', mono: true }, effectText(r.effect), r.probability ?? 1, r.times ?? '∞',
    h('span', { class: 'hits', id: `hits-${r.id}` }, r.hits),
    h('button', { type: 'button', class: 'danger', id: `remove-${r.id}`, 'aria-label': `Remove rule ${r.id}`,
      on: { click: () => remove(r.id) } }, 'Remove')]);
  return table('fault-table', `${rows.length} fault rule(s)`, cols, rows, (i) => ({ dataset: { rule: rules[i].id } }));
}

export const faultsView = {
  mount(main, _params, ctx) {
    const region = h('div', { id: 'fault-region' });
    const remove = async (id) => {
      try {
        await send('DELETE', `/_fake/faults/${id}`);
        announce(`Fault rule ${id} removed.`);
        // The button that had the focus is gone: keep the focus in the section.
        document.getElementById('faults-h').focus();
      } catch (e) {
        announce(`Could not remove rule ${id}: ${e.message}`);
      }
      ctx.refreshSoon();
    };
    const clearAll = h('button', { type: 'button', class: 'danger', id: 'f-clear' }, 'Remove all rules');
    clearAll.addEventListener('click', async () => {
      await send('DELETE', '/_fake/faults').catch(() => null);
      announce('Every fault rule removed.');
      ctx.refreshSoon();
    });
    main.append(h('h1', {}, 'Fault rules'),
      h('p', { class: 'lead' }, 'Rules make matching /v1 requests fail, slow down or lose their connection. A request failed by a rule changes nothing.'),
      h('h2', { id: 'add-fault-h' }, 'Add a rule'), addForm(() => ctx.refreshSoon()),
      h('h2', { id: 'faults-h', tabindex: -1 }, 'Rules in force'), region, h('div', { class: 'actions' }, clearAll));
    return {
      title: 'Fault rules',
      async refresh(signal) {
        const [rules, clock] = await Promise.all([getJSON('/_fake/faults', signal), getJSON('/_fake/clock', signal)]);
        update(region, rules, () => ruleTable(rules, remove));
        return clock;
      },
    };
  },
};
