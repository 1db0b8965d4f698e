#!/usr/bin/env python3
"""Drives the fakecloud console (/_fake/ui/) in headless Chromium against a running testbed.

Starts `testbed` (fakecloud + embedded Kubernetes API server + simulated kubelets + the CCM),
creates a Deployment and a Service of type LoadBalancer in front of it with kubectl, then
changes the Service's pool algorithm, which the CCM applies as a listener recreation
(ccm/README.md, "Impact of Service changes": about 10 s without a listener).

The test asserts on the DOM: the load balancer appears in the account view with the
Service it serves, its members turn `up` in the diagram without a reload, a `no listener`
down interval of 10-15 virtual seconds appears on the timeline (SVG and table) where the
operation that caused it is marked, and each lane's label counts only that as downtime
while serving (provisioning is before serving), clear of the bars; the request filter is
sent to fakecloud (it searches the whole log), a fault rule is added and removed, the clock
advances, live updates pause (button, hidden tab), and the header shows every time as
24-hour UTC. The Service deleted, its load balancer's view still names the Service, shows
nothing going on and the same totals. Every action is taken with the keyboard, with a
visible focus; no view scrolls sideways at 1280 or 400 px. Screenshots of each view at
1280x800 and 400x800 go to target/console-screenshots/.

Nothing sleeps in the hope that something happened: every wait polls the DOM until a
condition holds or its deadline passes (the one fixed window is the check that a hidden tab
makes no requests).

    target/cli-venv/bin/python ci/console_browser.py [--testbed target/ci/testbed]
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from testbed_process import TestbedProcess  # noqa: E402

from selenium import webdriver
from selenium.common.exceptions import (NoSuchElementException, StaleElementReferenceException,
                                        TimeoutException, WebDriverException)
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import Select, WebDriverWait

# Three replicas behind the Service: the testbed's kube-proxy view answers a Service's node
# port only while it has ready endpoints (scenarios/README.md).
MANIFEST = """apiVersion: apps/v1
kind: Deployment
metadata:
  name: console-web
  namespace: default
spec:
  replicas: 3
  selector:
    matchLabels: {app: console-web}
  template:
    metadata:
      labels: {app: console-web}
    spec:
      containers:
      - name: web
        image: nginx:1.27
        ports:
        - containerPort: 8080
---
apiVersion: v1
kind: Service
metadata:
  name: console-web
  namespace: default
spec:
  type: LoadBalancer
  selector: {app: console-web}
  ports:
  - name: http
    port: 80
    targetPort: 8080
    protocol: TCP
"""
# The listener recreation of ccm/README.md: "about 10 s", at most 15 s.
RECREATE_MIN_S, RECREATE_MAX_S = 9.5, 15.0
WIDE, NARROW = (1280, 800), (400, 800)


class Failure(Exception):
    pass


def log(msg):
    print(f"[{time.monotonic() - STARTED:6.1f}s] {msg}", flush=True)


STARTED = time.monotonic()


# ---- the testbed ------------------------------------------------------------------------


class Testbed(TestbedProcess):
    """The testbed binary with 3 nodes, its console's address read from the banner."""

    def __init__(self, binary, kubeconfig, time_scale):
        self.kubeconfig = kubeconfig
        super().__init__([binary, "--nodes", "3", "--time-scale", str(time_scale), "--kubeconfig", kubeconfig],
                         error=Failure)
        found = (re.match(r"console: (\S+)", line) for line in self.banner)
        self.console = next((m.group(1) for m in found if m), None)
        if not self.console:
            raise Failure("the testbed's banner has no `console:` line")

    def kubectl(self, *args, stdin=None):
        r = subprocess.run(
            ["kubectl", "--kubeconfig", self.kubeconfig, *args],
            input=stdin, capture_output=True, text=True, timeout=60,
        )
        if r.returncode != 0:
            raise Failure(f"kubectl {' '.join(args)}: {r.stderr.strip()}")
        return r.stdout

    def virtual_now(self):
        """fakecloud's virtual now (RFC 3339, as the console's data attributes hold it)."""
        base = self.console.split("/_fake/")[0]
        with urllib.request.urlopen(f"{base}/_fake/clock", timeout=10) as r:
            return json.load(r)["now"]



