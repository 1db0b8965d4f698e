#!/usr/bin/env python3
"""Acceptance test: drive cloudscale.ch's official Ansible modules (the
cloudscale_ch.cloud collection, as bundled by PyPI's `ansible` package) against
fakecloud, with the playbooks in ci/ansible/.

Usage:
    python3 ci/ansible_acceptance.py --fakecloud PATH/TO/fakecloud [--ansible PATH/TO/ansible-playbook]
    python3 ci/ansible_acceptance.py --base-url http://127.0.0.1:PORT --token TOKEN [--ansible ...]

With --fakecloud the binary is started on an ephemeral port with short delays
(the same flags as ci/cli_acceptance.py) and always stopped at the end.
--ansible defaults to the ansible-playbook next to the Python running this script
(run it with the venv's python, or name the venv's ansible-playbook).

Every playbook in ci/ansible/ (all *.yml but the inventory*.yml) runs once, all at the
same time (they use distinct names), with api_url and api_token as extra vars and
the JSON stdout callback. Checks, one line each, `ok - <what>` or
`FAIL - <what>: <detail>`, then `N passed, M failed`:
  - each `ansible.builtin.assert` task (its name, without the `check: ` prefix);
  - a task that failed and stopped its playbook (the play goes on past a failure
    only under `ignore_errors`, and an assert after such a task judges it);
  - each playbook ran to its end;
  - every module of the installed collection ran in some playbook;
  - the account is empty afterwards (every playbook deletes what it made).
Exit status 1 if any check failed, 2 on usage errors.
"""

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# The fakecloud start-up and stop, and the report lines, are cli_acceptance.py's (same
# flags, same token).
from cli_acceptance import FAKECLOUD_TOKEN, FakecloudProcess, Report, one_line  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
PLAYBOOK_DIR = os.path.join(HERE, "ansible")
INVENTORY = os.path.join(PLAYBOOK_DIR, "inventory.yml")
COLLECTION = "cloudscale_ch.cloud"
PLAYBOOK_TIMEOUT = 300  # seconds per playbook; a whole run takes about 100 s on 2 cores
ASSERT_ACTIONS = ("ansible.builtin.assert", "assert", "ansible.legacy.assert")
# What the playbooks create, by API collection; all of it must be gone at the end.
COLLECTIONS = (
    "servers", "server-groups", "volumes", "volume-snapshots", "networks", "subnets",
    "floating-ips", "objects-users", "custom-images", "load-balancers",
    "load-balancers/pools", "load-balancers/listeners", "load-balancers/health-monitors",
)


def ansible_env(home):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("ANSIBLE_") and not k.startswith("CLOUDSCALE_")}
    env.update({
        "ANSIBLE_STDOUT_CALLBACK": "ansible.posix.json",
        "ANSIBLE_NOCOLOR": "1",
        "ANSIBLE_RETRY_FILES_ENABLED": "0",
        # One host, local connection: pipelining spares each module a temporary file.
        "ANSIBLE_PIPELINING": "1",
        "ANSIBLE_FORKS": "2",
        # Nothing from the user's ~/.ansible (collections, config) and no files left there.
        "ANSIBLE_HOME": home,
        "ANSIBLE_LOCAL_TEMP": os.path.join(home, "tmp"),
        "ANSIBLE_CONFIG": os.path.join(home, "ansible.cfg"),
        "ANSIBLE_DEPRECATION_WARNINGS": "0",
    })
    return env


def playbooks():
    return sorted(
        os.path.join(PLAYBOOK_DIR, f) for f in os.listdir(PLAYBOOK_DIR)
        if f.endswith(".yml") and not f.startswith("inventory")
    )


def collection_modules(ansible_playbook, env):
    """The modules of the installed collection, from ansible-doc next to ansible-playbook."""
    doc = os.path.join(os.path.dirname(ansible_playbook), "ansible-doc")
    res = subprocess.run([doc, "-t", "module", "-l", "-j", COLLECTION], env=env,
                         capture_output=True, text=True, timeout=120)
    if res.returncode != 0:
        raise RuntimeError(f"ansible-doc exited {res.returncode}: {res.stderr.strip()[:300]}")
    return sorted(json.loads(res.stdout))


