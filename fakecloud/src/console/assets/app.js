// The console's shell: hash routing between views and the live-update loop.
//
// Live updates poll: every view has one `refresh` that fetches what it shows (one to three
// small GETs) once a second, never two at a time, and not at all while the tab is hidden
// or updates are paused (fakecloud/README.md, "Console", states what that costs).

import { fmtTime } from './dom.js';
import { accountView } from './account.js';
import { lbView } from './lb.js';
import { requestsView } from './requests.js';
import { faultsView } from './faults.js';
import { clockView } from './clock.js';

const INTERVAL_MS = 1000;

const routes = [
  { re: /^#\/account$/, view: accountView, nav: 'account' },
  { re: /^#\/lb\/([0-9a-f-]{36})$/, view: lbView, nav: 'account' },
  { re: /^#\/requests$/, view: requestsView, nav: 'requests' },
  { re: /^#\/faults$/, view: faultsView, nav: 'faults' },
  { re: /^#\/clock$/, view: clockView, nav: 'clock' },
];

const state = { handle: null, generation: 0, timer: null, abort: null, paused: false, hash: '', again: false };

function setStatus(text, error) {
  const el = document.getElementById('live-status');
  el.textContent = text;
  el.classList.toggle('error', Boolean(error));
}

/** The header's clock line, from `/_fake/clock` or a console endpoint's `clock`. */
function showClock(clock) {
  if (!clock) return;
  const m = clock.mode || {};
  const mode = m.manual ? 'manual clock' : m.simulated ? 'simulated clock' : `scaled ×${m.scale}`;
  document.getElementById('clock-summary').textContent = `virtual ${fmtTime(clock.now, true)} UTC · ${mode}`;
}

function schedule(delay) {
  clearTimeout(state.timer);
  state.timer = null;
  if (state.paused || document.hidden || !state.handle) return;
  state.timer = setTimeout(tick, delay);
}

async function tick() {
  state.timer = null;
  if (state.paused || document.hidden || !state.handle) return;
  const generation = state.generation;
  const abort = new AbortController();
  state.abort = abort;
  try {
    const clock = await state.handle.refresh(abort.signal);
    if (generation !== state.generation) return;
    showClock(clock);
    // In the format of every time on the page (24 h, UTC), marked as the real clock's.
    if (!state.paused && !document.hidden) setStatus(`live · updated ${fmtTime(new Date(Math.floor(Date.now() / 1000) * 1000).toISOString())} UTC real time`);
  } catch (e) {
    if (e.name === 'AbortError' || generation !== state.generation) return;
    setStatus(`cannot reach fakecloud (${e.message}); retrying`, true);
  } finally {
    if (state.abort === abort) state.abort = null;
  }
  if (generation === state.generation) schedule(state.again ? 0 : INTERVAL_MS);
  state.again = false;
}

/** Refreshes now (after an action), and goes on polling from there. */
function refreshSoon() {
  // A refresh in flight may have read the state before the action: one more right after.
  if (state.abort) state.again = true;
  else schedule(0);
}

function route() {
  let hash = location.hash || '#/account';
  if (!routes.some((r) => r.re.test(hash))) hash = '#/account';
  if (hash === state.hash && state.handle) return;
  state.hash = hash;
  state.generation += 1;
  if (state.abort) state.abort.abort();
  if (state.handle && state.handle.destroy) state.handle.destroy();
  const r = routes.find((x) => x.re.test(hash));
  const params = hash.match(r.re).slice(1);
  const main = document.getElementById('main');
  main.replaceChildren();
  state.handle = r.view.mount(main, params, { refreshSoon });
  document.title = `${state.handle.title || r.nav} · fakecloud console`;
  for (const a of document.querySelectorAll('nav a')) {
    if (a.dataset.view === r.nav) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  schedule(0);
}

function togglePause() {
  state.paused = !state.paused;
  const b = document.getElementById('live-toggle');
  b.setAttribute('aria-pressed', String(state.paused));
  b.textContent = state.paused ? 'Resume live updates' : 'Pause live updates';
  if (state.paused) setStatus('paused');
  schedule(0);
}

function start() {
  document.getElementById('live-toggle').addEventListener('click', togglePause);
  // The skip link must not change the hash the views are routed by.
  document.getElementById('skip-link').addEventListener('click', (e) => {
    e.preventDefault();
    document.getElementById('main').focus();
  });
  document.addEventListener('visibilitychange', () => {
    if (document.hidden) setStatus('paused while the tab is hidden');
    schedule(0);
  });
  window.addEventListener('hashchange', () => {
    route();
    const heading = document.querySelector('main h1');
    if (heading) {
      heading.setAttribute('tabindex', '-1');
      heading.focus();
    }
  });
  route();
}

start();