# ---- the browser ------------------------------------------------------------------------


def browser(chromium, chromedriver):
    opts = webdriver.ChromeOptions()
    opts.binary_location = chromium
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"):
        opts.add_argument(flag)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(chromedriver), options=opts)
    driver.set_window_size(*WIDE)
    return driver


def wait(driver, what, condition, timeout=30):
    """Polls `condition(driver)` every 100 ms until it is truthy; fails naming `what`."""
    try:
        # Live updates replace parts of the page: an element gone stale is looked up again.
        return WebDriverWait(driver, timeout, poll_frequency=0.1,
                             ignored_exceptions=(StaleElementReferenceException, NoSuchElementException),
                             ).until(lambda d: condition(d))
    except TimeoutException:
        raise Failure(f"timed out after {timeout}s waiting for: {what}") from None


def js(driver, script, *args):
    return driver.execute_script(script, *args)


def count(driver, css):
    return js(driver, "return document.querySelectorAll(arguments[0]).length", css)


def tab_to(driver, css, limit=80):
    """Presses Tab from the top of the page until the element matching `css` has the focus
    (it is reachable by keyboard), and checks that the focus is visible. Live updates may
    redraw the element meanwhile (the console gives the focus back to its successor), so it
    is matched by selector, never held as an element."""
    js(driver, "document.activeElement && document.activeElement.blur(); window.scrollTo(0, 0)")
    for _ in range(limit):
        keys(driver, Keys.TAB)
        if js(driver, "return document.activeElement.matches(arguments[0])", css):
            outline = js(driver, "return getComputedStyle(document.activeElement).outlineStyle")
            if outline in ("none", ""):
                raise Failure(f"{css} has the focus but no visible focus outline")
            return
    raise Failure(f"{css} not reached with {limit} presses of Tab")


def keys(driver, *sequence):
    """Types into whatever has the focus, as a keyboard does."""
    ActionChains(driver).send_keys(*sequence).perform()


def press(driver, css, key=Keys.ENTER):
    tab_to(driver, css)
    keys(driver, key)


def shot(driver, out, name, size):
    path = os.path.join(out, f"{name}-{size[0]}x{size[1]}.png")
    driver.save_screenshot(path)
    log(f"screenshot {path}")


def no_horizontal_scroll(driver, view):
    sw, iw = js(driver, "return [document.documentElement.scrollWidth, window.innerWidth]")
    if sw > iw + 1:
        raise Failure(f"{view}: the page scrolls sideways at {iw} px (content {sw} px wide)")


# ---- the views ----------------------------------------------------------------------------


def account_view(driver, tb):
    driver.get(tb.console)
    wait(driver, "three servers in the account view", lambda d: count(d, "#server-table tbody tr") == 3)
    js(driver, "window.__notReloaded = true")
    headers = js(driver, "return [...document.querySelectorAll('#server-table thead th')].map(t => t.textContent)")
    if headers[:2] != ["Name", "Status"]:
        raise Failure(f"server table headers: {headers}")
    wait(driver, "every server running", lambda d: count(d, "#server-table tbody tr[data-status=running]") == 3)
    tb.kubectl("apply", "-f", "-", stdin=MANIFEST)
    log("Deployment and Service console-web created")
    uuid = wait(driver, "the load balancer in the account view", lambda d: js(
        d, "const r = document.querySelector('#lb-table tbody tr[data-lb]'); return r && r.dataset.lb"), 60)
    log(f"load balancer {uuid} listed")
    service = wait(driver, "the Service the load balancer serves, from the CCM's tags", lambda d: js(
        d, "const r = document.querySelector('#lb-table tbody tr[data-lb]'); return r && r.dataset.service"))
    if not service.startswith("default/console-web (cluster "):
        raise Failure(f"the account view names the load balancer's Service as {service!r}")
    return uuid