def judge_playbook(report, name, rc, out, err, actions_run):
    """Turns one playbook's JSON result into checks; records the actions it ran."""
    try:
        data = json.loads(out[out.index("{"):]) if "{" in out else None
    except ValueError as e:
        data = None
        err = f"{e}; {err}"
    if not isinstance(data, dict):
        report.fail(f"{name}: ran to the end", f"exit {rc}, no JSON result; stderr: {err.strip()[-600:]}")
        return
    tasks = [t for play in data.get("plays", []) for t in play.get("tasks", [])]
    for i, task in enumerate(tasks):
        task_name = task.get("task", {}).get("name", "?")
        for result in task.get("hosts", {}).values():
            action = result.get("action", "")
            actions_run.add(action)
            what = f"{name}: {task_name.removeprefix('check: ')}"
            if action in ASSERT_ACTIONS:
                report.check(what, not result.get("failed"),
                             result.get("msg") or result.get("assertion") or "assertion failed")
            elif result.get("failed") and i == len(tasks) - 1:
                report.fail(f"{name}: task '{task_name}'", result.get("msg") or json.dumps(result)[:600])
    stats = data.get("stats", {}).get("localhost", {})
    report.check(f"{name}: ran to the end ({len(tasks)} tasks)",
                 rc == 0 and stats.get("failures") == 0 and stats.get("unreachable") == 0,
                 f"exit {rc}, stats {stats}; stderr: {err.strip()[-300:]}")


def http_get(url, token):
    req = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"})
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, json.loads(resp.read().decode() or "null")
    except urllib.error.HTTPError as e:
        return e.code, None
    except (urllib.error.URLError, OSError, ValueError) as e:
        return 0, str(e)


def run(report, ansible_playbook, api_url, token):
    home = tempfile.mkdtemp(prefix="ansible-acceptance-")
    try:
        env = ansible_env(home)
        books = playbooks()
        report.check(f"playbooks found in {PLAYBOOK_DIR}", books, "none")
        extra = json.dumps({"api_url": api_url, "api_token": token})
        procs = {}
        for book in books:
            procs[book] = subprocess.Popen(
                [ansible_playbook, "-i", INVENTORY, "-e", extra, book],
                cwd=PLAYBOOK_DIR, env=env, stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            )
        try:
            modules = collection_modules(ansible_playbook, env)
        except (RuntimeError, ValueError, OSError, subprocess.TimeoutExpired) as e:
            modules = None
            report.fail(f"list the modules of {COLLECTION}", str(e))
        actions_run = set()
        for book, proc in procs.items():
            name = os.path.basename(book)
            try:
                out, err = proc.communicate(timeout=PLAYBOOK_TIMEOUT)
            except subprocess.TimeoutExpired:
                proc.kill()
                out, err = proc.communicate()
                err = f"timed out after {PLAYBOOK_TIMEOUT}s; {err}"
            judge_playbook(report, name, proc.returncode, out, err, actions_run)
        if modules is not None:
            report.check(f"{COLLECTION} has modules ({len(modules)})", modules, "ansible-doc listed none")
            for module in modules:
                report.check(f"module {module} ran in a playbook", module in actions_run,
                             "no playbook task uses it")
        for coll in COLLECTIONS:
            status, data = http_get(f"{api_url}/{coll}", token)
            report.check(f"the playbooks left no {coll}", status == 200 and data == [],
                         f"status {status}, {one_line(data, 300)}")
    finally:
        shutil.rmtree(home, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ansible", help="path to ansible-playbook (default: next to this Python)")
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--fakecloud", help="path to the fakecloud binary to start")
    src.add_argument("--base-url", help="base URL of a running, empty fakecloud (no /v1)")
    ap.add_argument("--token", help="API token for --base-url")
    args = ap.parse_args()
    if args.base_url and not args.token:
        ap.error("--base-url needs --token")
    ansible_playbook = args.ansible or os.path.join(os.path.dirname(sys.executable), "ansible-playbook")
    ansible_playbook = os.path.abspath(shutil.which(ansible_playbook) or ansible_playbook)
    if not os.access(ansible_playbook, os.X_OK):
        print(f"error: ansible-playbook not executable: {ansible_playbook}", file=sys.stderr)
        return 2

    def on_signal(signum, _frame):
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGHUP, on_signal)

    report = Report()
    fake = None
    started = time.monotonic()
    try:
        if args.fakecloud:
            fake = FakecloudProcess(os.path.abspath(args.fakecloud))
            try:
                base = fake.start()
            except Exception as e:
                report.fail("start fakecloud", str(e))
                base = None
            token = FAKECLOUD_TOKEN
        else:
            base, token = args.base_url, args.token
        if base:
            base = base.rstrip("/").removesuffix("/v1")
            print(f"# fakecloud at {base}, {ansible_playbook}", flush=True)
            run(report, ansible_playbook, base + "/v1", token)
            if fake and fake.proc.poll() is not None:
                report.fail("fakecloud still running at the end",
                            f"exited with {fake.proc.returncode}; stderr: {fake.stderr_tail(500)}")
    except KeyboardInterrupt:
        report.fail("run", "interrupted")
    finally:
        if fake:
            fake.stop()
    print(f"# took {time.monotonic() - started:.1f}s", flush=True)
    print(f"{report.passed} passed, {report.failed} failed", flush=True)
    return 1 if report.failed else 0


if __name__ == "__main__":
    sys.exit(main())
