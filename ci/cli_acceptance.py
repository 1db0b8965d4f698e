#!/usr/bin/env python3
"""Acceptance test: drive the official cloudscale.ch Python CLI (cloudscale-cli
1.5.0) against fakecloud, then exercise the load-balancer API with raw HTTP.

Usage:
    python3 ci/cli_acceptance.py --cli PATH/TO/cloudscale --fakecloud PATH/TO/fakecloud
    python3 ci/cli_acceptance.py --cli PATH/TO/cloudscale --base-url http://127.0.0.1:PORT --token TOKEN

With --fakecloud the binary is started on an ephemeral port
(--listen 127.0.0.1:0 --token acceptance-token --server-delay 0
--lb-provision-delay 1 --lb-reconfigure-delay 0.2 --floating-ip-delay 0.2)
and always stopped at the end.

Prints one line per check, `ok - <what>` or `FAIL - <what>: <detail>`, and at
the end `N passed, M failed`. Exit status 1 if any check failed (including a
failed fakecloud start-up), 2 on usage errors.

Standard library only (Python 3.11); the CLI is run as a subprocess.
What is checked: the behaviour fakecloud/README.md and fakecloud/MODEL.md document
(servers, networks, floating IPs, load balancers, volumes, volume snapshots,
objects users, custom images).
"""

import argparse
import ipaddress
import json
import os
import queue
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
import uuid as uuidlib

FAKECLOUD_TOKEN = "acceptance-token"
ANSI_RE = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")
TS_RE = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$")
HEX64_RE = re.compile(r"^[0-9a-f]{64}$")
HEX32_RE = re.compile(r"^[0-9a-f]{32}$")
ACCESS_KEY_RE = re.compile(r"^[A-Z0-9]{20}$")
SECRET_KEY_RE = re.compile(r"^[A-Za-z0-9+/]{40}$")
UUID_RE = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
LISTEN_RE = re.compile(r"^fakecloud listening on (http://\S+?)/?\s*$")
CLI_TIMEOUT = 180  # seconds per CLI invocation (--wait may poll ~2 min)


class Abort(Exception):
    """Stops the current section after a failed prerequisite check."""


def one_line(value, limit=400):
    text = value if isinstance(value, str) else repr(value)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def strip_ansi(text):
    return ANSI_RE.sub("", text)


def is_flat_error(data):
    return isinstance(data, dict) and bool(data) and all(isinstance(v, str) for v in data.values())


def uuid_of(obj):
    return obj.get("uuid") if isinstance(obj, dict) else None


# --------------------------------------------------------------------------
# fakecloud process handling
# --------------------------------------------------------------------------


class FakecloudProcess:
    def __init__(self, binary):
        self.binary = binary
        self.proc = None
        self.errfile = None
        self.base_url = None

    def start(self, timeout=60):
        self.errfile = tempfile.TemporaryFile(mode="w+")
        cmd = [
            self.binary,
            "--listen", "127.0.0.1:0",
            "--token", FAKECLOUD_TOKEN,
            "--server-delay", "0",
            "--lb-provision-delay", "1",
            "--lb-reconfigure-delay", "0.2",
            "--floating-ip-delay", "0.2",
        ]
        self.proc = subprocess.Popen(
            cmd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=self.errfile,
            text=True,
            start_new_session=True,
        )
        lines = queue.Queue()

        def pump():
            first = True
            for line in self.proc.stdout:
                if first:
                    lines.put(line)
                    first = False
                # keep draining so the child never blocks on a full pipe
            if first:
                lines.put(None)

        threading.Thread(target=pump, daemon=True).start()
        try:
            line = lines.get(timeout=timeout)
        except queue.Empty:
            raise RuntimeError(f"fakecloud printed nothing within {timeout}s")
        if line is None:
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
            raise RuntimeError(
                f"fakecloud exited (rc={self.proc.poll()}) before printing its address; "
                f"stderr: {one_line(self.stderr_tail())}"
            )
        match = LISTEN_RE.match(line.strip())
        if not match:
            raise RuntimeError(f"unexpected first stdout line from fakecloud: {line.strip()!r}")
        self.base_url = match.group(1)
        return self.base_url

    def stderr_tail(self, limit=2000):
        if not self.errfile:
            return ""
        try:
            self.errfile.flush()
            self.errfile.seek(0)
            return self.errfile.read()[-limit:]
        except Exception:
            return ""

    def stop(self):
        if not self.proc or self.proc.poll() is not None:
            return
        try:
            self.proc.terminate()
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)
        except Exception:
            pass


# --------------------------------------------------------------------------
# the acceptance run
# --------------------------------------------------------------------------


class Report:
    """The `ok - ...` / `FAIL - ...` lines and their counts (ci/ansible_acceptance.py uses it
    too)."""

    def __init__(self):
        self.passed = 0
        self.failed = 0

    def ok(self, what):
        self.passed += 1
        print(f"ok - {what}", flush=True)

    def fail(self, what, detail):
        self.failed += 1
        print(f"FAIL - {what}: {one_line(detail)}", flush=True)

    def check(self, what, cond, detail=""):
        if cond:
            self.ok(what)
        else:
            self.fail(what, detail or "condition not met")
        return bool(cond)