def lb_view(driver, tb, uuid, out):
    press(driver, f"#lb-link-{uuid}")
    wait(driver, "the load balancer view", lambda d: d.execute_script("return location.hash") == f"#/lb/{uuid}")
    wait(driver, "focus on the view's heading", lambda d: d.switch_to.active_element.get_attribute("id") == "lb-title")
    wait(driver, "three members up in the diagram", lambda d: count(d, "#diagram li.member[data-member-status=up]") == 3, 60)
    log("members up")
    for css in ("#entries li.card", "#listeners li.card", "#pools li.card"):
        if not count(driver, css):
            raise Failure(f"diagram without {css}")
    if count(driver, ".connectors path") < 3:
        raise Failure("diagram without connectors at 1280 px")
    service = driver.find_element(By.ID, "lb-service").text
    if not service.startswith("Service default/console-web"):
        raise Failure(f"the load balancer view says {service!r} of its Service")
    if not js(driver, "return window.__notReloaded === true"):
        raise Failure("the page reloaded")
    no_horizontal_scroll(driver, "load balancer")
    shot(driver, out, "lb-diagram", WIDE)
    since = tb.virtual_now()
    tb.kubectl("annotate", "--overwrite", "service", "console-web",
               "k8s.cloudscale.ch/loadbalancer-pool-algorithm=least_connections")
    log("pool algorithm changed: the listener is recreated")
    rows = wait(driver, "a finished `no listener` interval after the change on both VIP lanes", lambda d: js(d, """
        const rows = [...document.querySelectorAll('#down-table tbody tr[data-reason="no listener"]')]
          .filter(r => r.dataset.from >= arguments[0] && r.dataset.ongoing === 'false')
          .map(r => Number(r.dataset.duration));
        return rows.length >= 2 && rows;""", since), 60)
    for seconds in rows:
        if not RECREATE_MIN_S <= seconds <= RECREATE_MAX_S:
            raise Failure(f"listener recreation down for {seconds} s, documented 10-15 s")
    log(f"down intervals on the timeline: {rows} s")
    check_timeline(driver, since)
    serving = lane_totals(driver)
    for lane, seconds in serving.items():
        if not RECREATE_MIN_S <= seconds <= RECREATE_MAX_S:
            raise Failure(f"lane {lane} counts {seconds} s down while serving; only the 10-15 s listener recreation was")
    log(f"downtime while serving per lane: {serving}")
    js(driver, "document.getElementById('timeline').scrollIntoView()")
    shot(driver, out, "lb-timeline", WIDE)
    return serving


def lane_totals(driver):
    """Each lane's downtime while serving, as its label says, checked against the label's
    text; every label sits clear of the bars and operation lines."""
    labels = js(driver, """return [...document.querySelectorAll('#timeline-svg text.lane-label')].map(t => {
        const box = t.getBBox();
        const lane = t.dataset.lane;
        const bars = [...document.querySelectorAll('#timeline-svg rect.track')][Number(lane)].getBBox();
        return [lane, Number(t.dataset.serving), t.textContent, box.y + box.height, bars.y];
      })""")
    if not labels:
        raise Failure("no lane labels on the timeline")
    out = {}
    for lane, serving, text, bottom, bar_top in labels:
        if "down while serving" not in text or "first served" not in text:
            raise Failure(f"lane label {text!r} does not say its serving downtime and first service")
        if bottom > bar_top:
            raise Failure(f"lane label {text!r} reaches {bottom} px, over its bar at {bar_top} px")
        out[lane] = serving
    return out

def check_timeline(driver, since):
    """The SVG agrees with the table, marks the operation and tells reasons apart without hue."""
    shapes = js(driver, """return [...document.querySelectorAll('#timeline-svg g.down[data-reason="no listener"]')]
        .filter(g => g.dataset.from >= arguments[0] && g.dataset.ongoing === 'false')
        .map(g => [g.dataset.from, g.querySelector('rect').getAttribute('fill'), g.querySelector('title').textContent])""", since)
    if len(shapes) < 2:
        raise Failure(f"timeline drawing: {shapes}")
    for start, fill, title in shapes:
        if fill != "url(#pat-lstn)" or "no listener" not in title:
            raise Failure(f"down interval drawn as {fill!r} titled {title!r}")
        marker = js(driver, """const g = [...document.querySelectorAll('#timeline-svg g.op')]
            .find(g => g.dataset.at === arguments[0]); return g && g.querySelector('title').textContent""", start)
        if not marker or "delete listener" not in marker:
            raise Failure(f"no applied operation marked where the interval starts ({start})")
    legend = js(driver, """return [...document.querySelectorAll('.legend li')].map(li =>
        [li.dataset.reason, li.querySelector('.code').textContent])""")
    patterns = js(driver, """return [...document.querySelectorAll('.pattern-defs pattern')].map(p =>
        p.children[1] ? p.children[1].outerHTML.replace(/fill="[^"]*"|stroke="[^"]*"/g, '') : 'plain')""")
    if len(legend) != 8 or len({c for _, c in legend}) != 8 or len(set(patterns[:8])) != 8:
        raise Failure(f"the 8 down reasons need 8 codes and 8 patterns: {legend} {patterns}")


def requests_view(driver, out):
    press(driver, "nav a[data-view=requests]")
    wait(driver, "logged requests", lambda d: count(d, "#request-table tbody tr") > 0)
    Select(driver.find_element(By.ID, "rq-method")).select_by_value("POST")
    wait(driver, "only POST requests", lambda d: js(d, """const rows = [...document.querySelectorAll('#request-table tbody tr')];
        return rows.length > 0 && rows.every(r => r.dataset.method === 'POST')"""))
    tab_to(driver, "#rq-path")
    keys(driver, "listeners")
    wait(driver, "only POSTs of listeners", lambda d: js(d, """const rows = [...document.querySelectorAll('#request-table tbody tr')];
        return rows.length >= 2 && rows.every(r => r.dataset.method === 'POST' && r.textContent.includes('listeners'))"""))
    caption = driver.find_element(By.ID, "request-table-caption").text
    if not re.search(r"of \d+ matching request\(s\) shown.*the filter searched all \d+ kept", caption):
        raise Failure(f"the filtered table's caption does not say the whole log was searched: {caption!r}")
    asked = js(driver, """return performance.getEntriesByType('resource').map(e => e.name)
        .filter(n => n.includes('/_fake/console/requests?') && n.includes('path=listeners') && n.includes('method=POST'))""")
    if not asked:
        raise Failure("the filter was not sent to fakecloud (it must search the whole log, server side)")
    no_horizontal_scroll(driver, "requests")
    shot(driver, out, "requests", WIDE)


def faults_view(driver, out):
    press(driver, "nav a[data-view=faults]")
    tab_to(driver, "#f-path")
    ActionChains(driver).key_down(Keys.CONTROL).send_keys("a").key_up(Keys.CONTROL).perform()
    keys(driver, "/v1/console-test/**", Keys.ENTER)  # Enter submits the form
    rule = wait(driver, "the new rule listed with its hits", lambda d: js(d, """const r = document.querySelector('#fault-table tbody tr[data-rule]');
        return r && r.textContent.includes('/v1/console-test/**') && r.querySelector('.hits') && r.dataset.rule"""))
    hits = js(driver, "return document.getElementById(arguments[0]).textContent", f"hits-{rule}")
    if hits != "0":
        raise Failure(f"rule {rule} shows {hits} hits")
    no_horizontal_scroll(driver, "faults")
    js(driver, "document.getElementById('faults-h').scrollIntoView()")
    shot(driver, out, "faults", WIDE)
    press(driver, f"#remove-{rule}")
    wait(driver, "the rule removed", lambda d: count(d, "#fault-table tbody tr") == 0 and "No fault rules" in d.find_element(By.ID, "fault-region").text)