class Acceptance(Report):
    def __init__(self, cli, base_url, token, managed):
        super().__init__()
        self.cli_path = cli
        self.base = base_url.rstrip("/")
        self.api = self.base + "/v1"
        self.token = token
        self.managed = managed  # True when we started fakecloud ourselves
        self.rid = uuidlib.uuid4().hex[:8]
        self.workdir = tempfile.mkdtemp(prefix="cli-acceptance-")
        self.env = self._cli_env()
        self.cleanup = []  # absolute hrefs to DELETE at the end (best effort)
        # shared state between sections
        self.sg = None
        self.server = None
        self.volume = None
        self.root_volume = None
        self.net_auto = None
        self.net_a = None
        self.net_b = None
        self.subnet_a = None
        self.subnet_b = None

    # ---- reporting (and Report's ok, fail, check) ---------------------------

    def require(self, what, cond, detail=""):
        if not self.check(what, cond, detail):
            raise Abort(what)

    def eq(self, what, actual, expected):
        return self.check(what, actual == expected, f"got {actual!r}, expected {expected!r}")

    def stub(self, what, actual, expected):
        """Reference stubs: the expected keys must be present with equal values;
        extra keys are allowed (clients ignore them)."""
        ok = isinstance(actual, dict) and all(actual.get(k, object()) == v for k, v in expected.items())
        return self.check(what, ok, f"got {actual!r}, expected at least {expected!r}")

    # ---- CLI -------------------------------------------------------------

    def _cli_env(self):
        env = {k: v for k, v in os.environ.items() if not k.startswith("CLOUDSCALE_")}
        env["CLOUDSCALE_API_URL"] = self.api
        env["CLOUDSCALE_API_TOKEN"] = self.token
        # keep any user cloudscale.ini out of the way
        env["XDG_CONFIG_HOME"] = self.workdir
        env["HOME"] = self.workdir
        env["CLOUDSCALE_CONFIG"] = "cli-acceptance-nonexistent.ini"
        return env

    def cli(self, *args, json_output=True):
        argv = [self.cli_path] + (["-o", "json"] if json_output else []) + list(args)
        try:
            res = subprocess.run(
                argv, cwd=self.workdir, env=self.env, stdin=subprocess.DEVNULL,
                capture_output=True, text=True, timeout=CLI_TIMEOUT,
            )
        except subprocess.TimeoutExpired:
            return 124, "", f"timed out after {CLI_TIMEOUT}s"
        return res.returncode, strip_ansi(res.stdout), strip_ansi(res.stderr)

    @staticmethod
    def _cmd(args):
        return "cloudscale " + " ".join(args)

    def cli_json(self, what, *args, allow_trailer=False):
        """Run a CLI command that must succeed and print JSON; one check.
        Raises Abort on failure. With allow_trailer the JSON may be followed by
        plain text lines (delete prints '<id> deleted!'); returns (data, trailer)."""
        rc, out, err = self.cli(*args)
        if rc != 0:
            self.fail(what, f"`{self._cmd(args)}` exited {rc}; stderr: {err.strip()} stdout: {out.strip()}")
            raise Abort(what)
        text = out.strip()
        trailer = ""
        try:
            if allow_trailer:
                data, end = json.JSONDecoder().raw_decode(text)
                trailer = text[end:].strip()
            else:
                data = json.loads(text)
        except ValueError as e:
            self.fail(what, f"`{self._cmd(args)}` printed no valid JSON ({e}): {text[:300]!r}")
            raise Abort(what)
        self.ok(what)
        return (data, trailer) if allow_trailer else data

    def cli_list(self, what, *args):
        """`<res> list ...`: returns a list; empty stdout means an empty list."""
        rc, out, err = self.cli(*args)
        if rc != 0:
            self.fail(what, f"`{self._cmd(args)}` exited {rc}; stderr: {err.strip()}")
            raise Abort(what)
        text = out.strip()
        if not text:
            self.ok(what)
            return []
        try:
            data = json.loads(text)
        except ValueError as e:
            self.fail(what, f"invalid JSON ({e}): {text[:300]!r}")
            raise Abort(what)
        if not isinstance(data, list):
            self.fail(what, f"expected a JSON array, got {type(data).__name__}")
            raise Abort(what)
        self.ok(what)
        return data

    def cli_fails(self, what, args, must_contain):
        rc, out, err = self.cli(*args)
        msg = (err + out).strip()
        self.check(
            what,
            rc != 0 and must_contain in msg,
            f"`{self._cmd(args)}` exited {rc}, output {msg[:300]!r} (expected non-zero exit and {must_contain!r})",
        )

    def cli_delete(self, what, res, ident, expected_id=None):
        data, trailer = self.cli_json(what, res, "delete", ident, "--force", allow_trailer=True)
        expected_id = expected_id or ident
        self.check(f"{what} prints '{expected_id} deleted!'", f"{expected_id} deleted!" in trailer,
                   f"trailer was {trailer!r}")
        return data

    # ---- raw HTTP ----------------------------------------------------------

    def http(self, method, path, body=None, token="default", timeout=30):
        """Returns (status, parsed JSON or None, raw text). `path` is relative
        to /v1 or an absolute URL."""
        url = path if path.startswith("http") else self.api + path
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(url, data=data, method=method)
        req.add_header("Content-Type", "application/json")
        tok = self.token if token == "default" else token
        if tok:
            req.add_header("Authorization", f"Bearer {tok}")
        try:
            with urllib.request.urlopen(req, timeout=timeout) as resp:
                status, raw = resp.status, resp.read().decode("utf-8", "replace")
        except urllib.error.HTTPError as e:
            status, raw = e.code, e.read().decode("utf-8", "replace")
        except (urllib.error.URLError, OSError) as e:  # connection reset, refused, timeout
            return 0, None, f"{method} {url}: {type(e).__name__}: {e}"
        try:
            parsed = json.loads(raw) if raw.strip() else None
        except ValueError:
            parsed = None
        return status, parsed, raw

    def http_create(self, what, path, body):
        status, data, raw = self.http("POST", path, body)
        self.require(f"{what}: POST {path} -> 201 with an object", status == 201 and isinstance(data, dict),
                     f"status {status}, body {raw[:300]!r}")
        if data.get("href"):
            self.cleanup.append(data["href"])
        return data

    def http_get(self, what, url):
        status, data, raw = self.http("GET", url)
        self.require(what, status == 200 and data is not None, f"status {status}, body {raw[:300]!r}")
        return data

    def http_patch(self, what, url, body):
        status, _, raw = self.http("PATCH", url, body)
        self.check(what, status in (200, 204), f"status {status}, body {raw[:300]!r}")

    def expect_400(self, what, path, body, must_contain):
        status, data, raw = self.http("POST", path, body)
        if status == 201 and isinstance(data, dict) and data.get("href"):
            self.cleanup.append(data["href"])
        self.check(
            what,
            status == 400 and is_flat_error(data) and must_contain in raw,
            f"status {status}, body {raw[:300]!r} (expected 400, flat string values, containing {must_contain!r})",
        )

    # ---- common field checks ----------------------------------------------

    def check_common(self, kind, obj, collection, ident=None):
        ident = ident or obj.get("uuid")
        if ident is not None and kind not in ("floating IP",):
            self.check(f"{kind} uuid is a lower-case UUID", bool(UUID_RE.match(str(ident))), f"uuid {ident!r}")
        self.eq(f"{kind} href is {self.api}/{collection}/<id>", obj.get("href"), f"{self.api}/{collection}/{ident}")
        self.check(f"{kind} created_at is RFC 3339 with microseconds and Z",
                   isinstance(obj.get("created_at"), str) and TS_RE.match(obj["created_at"]),
                   f"created_at {obj.get('created_at')!r}")

    def list_ids(self, items, key="uuid"):
        return [i.get(key) for i in items if isinstance(i, dict)]

    def wait_server_status(self, uuid, target, timeout=120):
        deadline = time.monotonic() + timeout
        status = None
        while time.monotonic() < deadline:
            code, data, _ = self.http("GET", f"/servers/{uuid}")
            status = data.get("status") if code == 200 and isinstance(data, dict) else f"HTTP {code}"
            if status == target:
                return status
            time.sleep(0.25)
        return status

    # ======================================================================
    # sections
    # ======================================================================

    def section_transport(self):
        status, data, raw = self.http("GET", "/servers", token=None)
        self.check("GET /v1/servers without token -> 401 with string detail",
                   status == 401 and is_flat_error(data) and isinstance(data.get("detail"), str),
                   f"status {status}, body {raw[:200]!r}")
        status, data, raw = self.http("GET", f"/servers/{uuidlib.uuid4()}")
        self.check("GET /v1/servers/<unknown uuid> -> 404 {\"detail\": \"Not found.\"}",
                   status == 404 and data == {"detail": "Not found."}, f"status {status}, body {raw[:200]!r}")
        rc, out, err = self.cli("-a", "wrong-token-" + self.rid, "server", "list")
        self.check("CLI with a wrong token exits non-zero with 'API Response Error (401)'",
                   rc != 0 and "API Response Error (401)" in err, f"rc {rc}, stderr {err.strip()!r}")

    def section_catalogue(self):
        regions = self.cli_list("region list", "region", "list")
        slugs = {r.get("slug") for r in regions}
        self.check("region list contains rma and lpg", {"rma", "lpg"} <= slugs, f"regions {sorted(map(str, slugs))}")
        flavors = self.cli_list("flavor list", "flavor", "list")
        self.check("flavor list contains flex-4-2", "flex-4-2" in {f.get("slug") for f in flavors},
                   f"{len(flavors)} flavors")
        images = self.cli_list("image list", "image", "list")
        self.check("image list contains debian-12", "debian-12" in {i.get("slug") for i in images},
                   f"{len(images)} images")

    def section_server_group(self):
        name = f"acc-sg-{self.rid}"
        sg = self.cli_json("server-group create", "server-group", "create", "--name", name,
                           "--tag", f"run={self.rid}")
        self.require("server-group create returns an object with a uuid", isinstance(sg, dict) and uuid_of(sg),
                     f"got {sg!r}")
        self.cleanup.append(sg.get("href") or f"{self.api}/server-groups/{sg['uuid']}")
        self.eq("server-group create: name", sg.get("name"), name)
        self.eq("server-group create: type defaults to anti-affinity", sg.get("type"), "anti-affinity")
        self.eq("server-group create: tags", sg.get("tags"), {"run": self.rid})
        self.eq("server-group create: servers is []", sg.get("servers"), [])
        self.check("server-group create: zone present (project default)",
                   isinstance(sg.get("zone"), dict) and sg["zone"].get("slug"), f"zone {sg.get('zone')!r}")
        self.check_common("server group", sg, "server-groups")
        self.sg = sg

        lst = self.cli_list("server-group list", "server-group", "list")
        self.check("server-group list contains the new group", sg["uuid"] in self.list_ids(lst), "not listed")
        shown = self.cli_json("server-group show <uuid>", "server-group", "show", sg["uuid"])
        self.check("server-group show <uuid> returns the same group",
                   isinstance(shown, dict) and shown.get("uuid") == sg["uuid"] and shown.get("name") == name,
                   f"got {one_line(shown, 200)}")
        shown = self.cli_json("server-group show <name>", "server-group", "show", name)
        self.check("server-group show <name> finds exactly the group by name",
                   isinstance(shown, list) and self.list_ids(shown) == [sg["uuid"]], f"got {one_line(shown, 200)}")
        new_name = name + "-renamed"
        upd = self.cli_json("server-group update --name --tag", "server-group", "update", sg["uuid"],
                            "--name", new_name, "--tag", "extra=1")
        self.eq("server-group update: name changed", upd.get("name"), new_name)
        self.eq("server-group update: tag added, old tag kept", upd.get("tags"), {"run": self.rid, "extra": "1"})
        upd = self.cli_json("server-group update --clear-tag", "server-group", "update", new_name,
                            "--clear-tag", "extra")
        self.eq("server-group update by name --clear-tag: tag removed", upd.get("tags"), {"run": self.rid})
        self.sg = upd

    def section_server(self):
        name = f"acc-srv-{self.rid}"
        args = ["server", "create", "--name", name, "--flavor", "flex-4-2", "--image", "debian-12",
                "--zone", "rma1", "--tag", f"run={self.rid}", "--tag", "role=web"]
        if self.sg:
            args += ["--server-group", self.sg["uuid"]]
        created = self.cli_json("server create", *args)
        self.require("server create prints a list with one server",
                     isinstance(created, list) and len(created) == 1 and uuid_of(created[0]),
                     f"got {one_line(created, 300)}")
        srv = created[0]
        sid = srv["uuid"]
        self.cleanup.append(srv.get("href") or f"{self.api}/servers/{sid}")
        self.eq("server create: name", srv.get("name"), name)
        self.eq("server create: flavor.slug", (srv.get("flavor") or {}).get("slug"), "flex-4-2")
        self.eq("server create: image.slug", (srv.get("image") or {}).get("slug"), "debian-12")
        self.eq("server create: zone.slug", (srv.get("zone") or {}).get("slug"), "rma1")
        self.eq("server create: tags", srv.get("tags"), {"run": self.rid, "role": "web"})
        self.check("server create: status is changing or running", srv.get("status") in ("changing", "running"),
                   f"status {srv.get('status')!r}")
        self.check_common("server", srv, "servers")
        ifaces = srv.get("interfaces") or []
        first = ifaces[0] if ifaces and isinstance(ifaces[0], dict) else {}
        addrs = first.get("addresses") or []
        self.eq("server create: interfaces[0].type is public", first.get("type"), "public")
        self.check("server create: interfaces[0].addresses[0] is IPv4",
                   bool(addrs) and addrs[0].get("version") == 4 and ipaddress.ip_address(addrs[0].get("address", "0.0.0.0")).version == 4,
                   f"addresses {one_line(addrs, 200)}")
        self.check("server create: public interface also has an IPv6 address",
                   any(a.get("version") == 6 for a in addrs), f"addresses {one_line(addrs, 200)}")
        self.check("server create: root volume present", bool(srv.get("volumes")), f"volumes {srv.get('volumes')!r}")
        if self.sg:
            self.check("server create: server_groups contains the group",
                       self.sg["uuid"] in self.list_ids(srv.get("server_groups") or []),
                       f"server_groups {srv.get('server_groups')!r}")
        self.server = srv

        st = self.wait_server_status(sid, "running")
        self.eq("server reaches running", st, "running")

        lst = self.cli_list("server list", "server", "list")
        self.check("server list contains the server", sid in self.list_ids(lst), "not listed")
        shown = self.cli_json("server show <uuid>", "server", "show", sid)
        self.check("server show <uuid>: uuid, name, status running",
                   isinstance(shown, dict) and shown.get("uuid") == sid and shown.get("name") == name
                   and shown.get("status") == "running", f"got {one_line(shown, 200)}")
        self.server = shown if isinstance(shown, dict) else srv
        shown = self.cli_json("server show <name>", "server", "show", name)
        self.check("server show <name> finds the server by name",
                   isinstance(shown, list) and self.list_ids(shown) == [sid], f"got {one_line(shown, 200)}")

        # tag filters (three spellings handled by the CLI: K=V, K)
        lst = self.cli_list("server list --filter-tag run=<rid>", "server", "list", "--filter-tag", f"run={self.rid}")
        self.eq("server list --filter-tag run=<rid> returns exactly the server", self.list_ids(lst), [sid])
        lst = self.cli_list("server list --filter-tag role (key only)", "server", "list", "--filter-tag", "role")
        self.check("server list --filter-tag role contains the server", sid in self.list_ids(lst),
                   f"got {self.list_ids(lst)}")
        rc, out, err = self.cli("server", "list", "--filter-tag", f"run={self.rid}-nope")
        self.check("server list with a non-matching tag filter prints nothing",
                   rc == 0 and out.strip() == "", f"rc {rc}, stdout {out.strip()[:200]!r}, stderr {err.strip()[:200]!r}")

        if self.sg:
            g = self.cli_json("server-group show (with member server)", "server-group", "show", self.sg["uuid"])
            self.check("server-group servers lists the server", sid in self.list_ids(g.get("servers") or []),
                       f"servers {g.get('servers')!r}")

        # update name + tags in one call
        new_name = name + "-renamed"
        upd = self.cli_json("server update --name --tag --clear-tag", "server", "update", sid, "--name", new_name,
                            "--tag", "role=db", "--clear-tag", "run")
        self.eq("server update: name changed", upd.get("name"), new_name)
        self.eq("server update: tags replaced (role overridden, run cleared)", upd.get("tags"), {"role": "db"})
        shown = self.cli_json("server show <new name>", "server", "show", new_name)
        self.check("server show <new name> finds the renamed server",
                   isinstance(shown, list) and self.list_ids(shown) == [sid], f"got {one_line(shown, 200)}")
        upd = self.cli_json("server update --tag (by name)", "server", "update", new_name, "--tag", f"run={self.rid}")
        self.eq("server update by name: tag added", upd.get("tags"), {"role": "db", "run": self.rid})

        # actions
        for action, target in (("stop", "stopped"), ("start", "running"), ("reboot", "running")):
            res = self.cli_json(f"server {action} --wait", "server", action, sid, "--wait")
            self.check(f"server {action} prints the server", isinstance(res, dict) and res.get("uuid") == sid,
                       f"got {one_line(res, 200)}")
            st = res.get("status") if isinstance(res, dict) else None
            if st != target:
                st = self.wait_server_status(sid, target, timeout=60)
            self.eq(f"server {action}: status becomes {target}", st, target)
            if action == "stop":
                # scaling a stopped server (reference check 26)
                res = self.cli_json("server update --flavor flex-4-4 (stopped)", "server", "update", sid,
                                    "--flavor", "flex-4-4", "--wait")
                self.eq("server update --flavor: flavor.slug flex-4-4", (res.get("flavor") or {}).get("slug"),
                        "flex-4-4")
                st = res.get("status")
                if st != "stopped":
                    st = self.wait_server_status(sid, "stopped", timeout=60)
                self.eq("server update --flavor: server stays stopped", st, "stopped")

        # name + flavor in one PATCH is rejected by the real API (reference check 25)
        rc, out, err = self.cli("server", "update", sid, "--name", "x-" + self.rid, "--flavor", "flex-4-1")
        self.check("server update --name --flavor together fails with 'API Response Error (400)' 'Only one attribute'",
                   rc != 0 and "API Response Error (400)" in err and "Only one attribute" in err,
                   f"rc {rc}, stderr {err.strip()[:200]!r}, stdout {out.strip()[:100]!r}")
        srv = self.http_get("GET server after rejected update", f"/servers/{sid}")
        self.check("rejected update changed nothing (name, flavor)",
                   srv.get("name") == new_name and (srv.get("flavor") or {}).get("slug") == "flex-4-4",
                   f"name {srv.get('name')!r}, flavor {srv.get('flavor')!r}")

    def section_networks(self):
        # network with auto-created subnet and all defaults
        name = f"acc-net-{self.rid}"
        net = self.cli_json("network create (defaults)", "network", "create", "--name", name, "--zone", "rma1")
        self.require("network create returns a network", isinstance(net, dict) and uuid_of(net), f"got {net!r}")
        self.cleanup.append(net.get("href") or f"{self.api}/networks/{net['uuid']}")
        self.eq("network create: name", net.get("name"), name)
        self.eq("network create: mtu defaults to 9000", net.get("mtu"), 9000)
        self.eq("network create: zone.slug", (net.get("zone") or {}).get("slug"), "rma1")
        self.eq("network create: tags {}", net.get("tags"), {})
        self.check_common("network", net, "networks")
        subs = net.get("subnets") or []
        self.check("network create: exactly one auto-created IPv4 subnet",
                   len(subs) == 1 and isinstance(subs[0], dict) and uuid_of(subs[0]) and
                   self._is_v4_cidr(subs[0].get("cidr")), f"subnets {subs!r}")
        self.net_auto = net

        # networks without auto subnet
        name_a = f"acc-neta-{self.rid}"
        net_a = self.cli_json("network create --no-auto-create-ipv4-subnet --mtu 1500 --tag", "network", "create",
                              "--name", name_a, "--zone", "rma1", "--no-auto-create-ipv4-subnet", "--mtu", "1500",
                              "--tag", f"run={self.rid}")
        self.require("network A created", isinstance(net_a, dict) and uuid_of(net_a), f"got {net_a!r}")
        self.cleanup.append(net_a.get("href") or f"{self.api}/networks/{net_a['uuid']}")
        self.eq("network A: subnets is []", net_a.get("subnets"), [])
        self.eq("network A: mtu 1500", net_a.get("mtu"), 1500)
        self.eq("network A: tags", net_a.get("tags"), {"run": self.rid})
        self.net_a = net_a
        name_b = f"acc-netb-{self.rid}"
        net_b = self.cli_json("network create B --no-auto-create-ipv4-subnet", "network", "create", "--name", name_b,
                              "--no-auto-create-ipv4-subnet")
        self.require("network B created", isinstance(net_b, dict) and uuid_of(net_b), f"got {net_b!r}")
        self.cleanup.append(net_b.get("href") or f"{self.api}/networks/{net_b['uuid']}")
        self.eq("network B: subnets is []", net_b.get("subnets"), [])
        self.check("network B: zone defaults to a zone", isinstance(net_b.get("zone"), dict) and net_b["zone"].get("slug"),
                   f"zone {net_b.get('zone')!r}")
        self.net_b = net_b

        lst = self.cli_list("network list", "network", "list")
        ids = self.list_ids(lst)
        self.check("network list contains all three networks",
                   all(n["uuid"] in ids for n in (net, net_a, net_b)), f"listed {ids}")
        lst = self.cli_list("network list --filter-tag run=<rid>", "network", "list", "--filter-tag", f"run={self.rid}")
        self.eq("network list --filter-tag returns only the tagged network", self.list_ids(lst), [net_a["uuid"]])
        shown = self.cli_json("network show <uuid>", "network", "show", net["uuid"])
        self.check("network show <uuid> returns the network",
                   isinstance(shown, dict) and shown.get("uuid") == net["uuid"] and shown.get("mtu") == 9000,
                   f"got {one_line(shown, 200)}")
        shown = self.cli_json("network show <name>", "network", "show", name_a)
        self.check("network show <name> finds the network by name",
                   isinstance(shown, list) and self.list_ids(shown) == [net_a["uuid"]], f"got {one_line(shown, 200)}")
        new_name_a = name_a + "-renamed"
        upd = self.cli_json("network update --mtu --name", "network", "update", net_a["uuid"], "--mtu", "6601",
                            "--name", new_name_a)
        self.eq("network update: mtu 6601", upd.get("mtu"), 6601)
        self.eq("network update: name changed", upd.get("name"), new_name_a)
        self.eq("network update: tags untouched", upd.get("tags"), {"run": self.rid})
        self.net_a = upd

        # auto-created subnet is visible via subnet list/show
        auto_sub = subs[0]["uuid"] if subs and isinstance(subs[0], dict) else None
        if auto_sub:
            lst = self.cli_list("subnet list", "subnet", "list")
            self.check("subnet list contains the auto-created subnet", auto_sub in self.list_ids(lst), "not listed")
            s = self.cli_json("subnet show <auto subnet>", "subnet", "show", auto_sub)
            self.eq("auto-created subnet: network.uuid", (s.get("network") or {}).get("uuid"), net["uuid"])

    @staticmethod
    def _is_v4_cidr(value):
        try:
            return ipaddress.ip_network(value).version == 4
        except (TypeError, ValueError):
            return False

    def section_subnets(self):
        if not (self.net_a and self.net_b):
            self.fail("subnet section", "skipped: networks from the network section are missing")
            return
        # subnet A: without DNS servers -> 2 defaults (kept for the LB member)
        sub_a = self.cli_json("subnet create (no dns servers)", "subnet", "create", "--cidr", "10.77.0.0/24",
                              "--network-uuid", self.net_a["uuid"])
        self.require("subnet A created", isinstance(sub_a, dict) and uuid_of(sub_a), f"got {sub_a!r}")
        self.cleanup.append(sub_a.get("href") or f"{self.api}/subnets/{sub_a['uuid']}")
        self.eq("subnet A: cidr", sub_a.get("cidr"), "10.77.0.0/24")
        self.eq("subnet A: network.uuid", (sub_a.get("network") or {}).get("uuid"), self.net_a["uuid"])
        dns = sub_a.get("dns_servers")
        self.check("subnet A: dns_servers defaults to 2 resolvers", isinstance(dns, list) and len(dns) == 2,
                   f"dns_servers {dns!r}")
        self.eq("subnet A: tags {}", sub_a.get("tags"), {})
        self.check_common("subnet", sub_a, "subnets")
        shown = self.cli_json("subnet show <uuid> (right after create)", "subnet", "show", sub_a["uuid"])
        self.eq("subnet show equals the create output", shown, sub_a)
        # dns_servers edge cases the CLI cannot send (reference check 34), raw HTTP
        st, data, raw = self.http("PATCH", sub_a["href"], {"dns_servers": ["0.0.0.0"]})
        self.check("PATCH subnet dns_servers [0.0.0.0] -> 400 with a flat error", st == 400 and is_flat_error(data),
                   f"status {st}, body {raw[:200]!r}")
        got = self.http_get("GET subnet after rejected PATCH", sub_a["href"])
        self.eq("rejected PATCH left dns_servers unchanged", got.get("dns_servers"), dns)
        self.http_patch("PATCH subnet dns_servers []", sub_a["href"], {"dns_servers": []})
        got = self.http_get("GET subnet after dns_servers []", sub_a["href"])
        self.eq("PATCH dns_servers [] -> []", got.get("dns_servers", "<missing>"), [])
        self.http_patch("PATCH subnet dns_servers null", sub_a["href"], {"dns_servers": None})
        got = self.http_get("GET subnet after dns_servers null", sub_a["href"])
        self.eq("PATCH dns_servers null -> back to the 2 defaults", got.get("dns_servers"), dns)
        self.subnet_a = sub_a

        # subnet B: with DNS servers and gateway
        sub_b = self.cli_json("subnet create --dns-server x2 --gateway-address", "subnet", "create",
                              "--cidr", "10.78.0.0/24", "--network-uuid", self.net_b["uuid"],
                              "--dns-server", "1.1.1.1", "--dns-server", "8.8.8.8",
                              "--gateway-address", "10.78.0.1", "--tag", f"run={self.rid}")
        self.require("subnet B created", isinstance(sub_b, dict) and uuid_of(sub_b), f"got {sub_b!r}")
        self.cleanup.append(sub_b.get("href") or f"{self.api}/subnets/{sub_b['uuid']}")
        self.eq("subnet B: dns_servers as given, in order", sub_b.get("dns_servers"), ["1.1.1.1", "8.8.8.8"])
        self.eq("subnet B: gateway_address", sub_b.get("gateway_address"), "10.78.0.1")
        self.eq("subnet B: network.uuid", (sub_b.get("network") or {}).get("uuid"), self.net_b["uuid"])
        self.eq("subnet B: tags", sub_b.get("tags"), {"run": self.rid})
        self.subnet_b = sub_b

        n = self.cli_json("network show (after subnet create)", "network", "show", self.net_a["uuid"])
        subs = n.get("subnets") if isinstance(n, dict) else None
        self.check("network A lists subnet A as {uuid, cidr}",
                   isinstance(subs, list) and any(isinstance(s, dict) and s.get("uuid") == sub_a["uuid"]
                                                  and s.get("cidr") == "10.77.0.0/24" for s in subs),
                   f"subnets {subs!r}")

        lst = self.cli_list("subnet list", "subnet", "list")
        ids = self.list_ids(lst)
        self.check("subnet list contains both subnets", sub_a["uuid"] in ids and sub_b["uuid"] in ids, f"listed {ids}")
        lst = self.cli_list("subnet list --filter-tag run=<rid>", "subnet", "list", "--filter-tag", f"run={self.rid}")
        self.eq("subnet list --filter-tag returns only subnet B", self.list_ids(lst), [sub_b["uuid"]])

        shown = self.cli_json("subnet show <uuid>", "subnet", "show", sub_b["uuid"])
        self.check("subnet show returns subnet B with its fields",
                   isinstance(shown, dict) and shown.get("uuid") == sub_b["uuid"] and shown.get("cidr") == "10.78.0.0/24"
                   and shown.get("dns_servers") == ["1.1.1.1", "8.8.8.8"], f"got {one_line(shown, 300)}")

        upd = self.cli_json("subnet update --dns-server --gateway-address --tag", "subnet", "update", sub_b["uuid"],
                            "--dns-server", "9.9.9.9", "--gateway-address", "10.78.0.254", "--tag", "extra=yes")
        self.eq("subnet update: dns_servers replaced", upd.get("dns_servers"), ["9.9.9.9"])
        self.eq("subnet update: gateway_address", upd.get("gateway_address"), "10.78.0.254")
        self.eq("subnet update: tags merged", upd.get("tags"), {"run": self.rid, "extra": "yes"})
        self.eq("subnet update: cidr unchanged", upd.get("cidr"), "10.78.0.0/24")
        upd = self.cli_json("subnet update --clear-all-tags", "subnet", "update", sub_b["uuid"], "--clear-all-tags")
        self.eq("subnet update --clear-all-tags: tags {}", upd.get("tags"), {})
        self.eq("subnet update --clear-all-tags: dns_servers kept", upd.get("dns_servers"), ["9.9.9.9"])

        self.cli_delete("subnet delete --force", "subnet", sub_b["uuid"])
        lst = self.cli_list("subnet list (after delete)", "subnet", "list")
        self.check("deleted subnet is gone from subnet list", sub_b["uuid"] not in self.list_ids(lst), "still listed")
        self.cli_fails("subnet show <deleted uuid> fails", ["subnet", "show", sub_b["uuid"]], "No resource found")
        n = self.cli_json("network show (after subnet delete)", "network", "show", self.net_b["uuid"])
        self.eq("network B has no subnets after subnet delete", n.get("subnets") if isinstance(n, dict) else None, [])

        # API error passed through by the CLI
        rc, out, err = self.cli("subnet", "create", "--cidr", "10.79.0.0/24", "--network-uuid", str(uuidlib.uuid4()))
        self.check("subnet create on an unknown network fails with 'API Response Error (4xx)'",
                   rc != 0 and re.search(r"API Response Error \(4\d\d\)", err),
                   f"rc {rc}, stderr {err.strip()[:200]!r}, stdout {out.strip()[:200]!r}")

    def section_floating_ips(self):
        fip4 = self.cli_json("floating-ip create (v4 defaults)", "floating-ip", "create")
        self.require("floating-ip v4 created", isinstance(fip4, dict) and fip4.get("network"), f"got {fip4!r}")
        net4 = fip4["network"]
        ip4 = net4.split("/")[0]
        self.cleanup.append(fip4.get("href") or f"{self.api}/floating-ips/{ip4}")
        self.check("floating-ip v4: network ends with /32 and is IPv4",
                   net4.endswith("/32") and self._ip_version(ip4) == 4, f"network {net4!r}")
        self.eq("floating-ip v4: ip_version 4", fip4.get("ip_version"), 4)
        self.eq("floating-ip v4: type regional", fip4.get("type"), "regional")
        self.check("floating-ip v4: region set", isinstance(fip4.get("region"), dict) and fip4["region"].get("slug"),
                   f"region {fip4.get('region')!r}")
        if self.managed:
            self.eq("floating-ip v4: region is rma (default zone rma1)", (fip4.get("region") or {}).get("slug"), "rma")
        self.eq("floating-ip v4: server null", fip4.get("server", "<missing>"), None)
        self.eq("floating-ip v4: tags {}", fip4.get("tags"), {})
        self.check_common("floating IP", fip4, "floating-ips", ident=ip4)
        shown = self.cli_json("floating-ip show <ipv4> (right after create)", "floating-ip", "show", ip4)
        self.eq("floating-ip show equals the create output", shown, fip4)

        fip6 = self.cli_json("floating-ip create --ip-version 6 (defaults)", "floating-ip", "create", "--ip-version", "6")
        self.require("floating-ip v6 created", isinstance(fip6, dict) and fip6.get("network"), f"got {fip6!r}")
        net6 = fip6["network"]
        ip6 = net6.split("/")[0]
        self.cleanup.append(fip6.get("href") or f"{self.api}/floating-ips/{ip6}")
        self.check("floating-ip v6: network ends with /128 and is IPv6",
                   net6.endswith("/128") and self._ip_version(ip6) == 6, f"network {net6!r}")
        self.eq("floating-ip v6: ip_version 6", fip6.get("ip_version"), 6)
        self.eq("floating-ip v6: type regional", fip6.get("type"), "regional")
        self.eq("floating-ip v6: href ends with the bare IPv6", fip6.get("href"), f"{self.api}/floating-ips/{ip6}")

        lst = self.cli_list("floating-ip list", "floating-ip", "list")
        nets = self.list_ids(lst, "network")
        self.check("floating-ip list contains both IPs", net4 in nets and net6 in nets, f"listed {nets}")

        shown = self.cli_json("floating-ip show <ipv4>/32", "floating-ip", "show", net4)
        self.eq("floating-ip show <ipv4>/32 (prefix stripped) returns the IP",
                shown.get("network") if isinstance(shown, dict) else shown, net4)
        shown = self.cli_json("floating-ip show <ipv6> (colons in path)", "floating-ip", "show", ip6)
        self.eq("floating-ip show <ipv6> returns the IP", shown.get("network") if isinstance(shown, dict) else shown, net6)
        shown = self.cli_json("floating-ip show <ipv6>/128", "floating-ip", "show", net6)
        self.eq("floating-ip show <ipv6>/128 returns the IP", shown.get("network") if isinstance(shown, dict) else shown, net6)

        if self.server:
            sid = self.server["uuid"]
            srv = self.http_get("GET server for its addresses", f"/servers/{sid}")
            pub = [i for i in srv.get("interfaces") or [] if i.get("type") == "public"]
            addrs = pub[0].get("addresses", []) if pub else []
            srv4 = next((a.get("address") for a in addrs if a.get("version") == 4), None)
            srv6 = next((a.get("address") for a in addrs if a.get("version") == 6), None)
            res = self.cli_json("floating-ip assign <ipv4> --server", "floating-ip", "assign", ip4, "--server", sid)
            self.eq("floating-ip assign v4: server.uuid", (res.get("server") or {}).get("uuid"), sid)
            self.eq("floating-ip assign v4: next_hop is the server's public IPv4", res.get("next_hop"), srv4)
            res = self.cli_json("floating-ip assign <ipv6> --server", "floating-ip", "assign", ip6, "--server", sid)
            self.eq("floating-ip assign v6: server.uuid", (res.get("server") or {}).get("uuid"), sid)
            self.eq("floating-ip assign v6: next_hop is the server's public IPv6", res.get("next_hop"), srv6)
        else:
            self.fail("floating-ip assign", "skipped: no server from the server section")

        upd = self.cli_json("floating-ip update <ipv4>/32 --reverse-ptr --tag", "floating-ip", "update", net4,
                            "--reverse-ptr", f"acc-{self.rid}.example.com", "--tag", f"run={self.rid}")
        self.eq("floating-ip update: reverse_ptr", upd.get("reverse_ptr"), f"acc-{self.rid}.example.com")
        self.eq("floating-ip update: tags", upd.get("tags"), {"run": self.rid})
        if self.server:
            self.eq("floating-ip update: assignment kept", (upd.get("server") or {}).get("uuid"), self.server["uuid"])
        upd = self.cli_json("floating-ip update <ipv6> --reverse-ptr --tag", "floating-ip", "update", ip6,
                            "--reverse-ptr", f"acc6-{self.rid}.example.com", "--tag", "v=6")
        self.eq("floating-ip update v6: reverse_ptr", upd.get("reverse_ptr"), f"acc6-{self.rid}.example.com")
        self.eq("floating-ip update v6: tags", upd.get("tags"), {"v": "6"})
        upd = self.cli_json("floating-ip update <ipv6> --clear-tag", "floating-ip", "update", ip6, "--clear-tag", "v")
        self.eq("floating-ip update v6 --clear-tag: tags {}", upd.get("tags"), {})

        lst = self.cli_list("floating-ip list --filter-tag run=<rid>", "floating-ip", "list", "--filter-tag",
                            f"run={self.rid}")
        self.eq("floating-ip list --filter-tag returns only the v4 IP", self.list_ids(lst, "network"), [net4])

        self.fip4, self.fip6 = (net4, ip4), (net6, ip6)

    # ---- volumes (CLI) and volume snapshots (raw HTTP: the CLI has no command) -----

    def wait_for(self, path, pred, timeout=30):
        """Polls GET path until pred(data) holds; returns the last (status, data)."""
        deadline = time.monotonic() + timeout
        while True:
            code, data, _ = self.http("GET", path)
            if (code == 200 and isinstance(data, dict) and pred(data)) or time.monotonic() > deadline:
                return code, data
            time.sleep(0.25)

    def section_volumes(self):
        if not self.server:
            self.fail("volume section", "skipped: no server from the server section")
            return
        sid = self.server["uuid"]
        name = f"acc-vol-{self.rid}"
        vol = self.cli_json("volume create --server-uuids", "volume", "create", "--name", name, "--size-gb", "3",
                            "--server-uuids", sid, "--zone", "rma1", "--tag", f"run={self.rid}")
        self.require("volume create returns an object with a uuid", isinstance(vol, dict) and uuid_of(vol),
                     f"got {vol!r}")
        self.cleanup.append(vol.get("href") or f"{self.api}/volumes/{vol['uuid']}")
        vid = vol["uuid"]
        self.eq("volume create: type defaults to ssd", vol.get("type"), "ssd")
        self.eq("volume create: size_gb", vol.get("size_gb"), 3)
        self.stub("volume create: zone stub", vol.get("zone"), {"slug": "rma1"})
        self.eq("volume create: server_uuids", vol.get("server_uuids"), [sid])
        self.check("volume create: servers stub of the server",
                   isinstance(vol.get("servers"), list) and self.list_ids(vol["servers"]) == [sid],
                   f"servers {vol.get('servers')!r}")
        self.eq("volume create: current_operation null", vol.get("current_operation", "<missing>"), None)
        self.eq("volume create: tags", vol.get("tags"), {"run": self.rid})
        self.check_common("volume", vol, "volumes")
        srv = self.http_get("GET the server of the new volume", f"/servers/{sid}")
        self.check("server lists the attached volume after its root volume",
                   self.list_ids(srv.get("volumes") or [])[1:] == [vid], f"volumes {srv.get('volumes')!r}")
        root = (srv.get("volumes") or [{}])[0]
        code, root_vol, raw = self.http("GET", root.get("href") or "/volumes/missing")
        self.check("the server's root volume resolves under /v1/volumes", code == 200 and
                   isinstance(root_vol, dict) and root_vol.get("server_uuids") == [sid], f"{code} {raw[:200]!r}")

        lst = self.cli_list("volume list", "volume", "list")
        self.check("volume list contains the new volume and the root volume",
                   {vid, root.get("uuid")} <= set(self.list_ids(lst)), "not listed")
        lst = self.cli_list("volume list --filter-tag", "volume", "list", "--filter-tag", f"run={self.rid}")
        self.eq("volume list --filter-tag finds exactly the volume", self.list_ids(lst), [vid])
        shown = self.cli_json("volume show <name>", "volume", "show", name)
        self.check("volume show <name> finds the volume by name",
                   isinstance(shown, list) and self.list_ids(shown) == [vid], f"got {one_line(shown, 200)}")

        upd = self.cli_json("volume update --size-gb (grow, attached)", "volume", "update", vid, "--size-gb", "5")
        self.eq("volume update: size grew", upd.get("size_gb"), 5)
        new_name = name + "-renamed"
        upd = self.cli_json("volume update --name --tag", "volume", "update", vid, "--name", new_name,
                            "--tag", "extra=1")
        self.eq("volume update: renamed", upd.get("name"), new_name)
        self.eq("volume update: tag added", upd.get("tags"), {"run": self.rid, "extra": "1"})
        self.cli_fails("volume update --size-gb (shrink) fails", ["volume", "update", vid, "--size-gb", "4"],
                       "size_gb")
        upd = self.cli_json("volume detach", "volume", "detach", vid)
        self.eq("volume detach: server_uuids []", upd.get("server_uuids"), [])
        srv = self.http_get("GET the server after detach", f"/servers/{sid}")
        self.check("server no longer lists the detached volume", vid not in self.list_ids(srv.get("volumes") or []),
                   f"volumes {srv.get('volumes')!r}")
        status, data, raw = self.http("PATCH", f"/volumes/{vid}", {"name": "x", "size_gb": 10})
        self.check("volume PATCH with two attributes is 400 'Only one attribute'",
                   status == 400 and is_flat_error(data) and "Only one attribute" in raw, f"{status} {raw[:200]!r}")

        # snapshots of the detached volume
        snap = self.http_create("volume snapshot create", "/volume-snapshots",
                                {"name": f"acc-snap-{self.rid}", "source_volume": vid, "tags": {"run": self.rid}})
        self.stub("snapshot: source_volume stub", snap.get("source_volume"),
                  {"uuid": vid, "name": new_name, "href": f"{self.api}/volumes/{vid}"})
        self.eq("snapshot: size_gb of the volume", snap.get("size_gb"), 5)
        self.stub("snapshot: zone of the volume", snap.get("zone"), {"slug": "rma1"})
        self.check_common("volume snapshot", snap, "volume-snapshots")
        code, data = self.wait_for(snap["href"], lambda d: d.get("status") == "available")
        self.check("snapshot reaches available", code == 200 and data.get("status") == "available",
                   f"{code} {data!r}")
        self.http_patch("snapshot PATCH name", snap["href"], {"name": "renamed"})
        self.eq("snapshot renamed", self.http_get("GET snapshot", snap["href"]).get("name"), "renamed")
        status, data, raw = self.http("DELETE", f"/volumes/{vid}")
        self.check("deleting a volume with snapshots is 400 'Snapshots exist for this volume'",
                   status == 400 and "Snapshots exist for this volume" in raw, f"{status} {raw[:200]!r}")
        status, _, raw = self.http("POST", f"/volumes/{vid}/revert", {"snapshot": snap["uuid"]})
        self.check("revert of the detached volume to its latest snapshot is accepted", status in (200, 201, 202, 204),
                   f"{status} {raw[:200]!r}")
        code, data = self.wait_for(f"/volumes/{vid}", lambda d: d.get("current_operation") is None)
        self.check("revert finishes: current_operation back to null",
                   code == 200 and data.get("current_operation", "<missing>") is None, f"{code} {data!r}")
        copy = self.http_create("volume create from snapshot", "/volumes",
                                {"name": f"acc-copy-{self.rid}", "volume_snapshot_uuid": snap["uuid"]})
        self.eq("volume from snapshot: size of the snapshot", copy.get("size_gb"), 5)
        self.eq("volume from snapshot: detached", copy.get("server_uuids"), [])
        status, _, raw = self.http("DELETE", snap["href"])
        self.eq("snapshot DELETE -> 204", status, 204)
        code, data = self.wait_for(snap["href"], lambda d: d.get("status") != "deleting", timeout=10)
        self.eq("deleted snapshot is gone (404) within 10 s", code, 404)
        self.cli_delete("volume delete (copy)", "volume", copy["uuid"])

        # attach again; the server delete section checks that it survives, detached
        upd = self.cli_json("volume attach --server-uuids", "volume", "attach", vid, "--server-uuids", sid)
        self.eq("volume attach: server_uuids", upd.get("server_uuids"), [sid])
        self.volume = upd
        self.root_volume = root

    def section_volumes_after_server_delete(self):
        vol = getattr(self, "volume", None)
        if not vol:
            self.fail("volumes after server delete", "skipped: no volume from the volume section")
            return
        root = getattr(self, "root_volume", None) or {}
        code, _, _ = self.http("GET", f"/volumes/{root.get('uuid')}")
        self.eq("the deleted server's root volume is gone (404)", code, 404)
        shown = self.cli_json("volume show (after its server was deleted)", "volume", "show", vol["uuid"])
        self.eq("an attached volume survives its server's deletion, detached", shown.get("server_uuids"), [])
        self.cli_delete("volume delete --force", "volume", vol["uuid"])
        self.cli_fails("volume show <deleted uuid> fails", ["volume", "show", vol["uuid"]], "No resource found")

    def section_server_delete(self):
        if not self.server:
            self.fail("server delete", "skipped: no server")
            return
        sid = self.server["uuid"]
        self.cli_delete("server delete --force", "server", sid)
        # the real API may keep a deleted server visible briefly; wait for the 404
        deadline = time.monotonic() + 30
        while self.http("GET", f"/servers/{sid}")[0] == 200 and time.monotonic() < deadline:
            time.sleep(0.25)
        lst = self.cli_list("server list (after delete)", "server", "list")
        self.check("deleted server is gone from server list", sid not in self.list_ids(lst), "still listed after 30 s")
        self.cli_fails("server show <deleted uuid> fails", ["server", "show", sid], "No resource found")
        if self.sg:
            g = self.cli_json("server-group show (after server delete)", "server-group", "show", self.sg["uuid"])
            self.eq("server group no longer lists the deleted server", g.get("servers"), [])
        fip = getattr(self, "fip4", None)
        if fip:
            shown = self.cli_json("floating-ip show after its server was deleted", "floating-ip", "show", fip[1])
            self.eq("floating IP survives server deletion", shown.get("network"), fip[0])
            self.eq("floating IP of a deleted server has server null", shown.get("server", "<missing>"), None)

    def section_floating_ip_delete(self):
        for label, (net, ip) in (("v4", getattr(self, "fip4", (None, None))), ("v6", getattr(self, "fip6", (None, None)))):
            if not net:
                self.fail(f"floating-ip delete {label}", "skipped: floating IP missing")
                continue
            # delete with the /prefix form: the CLI strips it
            self.cli_delete(f"floating-ip delete {label} <ip>/<prefix> --force", "floating-ip", net, expected_id=ip)
        lst = self.cli_list("floating-ip list (after delete)", "floating-ip", "list")
        nets = self.list_ids(lst, "network")
        for label, (net, ip) in (("v4", getattr(self, "fip4", (None, None))), ("v6", getattr(self, "fip6", (None, None)))):
            if net:
                self.check(f"deleted floating IP {label} is gone from list", net not in nets, "still listed")
        if getattr(self, "fip6", None):
            self.cli_fails("floating-ip show <deleted ipv6> fails", ["floating-ip", "show", self.fip6[1]],
                           "No resource found")

    def section_server_group_delete(self):
        if not self.sg:
            self.fail("server-group delete", "skipped: no server group")
            return
        self.cli_delete("server-group delete --force", "server-group", self.sg["uuid"])
        lst = self.cli_list("server-group list (after delete)", "server-group", "list")
        self.check("deleted server group is gone from list", self.sg["uuid"] not in self.list_ids(lst), "still listed")

    def section_failures(self):
        bogus = str(uuidlib.uuid4())
        self.cli_fails("server show <nonexistent uuid> exits non-zero with an error", ["server", "show", bogus],
                       f"No resource found for server having UUID or name: {bogus}")
        self.cli_fails("network show <nonexistent uuid> exits non-zero with an error", ["network", "show", bogus],
                       "No resource found")
        self.cli_fails("floating-ip show <unknown ip> exits non-zero with an error",
                       ["floating-ip", "show", "192.0.2.254"], "No resource found")
        self.cli_fails("server delete <nonexistent uuid> exits non-zero", ["server", "delete", bogus, "--force"],
                       "No resource found")

    # ---- load balancers (raw HTTP) -------------------------------------------

    def section_load_balancers(self):
        lb_name = f"acc-lb-{self.rid}"
        lb = self.http_create("load balancer create", "/load-balancers",
                              {"name": lb_name, "flavor": "lb-standard", "zone": "rma1"})
        lid = lb.get("uuid")
        self.require("load balancer has a uuid", isinstance(lid, str) and UUID_RE.match(lid), f"uuid {lid!r}")
        self.eq("LB create: status changing", lb.get("status"), "changing")
        self.eq("LB create: name", lb.get("name"), lb_name)
        self.stub("LB create: flavor", lb.get("flavor"), {"slug": "lb-standard", "name": "LB-Standard"})
        self.stub("LB create: zone", lb.get("zone"), {"slug": "rma1"})
        self.eq("LB create: tags {}", lb.get("tags"), {})
        self.check_common("load balancer", lb, "load-balancers")
        vips = lb.get("vip_addresses") or []
        self.check("LB create: two VIPs, IPv4 first then IPv6 (version as numbers)",
                   len(vips) == 2 and vips[0].get("version") == 4 and vips[1].get("version") == 6
                   and self._ip_version(vips[0].get("address")) == 4 and self._ip_version(vips[1].get("address")) == 6,
                   f"vip_addresses {vips!r}")
        self.check("LB create: VIPs carry a subnet stub",
                   all(isinstance(v.get("subnet"), dict) and v["subnet"].get("uuid") for v in vips) and vips,
                   f"vip_addresses {vips!r}")
        got = self.http_get("GET LB href", lb["href"])
        diff = sorted(k for k in set(lb) | set(got) if k != "status" and lb.get(k) != got.get(k))
        self.check("GET LB equals the create response (except status)", not diff, f"differing fields {diff}")

        status = got.get("status")
        t0 = time.monotonic()
        while status != "running" and time.monotonic() - t0 < 30:
            time.sleep(0.2)
            st, data, _ = self.http("GET", lb["href"])
            status = data.get("status") if st == 200 and isinstance(data, dict) else f"HTTP {st}"
        self.eq(f"LB reaches running (after {time.monotonic() - t0:.1f}s, limit 30s)", status, "running")

        st, data, raw = self.http("GET", "/load-balancers")
        self.check("LB list contains the LB", st == 200 and isinstance(data, list) and lid in self.list_ids(data),
                   f"status {st}, body {raw[:200]!r}")

        self.http_patch("LB PATCH name + tags -> 204/200", lb["href"], {"name": lb_name + "-2", "tags": {"a": "1"}})
        got = self.http_get("GET LB after PATCH", lb["href"])
        self.eq("LB PATCH: name changed", got.get("name"), lb_name + "-2")
        self.eq("LB PATCH: tags", got.get("tags"), {"a": "1"})
        self.http_patch("LB PATCH tags {} -> 204/200", lb["href"], {"tags": {}})
        got = self.http_get("GET LB after clearing tags", lb["href"])
        self.eq("LB PATCH tags {}: tags cleared", got.get("tags"), {})
        self.eq("LB PATCH tags {}: name kept", got.get("name"), lb_name + "-2")

        self.expect_400("LB create with unknown flavor -> 400 'is not a valid choice'", "/load-balancers",
                        {"name": lb_name + "-bad", "flavor": "lb-standard-non-existent", "zone": "rma1"},
                        "is not a valid choice")

        lb_stub = {"href": lb["href"], "uuid": lid, "name": lb_name + "-2"}

        # pool
        pool = self.http_create("pool create", "/load-balancers/pools",
                                {"name": f"acc-pool-{self.rid}", "algorithm": "round_robin", "protocol": "tcp",
                                 "load_balancer": lid})
        pid = pool.get("uuid")
        self.check_common("pool", pool, "load-balancers/pools")
        self.stub("pool: load_balancer stub", pool.get("load_balancer"), lb_stub)
        self.eq("pool: algorithm", pool.get("algorithm"), "round_robin")
        self.eq("pool: protocol", pool.get("protocol"), "tcp")
        self.eq("pool: tags {}", pool.get("tags"), {})
        got = self.http_get("GET pool href", pool["href"])
        self.eq("GET pool equals the create response", got, pool)
        self.expect_400("pool create with algorithm robin_round -> 400 'Expect one of'", "/load-balancers/pools",
                        {"name": "bad", "algorithm": "robin_round", "protocol": "tcp", "load_balancer": lid},
                        "Expect one of")
        self.expect_400("pool create with unknown load_balancer -> 400 'does not exist'", "/load-balancers/pools",
                        {"name": "bad", "algorithm": "round_robin", "protocol": "tcp",
                         "load_balancer": str(uuidlib.uuid4())}, "does not exist")
        pool_stub = {"href": pool["href"], "uuid": pid, "name": pool.get("name")}

        # member in the CLI-created private subnet
        sub = self.subnet_a
        if not sub:
            self.fail("pool member", "skipped: no private subnet from the subnet section")
            member = None
        else:
            members_path = f"/load-balancers/pools/{pid}/members"
            member = self.http_create("member create", members_path,
                                      {"name": f"acc-member-{self.rid}", "address": "10.77.0.11",
                                       "protocol_port": 80, "subnet": sub["uuid"], "tags": {"run": self.rid}})
            mid = member.get("uuid")
            self.check_common("member", member, f"load-balancers/pools/{pid}/members")
            self.stub("member: pool stub", member.get("pool"), pool_stub)
            self.stub("member: load_balancer stub", member.get("load_balancer"), lb_stub)
            self.eq("member: enabled defaults to true", member.get("enabled"), True)
            self.eq("member: monitor_status no_monitor", member.get("monitor_status"), "no_monitor")
            self.eq("member: monitor_port null", member.get("monitor_port", "<missing>"), None)
            self.eq("member: address", member.get("address"), "10.77.0.11")
            self.eq("member: protocol_port", member.get("protocol_port"), 80)
            self.stub("member: subnet stub", member.get("subnet"),
                    {"href": sub.get("href"), "uuid": sub["uuid"], "cidr": "10.77.0.0/24"})
            self.eq("member: tags", member.get("tags"), {"run": self.rid})
            got = self.http_get("GET member href", member["href"])
            self.eq("GET member equals the create response", got, member)
            st, data, raw = self.http("GET", f"{members_path}?tag%3Arun={self.rid}")
            self.check("member list with tag filter contains the member",
                       st == 200 and isinstance(data, list) and self.list_ids(data) == [mid], f"status {st}, body {raw[:200]!r}")
            st, data, raw = self.http("GET", f"{members_path}?tag%3Arun={self.rid}-nope")
            self.check("member list with non-matching tag filter is []", st == 200 and data == [],
                       f"status {st}, body {raw[:200]!r}")
            self.http_patch("member PATCH enabled false", member["href"], {"enabled": False})
            got = self.http_get("GET member after disabling", member["href"])
            self.eq("member PATCH: enabled false", got.get("enabled"), False)
            self.http_patch("member PATCH enabled true", member["href"], {"enabled": True})
            got = self.http_get("GET member after enabling", member["href"])
            self.eq("member PATCH: enabled true", got.get("enabled"), True)

        # listener
        listener = self.http_create("listener create", "/load-balancers/listeners",
                                    {"name": "tcp/80", "pool": pid, "protocol": "tcp", "protocol_port": 80})
        self.check_common("listener", listener, "load-balancers/listeners")
        self.eq("listener: allowed_cidrs []", listener.get("allowed_cidrs"), [])
        self.eq("listener: timeouts 50000/5000/50000",
                [listener.get("timeout_client_data_ms"), listener.get("timeout_member_connect_ms"),
                 listener.get("timeout_member_data_ms")], [50000, 5000, 50000])
        self.stub("listener: pool stub", listener.get("pool"), pool_stub)
        self.stub("listener: load_balancer stub", listener.get("load_balancer"), lb_stub)
        self.eq("listener: protocol / port", [listener.get("protocol"), listener.get("protocol_port")], ["tcp", 80])
        self.eq("listener: tags {}", listener.get("tags"), {})
        self.http_patch("listener PATCH allowed_cidrs [10.0.0.0/24]", listener["href"], {"allowed_cidrs": ["10.0.0.0/24"]})
        got = self.http_get("GET listener", listener["href"])
        self.eq("listener PATCH: allowed_cidrs set", got.get("allowed_cidrs"), ["10.0.0.0/24"])
        self.http_patch("listener PATCH allowed_cidrs []", listener["href"], {"allowed_cidrs": []})
        got = self.http_get("GET listener", listener["href"])
        self.eq("listener PATCH: allowed_cidrs back to []", got.get("allowed_cidrs", "<missing>"), [])
        self.expect_400("listener with allowed_cidrs [1.1.1.1] -> 400", "/load-balancers/listeners",
                        {"name": "bad", "pool": pid, "protocol": "tcp", "protocol_port": 81, "allowed_cidrs": ["1.1.1.1"]},
                        "Enter a valid network address in CIDR notation")
        self.expect_400("listener with protocol_port 11111111 -> 400", "/load-balancers/listeners",
                        {"name": "bad", "pool": pid, "protocol": "tcp", "protocol_port": 11111111},
                        "The protocol_port must be between")

        # health monitor (tcp) on the pool with the member
        mon = self.http_create("health monitor create (tcp)", "/load-balancers/health-monitors",
                               {"pool": pid, "type": "tcp"})
        self.check_common("health monitor", mon, "load-balancers/health-monitors")
        self.eq("monitor: defaults delay_s/timeout_s/up/down = 2/1/2/3",
                [mon.get("delay_s"), mon.get("timeout_s"), mon.get("up_threshold"), mon.get("down_threshold")],
                [2, 1, 2, 3])
        self.eq("monitor: http null for tcp", mon.get("http", "<missing>"), None)
        self.stub("monitor: pool stub", mon.get("pool"), pool_stub)
        self.stub("monitor: load_balancer stub", mon.get("load_balancer"), lb_stub)
        self.eq("monitor: type", mon.get("type"), "tcp")
        self.expect_400("health monitor create {} -> 400 'This field is required'", "/load-balancers/health-monitors",
                        {}, "This field is required")

        # second pool with an HTTP monitor (http defaults + partial merge)
        pool2 = self.http_create("pool 2 create", "/load-balancers/pools",
                                 {"name": f"acc-pool2-{self.rid}", "algorithm": "least_connections",
                                  "protocol": "proxy", "load_balancer": lid})
        p2 = pool2.get("uuid")
        self.expect_400("http monitor with version 1.0 and host -> 400", "/load-balancers/health-monitors",
                        {"pool": p2, "type": "http", "http": {"version": "1.0", "host": "h.example"}},
                        "The host argument can not be used with HTTP version 1.0")
        mon2 = self.http_create("health monitor create (http, host)", "/load-balancers/health-monitors",
                                {"pool": p2, "type": "http", "delay_s": 20, "timeout_s": 15,
                                 "http": {"host": "h.example"}})
        expected_http = {"expected_codes": ["200"], "method": "GET", "url_path": "/", "version": "1.1",
                         "host": "h.example"}
        self.eq("http monitor: http defaults", mon2.get("http"), expected_http)
        self.eq("http monitor: delay_s/timeout_s as given", [mon2.get("delay_s"), mon2.get("timeout_s")], [20, 15])
        self.http_patch("http monitor PATCH expected_codes only", mon2["href"],
                        {"http": {"expected_codes": ["201", "200"]}})
        got = self.http_get("GET http monitor", mon2["href"])
        self.eq("http monitor PATCH merges http keys", got.get("http"), dict(expected_http, expected_codes=["201", "200"]))

        # member becomes up once the monitor exists
        if member:
            t0 = time.monotonic()
            ms = None
            while time.monotonic() - t0 < 30:
                st, data, _ = self.http("GET", member["href"])
                ms = data.get("monitor_status") if st == 200 and isinstance(data, dict) else f"HTTP {st}"
                if ms == "up":
                    break
                time.sleep(0.25)
            self.eq(f"member monitor_status becomes up after a monitor exists ({time.monotonic() - t0:.1f}s)", ms, "up")

        # lists before delete
        children = {
            "/load-balancers/pools": [pid, p2],
            "/load-balancers/listeners": [listener.get("uuid")],
            "/load-balancers/health-monitors": [mon.get("uuid"), mon2.get("uuid")],
        }
        for path, ids in children.items():
            st, data, raw = self.http("GET", path)
            self.check(f"GET {path} contains the LB's children",
                       st == 200 and isinstance(data, list) and all(i in self.list_ids(data) for i in ids),
                       f"status {st}, body {raw[:200]!r}")

        # delete the LB: cascades
        st, data, raw = self.http("DELETE", lb["href"])
        self.check("DELETE load balancer -> 204 with empty body", st == 204 and raw == "", f"status {st}, body {raw[:200]!r}")
        st, data, raw = self.http("GET", lb["href"])
        self.check("GET deleted LB -> 404", st == 404, f"status {st}")
        st, data, raw = self.http("GET", "/load-balancers")
        self.check("LB list no longer contains the LB", st == 200 and isinstance(data, list) and lid not in self.list_ids(data),
                   f"status {st}, body {raw[:200]!r}")
        for path, ids in children.items():
            st, data, raw = self.http("GET", path)
            self.check(f"GET {path} no longer contains the deleted LB's children",
                       st == 200 and isinstance(data, list) and not any(i in self.list_ids(data) for i in ids),
                       f"status {st}, body {raw[:200]!r}")
            self.check(f"GET {path}: nothing references the deleted LB",
                       isinstance(data, list) and not any((x.get("load_balancer") or {}).get("uuid") == lid for x in data),
                       "found entries whose load_balancer is the deleted LB")
        if member:
            st, _, _ = self.http("GET", member["href"])
            self.check("GET member of the deleted LB -> 404", st == 404, f"status {st}")

    # ---- objects users (CLI; identified by `id`, not `uuid`) -----------------

    def section_objects_users(self):
        name = f"acc-ou-{self.rid}"
        user = self.cli_json("objects-user create --display-name --tag", "objects-user", "create",
                             "--display-name", name, "--tag", f"run={self.rid}")
        self.require("objects-user create returns an object with an id", isinstance(user, dict) and user.get("id"),
                     f"got {user!r}")
        uid = user["id"]
        self.cleanup.append(user.get("href") or f"{self.api}/objects-users/{uid}")
        self.check("objects-user id is 64 lower-case hex characters", bool(HEX64_RE.match(str(uid))), f"id {uid!r}")
        self.check("objects-user has no uuid", "uuid" not in user, f"keys {sorted(user)!r}")
        self.eq("objects-user create: display_name", user.get("display_name"), name)
        self.eq("objects-user create: tags", user.get("tags"), {"run": self.rid})
        self.eq(f"objects user href is {self.api}/objects-users/<id>", user.get("href"),
                f"{self.api}/objects-users/{uid}")
        self.check("objects user created_at is RFC 3339 with microseconds and Z",
                   isinstance(user.get("created_at"), str) and TS_RE.match(user["created_at"]),
                   f"created_at {user.get('created_at')!r}")
        keys = user.get("keys")
        ok = isinstance(keys, list) and len(keys) == 1 and isinstance(keys[0], dict)
        self.require("objects-user create: exactly one key pair", ok, f"keys {keys!r}")
        pair = keys[0]
        self.check("objects-user access_key is 20 upper-case letters and digits",
                   bool(ACCESS_KEY_RE.match(str(pair.get("access_key")))), f"access_key {pair.get('access_key')!r}")
        self.check("objects-user secret_key is 40 base64 characters",
                   bool(SECRET_KEY_RE.match(str(pair.get("secret_key")))), f"secret_key {pair.get('secret_key')!r}")

        shown = self.cli_json("objects-user show <id>", "objects-user", "show", uid)
        self.eq("objects-user show equals the create answer", shown, user)
        rc, out, err = self.cli("objects-user", "show", uid, json_output=False)
        self.check("objects-user show (table) prints the access key", rc == 0 and pair.get("access_key", "?") in out,
                   f"exit {rc}, stderr {err.strip()!r}, stdout {out[:300]!r}")
        shown = self.cli_json("objects-user show <display name>", "objects-user", "show", name)
        self.check("objects-user show <display name> finds the user by display_name",
                   isinstance(shown, list) and self.list_ids(shown, "id") == [uid], f"got {one_line(shown, 200)}")

        other = self.cli_json("objects-user create (same display name)", "objects-user", "create",
                              "--display-name", name)
        if isinstance(other, dict) and other.get("href"):
            self.cleanup.append(other["href"])
        oid = other.get("id") if isinstance(other, dict) else None
        self.check("a second user with the same display name is a new user", oid and oid != uid, f"id {oid!r}")
        self.check("the second user has its own keys", (other.get("keys") or [{}])[0] != pair,
                   f"keys {other.get('keys')!r}")
        lst = self.cli_list("objects-user list", "objects-user", "list")
        self.check("objects-user list contains both users", {uid, oid} <= set(self.list_ids(lst, "id")), "not listed")
        lst = self.cli_list("objects-user list --filter-tag", "objects-user", "list", "--filter-tag", f"run={self.rid}")
        self.eq("objects-user list --filter-tag finds exactly the tagged user", self.list_ids(lst, "id"), [uid])
        lst = self.cli_list("objects-user list --filter-tag <key>", "objects-user", "list", "--filter-tag", "run")
        self.check("objects-user list --filter-tag <key> finds the tagged user", uid in self.list_ids(lst, "id"),
                   f"got {self.list_ids(lst, 'id')!r}")
        self.cli_fails("objects-user update <ambiguous display name> fails",
                       ["objects-user", "update", name, "--display-name", "x"], "More than one resource")

        new_name = name + "-renamed"
        upd = self.cli_json("objects-user update --display-name --tag", "objects-user", "update", uid,
                            "--display-name", new_name, "--tag", "extra=1")
        self.eq("objects-user update: renamed", upd.get("display_name"), new_name)
        self.eq("objects-user update: tag added", upd.get("tags"), {"run": self.rid, "extra": "1"})
        self.eq("objects-user update: keys unchanged", upd.get("keys"), keys)
        upd = self.cli_json("objects-user update --clear-tag", "objects-user", "update", uid, "--clear-tag", "extra")
        self.eq("objects-user update: tag removed", upd.get("tags"), {"run": self.rid})
        upd = self.cli_json("objects-user update <display name> --clear-all-tags", "objects-user", "update",
                            new_name, "--clear-all-tags")
        self.eq("objects-user update by display name: tags cleared", upd.get("tags"), {})
        self.eq("objects-user update by display name: same user", upd.get("id"), uid)
        status, data, raw = self.http("POST", "/objects-users", {})
        self.check("objects-user POST without display_name is 400 naming display_name",
                   status == 400 and is_flat_error(data) and "display_name" in (data or {}), f"{status} {raw[:200]!r}")
        status, data, raw = self.http("GET", f"/objects-users/{'0' * 64}")
        self.check("objects-user GET of an unknown id is 404 'Not found.'",
                   status == 404 and data == {"detail": "Not found."}, f"{status} {raw[:200]!r}")

        self.cli_delete("objects-user delete --force", "objects-user", uid)
        if oid:
            self.cli_delete("objects-user delete (second user) --force", "objects-user", oid)
        lst = self.cli_list("objects-user list (after delete)", "objects-user", "list")
        self.check("deleted users are gone from objects-user list", not {uid, oid} & set(self.list_ids(lst, "id")),
                   "still listed")
        self.cli_fails("objects-user show <deleted id> fails", ["objects-user", "show", uid], "No resource found")

    # ---- custom images --------------------------------------------------------

    def _import_args(self, url, name, slug, *extra):
        return ["custom-image", "import", "--url", url, "--name", name, "--slug", slug,
                "--user-data-handling", "pass-through", "--zone", "lpg1", "--zone", "rma1", *extra]

    def _check_custom_image(self, img, name, slug):
        self.eq("custom-image: name", img.get("name"), name)
        self.eq("custom-image: slug", img.get("slug"), slug)
        self.eq("custom-image: user_data_handling", img.get("user_data_handling"), "pass-through")
        self.eq("custom-image: firmware_type defaults to bios", img.get("firmware_type"), "bios")
        self.eq("custom-image: zones stubs", img.get("zones"), [{"slug": "lpg1"}, {"slug": "rma1"}])
        self.eq("custom-image: tags", img.get("tags"), {"run": self.rid})
        self.check("custom-image: size_gb is a positive integer",
                   isinstance(img.get("size_gb"), int) and img["size_gb"] >= 1, f"size_gb {img.get('size_gb')!r}")
        sums = img.get("checksums") or {}
        self.check("custom-image: checksums md5 (32 hex) and sha256 (64 hex)",
                   bool(HEX32_RE.match(str(sums.get("md5")))) and bool(HEX64_RE.match(str(sums.get("sha256")))),
                   f"checksums {sums!r}")
        self.check_common("custom image", img, "custom-images")

    def section_custom_images(self):
        name, slug = f"acc-img-{self.rid}", f"acc-img-{self.rid}"
        url = f"https://images.example.com/{self.rid}/distro.qcow2"
        img = self.cli_json("custom-image import --wait", *self._import_args(
            url, name, slug, "--source-format", "qcow2", "--tag", f"run={self.rid}", "--wait"))
        self.require("custom-image import --wait prints the image", isinstance(img, dict) and uuid_of(img),
                     f"got {one_line(img, 300)}")
        iid = img["uuid"]
        self.cleanup.append(img.get("href") or f"{self.api}/custom-images/{iid}")
        self._check_custom_image(img, name, slug)
        imp = self.http_get("GET the import", f"/custom-images/import/{iid}")
        self.eq("import: status success", imp.get("status"), "success")
        self.eq("import: error_message empty", imp.get("error_message"), "")
        self.eq("import: url", imp.get("url"), url)
        self.eq("import: custom_image stub", imp.get("custom_image"),
                {"href": f"{self.api}/custom-images/{iid}", "uuid": iid, "name": name})
        self.eq(f"import href is {self.api}/custom-images/import/<uuid>", imp.get("href"),
                f"{self.api}/custom-images/import/{iid}")

        shown = self.cli_json("custom-image show <uuid>", "custom-image", "show", iid)
        self.eq("custom-image show equals the imported image", shown, img)
        shown = self.cli_json("custom-image show <name>", "custom-image", "show", name)
        self.check("custom-image show <name> finds the image by name",
                   isinstance(shown, list) and self.list_ids(shown) == [iid], f"got {one_line(shown, 200)}")
        rc, out, err = self.cli("-v", "custom-image", "show", iid, json_output=False)
        self.check("custom-image show -v (table) prints slug and sha256",
                   rc == 0 and slug in out and str((img.get("checksums") or {}).get("sha256")) in out,
                   f"exit {rc}, stderr {err.strip()!r}, stdout {out[:300]!r}")
        lst = self.cli_list("custom-image list", "custom-image", "list")
        self.check("custom-image list contains the image", iid in self.list_ids(lst), "not listed")
        lst = self.cli_list("custom-image list --filter-tag", "custom-image", "list", "--filter-tag", f"run={self.rid}")
        self.eq("custom-image list --filter-tag finds exactly the image", self.list_ids(lst), [iid])
        lst = self.cli_list("custom-image list --filter-json", "custom-image", "list", "--filter-json",
                            f"[?slug=='{slug}']")
        self.eq("custom-image list --filter-json by slug", self.list_ids(lst), [iid])
        images = self.cli_list("image list (with a custom image)", "image", "list")
        self.check("image list shows no custom image",
                   not any(i.get("name") == name or str(i.get("slug", "")).startswith("custom:") for i in images),
                   f"{len(images)} images")

        self._custom_image_server(iid, name, slug)
        self._custom_image_update(iid, name, slug)
        self._custom_image_failures()

        # a second import without --wait, then delete both through `list --delete`
        url2 = f"https://images.example.com/{self.rid}/other.raw"
        rc, out, err = self.cli(*self._import_args(url2, name + "-2", slug + "-2", "--tag", f"run={self.rid}"))
        self.check("custom-image import (no --wait) returns at once",
                   rc == 0 and "Import continues in the background" in out, f"rc {rc}, {err.strip()!r} {out!r}")
        code, imports, raw = self.http("GET", "/custom-images/import")
        mine = [i for i in (imports or []) if isinstance(i, dict) and i.get("url") == url2]
        self.require("the background import is listed", code == 200 and len(mine) == 1, f"{code} {raw[:200]!r}")
        self.check("the background import is in_progress or success, never started",
                   mine[0].get("status") in ("in_progress", "success"), f"status {mine[0].get('status')!r}")
        code, data = self.wait_for(mine[0]["href"], lambda d: d.get("status") != "in_progress", timeout=30)
        self.eq("the background import reaches success", (data or {}).get("status"), "success")
        rc, out, err = self.cli("custom-image", "list", "--filter-tag", f"run={self.rid}", "--delete", "--force")
        self.check("custom-image list --filter-tag --delete --force deletes both images",
                   rc == 0 and f"{iid} deleted!" in out and f"{mine[0]['uuid']} deleted!" in out,
                   f"rc {rc}, stderr {err.strip()!r}, stdout {out[-300:]!r}")
        lst = self.cli_list("custom-image list (after delete)", "custom-image", "list")
        self.check("deleted images are gone from custom-image list",
                   not {iid, mine[0]["uuid"]} & set(self.list_ids(lst)), "still listed")
        self.cli_fails("custom-image show <deleted uuid> fails", ["custom-image", "show", iid], "No resource found")

    def _custom_image_server(self, iid, name, slug):
        want = {"slug": f"custom:{slug}", "name": name, "operating_system": "", "default_username": ""}
        created = self.cli_json("server create --image custom:<slug>", "server", "create", "--name",
                                f"acc-custom-{self.rid}", "--flavor", "flex-4-2", "--image", f"custom:{slug}",
                                "--zone", "lpg1", "--user-data", "#cloud-config\n")
        srv = created[0] if isinstance(created, list) and created else {}
        if srv.get("href"):
            self.cleanup.append(srv["href"])
        self.eq("server from custom:<slug>: image stub in the create answer", srv.get("image"), want)
        status, data, raw = self.http("POST", "/servers", {"name": f"acc-custom2-{self.rid}", "flavor": "flex-4-2",
                                                            "image": iid, "zone": "rma1"})
        if status == 201 and isinstance(data, dict) and data.get("href"):
            self.cleanup.append(data["href"])
        self.check("server from the custom image UUID: same stub", status == 201 and (data or {}).get("image") == want,
                   f"{status} {raw[:300]!r}")
        for s in (srv, data or {}):
            if s.get("uuid"):
                self.cli_delete("server delete (custom image server)", "server", s["uuid"])

    def _custom_image_update(self, iid, name, slug):
        upd = self.cli_json("custom-image update --name --slug --user-data-handling --tag", "custom-image", "update",
                            iid, "--name", name + "-renamed", "--slug", slug + "-renamed",
                            "--user-data-handling", "extend-cloud-config", "--tag", "extra=1")
        self.eq("custom-image update: renamed", upd.get("name"), name + "-renamed")
        self.eq("custom-image update: new slug", upd.get("slug"), slug + "-renamed")
        self.eq("custom-image update: user_data_handling", upd.get("user_data_handling"), "extend-cloud-config")
        self.eq("custom-image update: tag added", upd.get("tags"), {"run": self.rid, "extra": "1"})
        upd = self.cli_json("custom-image update --clear-tag", "custom-image", "update", iid, "--clear-tag", "extra")
        self.eq("custom-image update: tag removed", upd.get("tags"), {"run": self.rid})
        upd = self.cli_json("custom-image update <name> --name --slug (back)", "custom-image", "update",
                            name + "-renamed", "--name", name, "--slug", slug, "--user-data-handling", "pass-through")
        self.eq("custom-image update by name: same image", upd.get("uuid"), iid)
        self.eq("custom-image update by name: name back", upd.get("name"), name)
        status, data, raw = self.http("PATCH", f"/custom-images/{iid}", {"firmware_type": "uefi"})
        self.check("custom-image PATCH firmware_type is 400 naming firmware_type",
                   status == 400 and is_flat_error(data) and "firmware_type" in (data or {}), f"{status} {raw[:200]!r}")
        status, data, raw = self.http("PATCH", f"/custom-images/{iid}", {"zones": ["rma1"]})
        self.check("custom-image PATCH zones is 400 naming zones",
                   status == 400 and is_flat_error(data) and "zones" in (data or {}), f"{status} {raw[:200]!r}")

    def _custom_image_failures(self):
        missing = f"https://images.example.com/{self.rid}/missing.raw"
        status, _, raw = self.http("POST", self.base + "/_fake/downloads", {"url": missing, "status": 404}, token=None)
        self.require("POST /_fake/downloads declares a missing URL", status == 200, f"{status} {raw[:200]!r}")
        rc, out, err = self.cli(*self._import_args(missing, f"acc-missing-{self.rid}", "missing", "--wait"))
        self.check("custom-image import --wait of a missing URL fails with 'Import failed.'",
                   rc != 0 and "Import failed." in out, f"rc {rc}, stderr {err.strip()!r}, stdout {out[:200]!r}")
        code, imports, raw = self.http("GET", "/custom-images/import")
        failed = [i for i in (imports or []) if isinstance(i, dict) and i.get("url") == missing]
        self.check("the failed import stays listed with 'Expected HTTP 200, got HTTP 404'",
                   len(failed) == 1 and failed[0].get("status") == "failed"
                   and failed[0].get("error_message") == "Expected HTTP 200, got HTTP 404", f"{code} {raw[:300]!r}")
        if failed:
            code, data, raw = self.http("GET", f"/custom-images/{failed[0]['uuid']}")
            self.eq("a failed import makes no custom image (404)", code, 404)
        status, data, raw = self.http("POST", "/custom-images/import", {"url": missing, "name": "x"})
        self.check("import without user_data_handling and zones is 400 naming both",
                   status == 400 and is_flat_error(data) and {"user_data_handling", "zones"} <= set(data or {}),
                   f"{status} {raw[:200]!r}")
        status, data, raw = self.http("GET", f"/custom-images/import/{uuidlib.uuid4()}")
        self.check("GET of an unknown import is 404 'Not found.'",
                   status == 404 and data == {"detail": "Not found."}, f"{status} {raw[:200]!r}")

    # ---- network deletes -----------------------------------------------------

    def section_network_delete(self):
        for label, net in (("with auto subnet", self.net_auto), ("A (with subnet A)", self.net_a),
                           ("B (empty)", self.net_b)):
            if not net:
                self.fail(f"network delete {label}", "skipped: network missing")
                continue
            self.cli_delete(f"network delete {label} --force", "network", net["uuid"])
        lst = self.cli_list("network list (after delete)", "network", "list")
        ids = self.list_ids(lst)
        for label, net in (("auto", self.net_auto), ("A", self.net_a), ("B", self.net_b)):
            if net:
                self.check(f"deleted network {label} is gone from network list", net["uuid"] not in ids, "still listed")
        subs = self.cli_list("subnet list (after network delete)", "subnet", "list")
        sids = self.list_ids(subs)
        auto = (self.net_auto or {}).get("subnets") or []
        if auto and isinstance(auto[0], dict):
            self.check("auto-created subnet is gone with its network", auto[0].get("uuid") not in sids, "still listed")
        if self.subnet_a:
            self.check("subnet A is gone with its network", self.subnet_a["uuid"] not in sids, "still listed")
        if self.net_a:
            self.cli_fails("network show <deleted uuid> fails", ["network", "show", self.net_a["uuid"]],
                           "No resource found")

    @staticmethod
    def _ip_version(addr):
        try:
            return ipaddress.ip_address(addr).version
        except (TypeError, ValueError):
            return None

    # ---- driver -------------------------------------------------------------

    def run_section(self, name, fn):
        try:
            fn()
        except Abort:
            self.fail(f"section {name}", "aborted after the failed check above")
        except Exception as e:  # keep going with the next section
            self.fail(f"section {name}", f"unexpected {type(e).__name__}: {e}")

    def run(self):
        sections = [
            ("transport", self.section_transport),
            ("catalogue", self.section_catalogue),
            ("server groups", self.section_server_group),
            ("servers", self.section_server),
            ("networks", self.section_networks),
            ("subnets", self.section_subnets),
            ("floating IPs", self.section_floating_ips),
            ("volumes", self.section_volumes),
            ("server delete", self.section_server_delete),
            ("volumes after server delete", self.section_volumes_after_server_delete),
            ("floating IP delete", self.section_floating_ip_delete),
            ("server group delete", self.section_server_group_delete),
            ("objects users", self.section_objects_users),
            ("custom images", self.section_custom_images),
            ("failing commands", self.section_failures),
            ("load balancers", self.section_load_balancers),
            ("network delete", self.section_network_delete),
        ]
        for name, fn in sections:
            self.run_section(name, fn)

    def best_effort_cleanup(self):
        for href in reversed(self.cleanup):
            try:
                status, _, _ = self.http("GET", href, timeout=5)
                if status == 200:
                    self.http("DELETE", href, timeout=5)
            except Exception:
                pass

    def close(self):
        shutil.rmtree(self.workdir, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cli", required=True, help="path to the cloudscale executable (cloudscale-cli 1.5.0)")
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--fakecloud", help="path to the fakecloud binary to start")
    src.add_argument("--base-url", help="base URL of a running fakecloud, e.g. http://127.0.0.1:8080 (no /v1)")
    ap.add_argument("--token", help="API token for --base-url")
    args = ap.parse_args()

    cli = shutil.which(args.cli) or args.cli
    cli = os.path.abspath(cli)
    if not os.access(cli, os.X_OK):
        print(f"error: CLI not executable: {args.cli}", file=sys.stderr)
        return 2
    if args.base_url and not args.token:
        ap.error("--base-url needs --token")

    def on_signal(signum, _frame):
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGHUP, on_signal)

    fake = None
    acc = None
    started = time.monotonic()
    try:
        if args.fakecloud:
            binary = os.path.abspath(args.fakecloud)
            fake = FakecloudProcess(binary)
            try:
                base = fake.start()
            except Exception as e:
                print(f"FAIL - start fakecloud: {one_line(str(e))}")
                print("0 passed, 1 failed")
                return 1
            token = FAKECLOUD_TOKEN
        else:
            base, token = args.base_url, args.token
        if base.rstrip("/").endswith("/v1"):
            base = base.rstrip("/")[: -len("/v1")]
        acc = Acceptance(cli, base, token, managed=bool(fake))
        print(f"# fakecloud at {acc.base}, CLI {cli}, run id {acc.rid}", flush=True)
        acc.run()
        if not fake:
            acc.best_effort_cleanup()
        if fake and fake.proc.poll() is not None:
            acc.fail("fakecloud still running at the end", f"exited with {fake.proc.returncode}; "
                     f"stderr: {one_line(fake.stderr_tail(500))}")
    except KeyboardInterrupt:
        if acc:
            acc.fail("run", "interrupted")
    finally:
        if fake:
            fake.stop()
        if acc:
            acc.close()
    print(f"# took {time.monotonic() - started:.1f}s", flush=True)
    passed = acc.passed if acc else 0
    failed = acc.failed if acc else 1
    print(f"{passed} passed, {failed} failed", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