def clock_view(driver, out, scale):
    press(driver, "nav a[data-view=clock]")
    wait(driver, "the clock's mode", lambda d: f"scaled: {scale:g} " in d.find_element(By.ID, "clock-mode").text)
    press(driver, "#advance-1")
    wait(driver, "the advance announced", lambda d: "advanced by 1 s" in d.find_element(By.ID, "announce").get_attribute("textContent"))
    press(driver, "#live-toggle")
    wait(driver, "live updates paused", lambda d: d.find_element(By.ID, "live-toggle").get_attribute("aria-pressed") == "true"
         and d.find_element(By.ID, "live-status").text == "paused")
    keys(driver, Keys.ENTER)
    wait(driver, "live updates resumed", lambda d: d.find_element(By.ID, "live-status").text.startswith("live"))
    # One time format in the header: 24 h, UTC, for the virtual clock and the real one.
    status = driver.find_element(By.ID, "live-status").text
    summary = driver.find_element(By.ID, "clock-summary").text
    if not re.fullmatch(r"live · updated \d\d:\d\d:\d\d UTC real time", status):
        raise Failure(f"the live status shows another time format: {status!r}")
    if not re.match(r"virtual \d{4}-\d\d-\d\d \d\d:\d\d:\d\d(\.\d)? UTC", summary):
        raise Failure(f"the clock summary shows another time format: {summary!r}")
    hidden_tab_pauses(driver)
    no_horizontal_scroll(driver, "clock")
    shot(driver, out, "clock", WIDE)


def polls(driver, since):
    """Requests to fakecloud the page started after `since` (its `performance.now()`)."""
    return js(driver, """return performance.getEntriesByType('resource')
        .filter(e => e.name.includes('/_fake/') && e.startTime >= arguments[0]).length""", since)


def hidden_tab_pauses(driver):
    """A hidden tab makes no requests; shown again, it refreshes at once. Headless Chromium
    has no hidden tabs, so the page is told it is hidden as a browser would tell it."""
    set_hidden = """Object.defineProperty(document, 'hidden', {configurable: true, get: () => arguments[0]});
        document.dispatchEvent(new Event('visibilitychange'));"""
    js(driver, set_hidden, True)
    wait(driver, "the paused status", lambda d: "hidden" in d.find_element(By.ID, "live-status").text)
    js(driver, "performance.clearResourceTimings()")
    since = js(driver, "return performance.now()")
    # A negative check needs a window: three polling intervals.
    time.sleep(3)
    if polls(driver, since):
        raise Failure(f"{polls(driver, since)} requests while the tab was hidden")
    shown = js(driver, "return performance.now()")
    js(driver, set_hidden, False)
    wait(driver, "a refresh as soon as the tab shows", lambda d: polls(d, shown) > 0, 2)
    wait(driver, "live again", lambda d: d.find_element(By.ID, "live-status").text.startswith("live"))


def narrow(driver, uuid, out):
    driver.set_window_size(*NARROW)
    width = wait(driver, "a narrow window", lambda d: js(d, "return window.innerWidth <= 420 && window.innerWidth"))
    views = [("account", "#/account", "#lb-table tbody tr"), ("lb-diagram", f"#/lb/{uuid}", "#diagram li.member"),
             ("requests", "#/requests", "#request-table tbody tr"), ("faults", "#/faults", "#fault-form"),
             ("clock", "#/clock", "#clock-mode")]
    for name, hash_, ready in views:
        js(driver, "location.hash = arguments[0]", hash_)
        wait(driver, f"{name} at {width} px", lambda d: count(d, ready) > 0)
        no_horizontal_scroll(driver, name)
        if name == "lb-diagram":
            if js(driver, "return getComputedStyle(document.querySelector('.flow-arrow')).display") == "none":
                raise Failure("no flow arrows between the stacked diagram columns")
            shot(driver, out, name, NARROW)
            js(driver, "document.getElementById('timeline').scrollIntoView()")
            shot(driver, out, "lb-timeline", NARROW)
        else:
            shot(driver, out, name, NARROW)


def deleted_lb_view(driver, tb, uuid, serving, out):
    """The Service deleted: its load balancer's history keeps the Service's name, nothing
    goes on growing, and the totals while serving stay what they were."""
    driver.set_window_size(*WIDE)
    tb.kubectl("delete", "service", "console-web", "--wait=false")
    js(driver, "location.hash = '#/account'")
    wait(driver, "the load balancer among the deleted ones", lambda d: count(d, f"#deleted-lb-table #lb-link-{uuid}") == 1, 60)
    press(driver, f"#lb-link-{uuid}")
    wait(driver, "the deleted load balancer's view", lambda d: d.find_element(By.ID, "lb-status").text.strip().endswith("deleted"))
    service = driver.find_element(By.ID, "lb-service").text
    if not service.startswith("Service default/console-web"):
        raise Failure(f"the deleted load balancer's view says {service!r} of its Service")
    wait(driver, "the timeline of the deleted load balancer", lambda d: count(d, "#timeline-svg text.lane-label") > 0)
    before = tb.virtual_now()
    wait(driver, "virtual time passing after the deletion", lambda d: tb.virtual_now() > before, 10)
    js(driver, "document.getElementById('timeline').scrollIntoView()")
    if count(driver, "#down-table tbody tr[data-ongoing=true]"):
        raise Failure("a deleted load balancer shows an interval still going on")
    after = lane_totals(driver)
    if after != serving:
        raise Failure(f"downtime while serving changed after the deletion: {serving} then {after}")
    shot(driver, out, "lb-deleted", WIDE)


def browser_errors(driver):
    try:
        entries = driver.get_log("browser")
    except WebDriverException:
        return []
    return [e["message"] for e in entries if e.get("level") == "SEVERE"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--testbed", default="target/ci/testbed")
    ap.add_argument("--out", default="target/console-screenshots")
    ap.add_argument("--kubeconfig", default="target/console-browser/kubeconfig")
    ap.add_argument("--time-scale", type=float, default=20)
    ap.add_argument("--chromium", default=shutil.which("chromium") or "/usr/bin/chromium")
    ap.add_argument("--chromedriver", default=shutil.which("chromedriver") or "/usr/bin/chromedriver")
    args = ap.parse_args()
    if not shutil.which("kubectl"):
        sys.exit("kubectl is not on the PATH")
    os.makedirs(args.out, exist_ok=True)
    stale = os.path.join(args.out, "failure.png")
    if os.path.exists(stale):
        os.remove(stale)
    tb = None
    driver = None
    try:
        tb = Testbed(args.testbed, args.kubeconfig, args.time_scale)
        log(f"testbed ready, console at {tb.console}")
        driver = browser(args.chromium, args.chromedriver)
        shot_dir = args.out
        uuid = account_view(driver, tb)
        no_horizontal_scroll(driver, "account")
        shot(driver, shot_dir, "account", WIDE)
        serving = lb_view(driver, tb, uuid, shot_dir)
        requests_view(driver, shot_dir)
        faults_view(driver, shot_dir)
        clock_view(driver, shot_dir, args.time_scale)
        narrow(driver, uuid, shot_dir)
        deleted_lb_view(driver, tb, uuid, serving, shot_dir)
        errors = browser_errors(driver)
        if errors:
            raise Failure(f"errors in the browser console: {errors}")
    except (Failure, WebDriverException, OSError, subprocess.SubprocessError) as e:
        if driver:
            driver.save_screenshot(os.path.join(args.out, "failure.png"))
        if tb:
            sys.stderr.write("".join(tb.stderr)[-4000:])
        log(f"FAILED: {e}")
        return 1
    finally:
        if driver:
            driver.quit()
        if tb:
            tb.stop()
    log("console browser test passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
