#!/usr/bin/env python3
"""The official Kubernetes Python client (`kubernetes` on PyPI) against the testbed's
embedded API server (scenarios/src/apiserver/).

Starts `testbed` (its CCM initializes the Nodes, so the Deployment of the YAML check rolls
out; its controllers also write Pods and Deployments, hence replace retries on a conflict),
loads the kubeconfig it writes with `kubernetes.config.load_kube_config` and checks:

- discovery (`/api/v1`, `/apis`) parses into the client's typed models, and every kind it
  lists gets a create, read, list, replace and delete through the client's typed API class
  (the dynamic client for a kind without one);
- JSON patch, merge patch, strategic merge patch and server-side apply on one object;
- a watch from a list's resourceVersion: the changes after it in order, nothing before;
- an informer-like loop (list, watch with a server-side timeout, reconnect from the last
  resourceVersion) seeing adds, updates and deletes across reconnects;
- `kubernetes.utils.create_from_yaml` of a multi-document file with several kinds;
- error bodies of a 404, a 409 and a 422: `ApiException.status` and the Status body's
  reason, message and details, its fields in kube-apiserver's order;
- what the server adds to Jobs, ReplicationControllers and APIServices: a Job's generated
  selector, a ReplicationController's scale, a local APIService's `Available` condition, a
  Job's 422.

Prints `ok - <what>` or `FAIL - <what>: <detail>` per check and `N passed, M failed` last;
exits 1 on a failure.

    target/cli-venv/bin/python ci/kube_python_client.py [--testbed target/ci/testbed]
"""

import argparse
import json
import os
import re
import sys
import tempfile
import threading
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from testbed_process import TestbedProcess  # noqa: E402

from kubernetes import client, config, dynamic, utils, watch
from kubernetes.client.exceptions import ApiException

NS = "pyclient"
RESULTS = {"passed": 0, "failed": 0}


def ok(what):
    RESULTS["passed"] += 1
    print(f"ok - {what}", flush=True)


def fail(what, detail):
    RESULTS["failed"] += 1
    print(f"FAIL - {what}: {detail}", flush=True)


def check(what, cond, detail=""):
    if cond:
        ok(what)
    else:
        fail(what, detail)
    return cond


def attempt(what, fn):
    """Runs one check: an exception fails it (with the client's message)."""
    try:
        result = fn()
    except ApiException as e:
        fail(what, f"ApiException {e.status}: {e.body}")
        return None
    except Exception as e:  # noqa: BLE001 - any client error is the check's failure
        fail(what, f"{type(e).__name__}: {e}")
        traceback.print_exc(file=sys.stderr)
        return None
    ok(what)
    return result


# ---- the testbed ------------------------------------------------------------------------


class Testbed(TestbedProcess):
    """The testbed binary with 3 nodes, its kubeconfig and CCM log in `workdir`."""

    def __init__(self, binary, workdir):
        self.kubeconfig = os.path.join(workdir, "kubeconfig")
        super().__init__([binary, "--nodes", "3", "--kubeconfig", self.kubeconfig,
                          "--ccm-log", os.path.join(workdir, "ccm.log")])


# ---- helpers ----------------------------------------------------------------------------


def snake(kind):
    """`PodDisruptionBudget` -> `pod_disruption_budget`, `APIService` -> `api_service`, as
    the client names its methods."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", kind).lower()


def raw_get(api_client, path):
    """A GET through the client's own transport (its TLS and token), parsed."""
    method, url, headers, _, _ = api_client.param_serialize(
        "GET", path, header_params={"Accept": "application/json"}, auth_settings=["BearerToken"])
    resp = api_client.call_api(method, url, headers)
    resp.read()
    return json.loads(resp.data)


def error_of(fn):
    """The ApiException `fn` raises (None if it raises none)."""
    try:
        fn()
    except ApiException as e:
        return e
    return None


def wait_until(what, cond, timeout=10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(0.1)
    return False


def gone(read):
    """`read` answers 404."""
    e = error_of(read)
    return e is not None and e.status == 404


# ---- objects for every served kind ------------------------------------------------------

POD_TEMPLATE = {
    "metadata": {"labels": {"app": "py"}},
    "spec": {"containers": [{"name": "c", "image": "nginx:1.27"}]},
}

# (group, kind) -> a minimal valid object (name and namespace are filled in).
BODIES = {
    ("", "Namespace"): {},
    ("", "Node"): {},
    ("", "Service"): {"spec": {"type": "ClusterIP", "ports": [{"port": 80, "targetPort": 8080}]}},
    ("", "Endpoints"): {"subsets": [{"addresses": [{"ip": "10.0.0.1"}], "ports": [{"port": 8080}]}]},
    ("", "Pod"): {"spec": POD_TEMPLATE["spec"]},
    ("", "Secret"): {"stringData": {"k": "v"}},
    ("", "ConfigMap"): {"data": {"k": "v"}},
    ("", "Event"): {
        "involvedObject": {"kind": "Pod", "name": "p", "namespace": NS},
        "reason": "Tested", "message": "by the Python client", "type": "Normal",
    },
    ("", "ServiceAccount"): {},
    ("discovery.k8s.io", "EndpointSlice"): {
        "addressType": "IPv4",
        "endpoints": [{"addresses": ["10.0.0.1"]}],
        "ports": [{"port": 8080, "protocol": "TCP"}],
    },
    ("events.k8s.io", "Event"): {
        "eventTime": "2026-01-01T00:00:00.000000Z",
        "reportingController": "py/client", "reportingInstance": "py-1",
        "action": "Test", "reason": "Tested", "note": "by the Python client", "type": "Normal",
        "regarding": {"kind": "Pod", "name": "p", "namespace": NS},
    },
    ("coordination.k8s.io", "Lease"): {"spec": {"holderIdentity": "py", "leaseDurationSeconds": 15}},
    ("apps", "Deployment"): {
        "spec": {"replicas": 0, "selector": {"matchLabels": {"app": "py"}}, "template": POD_TEMPLATE},
    },
    ("apps", "ReplicaSet"): {
        "spec": {"replicas": 0, "selector": {"matchLabels": {"app": "py"}}, "template": POD_TEMPLATE},
    },
    ("apps", "DaemonSet"): {
        "spec": {"selector": {"matchLabels": {"app": "py"}}, "template": POD_TEMPLATE},
    },
    ("", "ReplicationController"): {"spec": {"replicas": 0, "template": POD_TEMPLATE}},
    # The server generates the Job's selector and labels its template.
    ("batch", "Job"): {
        "spec": {"template": {**POD_TEMPLATE, "spec": {**POD_TEMPLATE["spec"], "restartPolicy": "Never"}}},
    },
    ("batch", "CronJob"): {
        "spec": {"schedule": "*/5 * * * *", "jobTemplate": {"spec": {"template": {
            **POD_TEMPLATE, "spec": {**POD_TEMPLATE["spec"], "restartPolicy": "OnFailure"}}}}},
    },
    # A local APIService (`service: null`); its name must be `<version>.<group>`.
    ("apiregistration.k8s.io", "APIService"): {
        "spec": {"group": "py-crud.example.com", "version": "v1",
                 "groupPriorityMinimum": 1000, "versionPriority": 15},
    },
    ("policy", "PodDisruptionBudget"): {
        "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "py"}}},
    },
    ("rbac.authorization.k8s.io", "ClusterRole"): {
        "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}],
    },
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"): {
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "py-crud"},
        "subjects": [{"kind": "ServiceAccount", "name": "default", "namespace": NS}],
    },
    ("rbac.authorization.k8s.io", "Role"): {
        "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}],
    },
    ("rbac.authorization.k8s.io", "RoleBinding"): {
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "py-crud"},
        "subjects": [{"kind": "ServiceAccount", "name": "default", "namespace": NS}],
    },
}

# The typed API class of each group (its `v1` version).
TYPED = {
    "": client.CoreV1Api,
    "apps": client.AppsV1Api,
    "discovery.k8s.io": client.DiscoveryV1Api,
    "events.k8s.io": client.EventsV1Api,
    "coordination.k8s.io": client.CoordinationV1Api,
    "policy": client.PolicyV1Api,
    "batch": client.BatchV1Api,
    "apiregistration.k8s.io": client.ApiregistrationV1Api,
    "rbac.authorization.k8s.io": client.RbacAuthorizationV1Api,
}


def served_kinds(api_client):
    """(group, version, kind, plural, namespaced) of every resource discovery lists, through
    the client's typed discovery models."""
    out = []
    core = client.CoreV1Api(api_client).get_api_resources()
    for r in core.resources:
        if "/" not in r.name:
            out.append(("", "v1", r.kind, r.name, r.namespaced))
    groups = client.ApisApi(api_client).get_api_versions()
    for g in groups.groups:
        gv = g.preferred_version.group_version
        listed = raw_get(api_client, f"/apis/{gv}")
        # The typed model of the group-version's resource list too.
        parsed = client.V1APIResourceList.from_dict(listed)
        for r in parsed.resources:
            if "/" not in r.name:
                out.append((g.name, g.preferred_version.version, r.kind, r.name, r.namespaced))
    return out


def crud_typed(api_client, group, kind, namespaced):
    """Create, read, list, replace and delete one object of `kind` with the typed API."""
    api = TYPED[group](api_client)
    s = snake(kind)
    what = f"{group or 'core'}/{kind}"
    name = "py-crud"
    scope = "namespaced_" if namespaced else ""
    ns_args = (NS,) if namespaced else ()
    api_version = f"{group}/v1" if group else "v1"
    # Listed by label: the testbed's kubelets write core Events without `eventTime`, which
    # the client's EventsV1Event refuses (kube-apiserver serves them as `eventTime: null`
    # too: kubernetes-client/python#1616).
    meta = {"name": name, "labels": {"py": "crud"}, **({"namespace": NS} if namespaced else {})}
    body = {"apiVersion": api_version, "kind": kind, "metadata": meta, **BODIES[(group, kind)]}
    # Core and events.k8s.io Events are one kind twice: distinct names keep them apart.
    if kind == "Event":
        body["metadata"]["name"] = name = f"py-crud-{group or 'core'}"
    if kind == "Namespace":
        body["metadata"]["name"] = name = "py-crud-ns"
    if kind == "APIService":
        body["metadata"]["name"] = name = "v1.py-crud.example.com"
    created = attempt(f"{what}: create", lambda: getattr(api, f"create_{scope}{s}")(*ns_args, body))
    if created is None:
        return
    check(f"{what}: create answers the typed object", created.metadata.name == name
          and created.metadata.uid and created.metadata.resource_version, repr(created.metadata))
    read = attempt(f"{what}: read", lambda: getattr(api, f"read_{scope}{s}")(name, *ns_args))
    if read is not None:
        check(f"{what}: read answers what was created", read.metadata.uid == created.metadata.uid,
              f"{read.metadata.uid} != {created.metadata.uid}")
    listed = attempt(f"{what}: list",
                     lambda: getattr(api, f"list_{scope}{s}")(*ns_args, label_selector="py=crud"))
    if listed is not None:
        names = [i.metadata.name for i in listed.items]
        check(f"{what}: list holds it, with a resourceVersion",
              name in names and listed.metadata.resource_version, f"{names}")
    def replace():
        # Read, change, replace; again on a conflict (the testbed's controllers write Pods
        # and Deployments too), as client-go's `retry.RetryOnConflict` does.
        for _ in range(10):
            current = getattr(api, f"read_{scope}{s}")(name, *ns_args)
            current.metadata.labels = {**(current.metadata.labels or {}), "replaced": "yes"}
            try:
                return current, getattr(api, f"replace_{scope}{s}")(name, *ns_args, current)
            except ApiException as e:
                if e.status != 409:
                    raise
        raise RuntimeError("a conflict on every attempt")

    if read is not None:
        result = attempt(f"{what}: replace", replace)
        if result is not None:
            read, replaced = result
            check(f"{what}: replace stores the change and a new resourceVersion",
                  (replaced.metadata.labels or {}).get("replaced") == "yes"
                  and replaced.metadata.resource_version != read.metadata.resource_version,
                  repr(replaced.metadata))
    if attempt(f"{what}: delete", lambda: getattr(api, f"delete_{scope}{s}")(name, *ns_args)) is None:
        return
    # A Namespace terminates first (it is empty, so that is quick).
    check(f"{what}: read after delete is 404",
          wait_until("deleted", lambda: gone(lambda: getattr(api, f"read_{scope}{s}")(name, *ns_args))),
          "still there")


def crud_dynamic(dyn, group, version, kind, namespaced):
    """The same for a kind without a typed API class here: the dynamic client."""
    what = f"{group or 'core'}/{kind} (dynamic)"
    res = dyn.resources.get(api_version=f"{group}/{version}" if group else version, kind=kind)
    ns = NS if namespaced else None
    body = {"apiVersion": res.group_version, "kind": kind,
            "metadata": {"name": "py-crud", **({"namespace": NS} if namespaced else {})},
            **BODIES.get((group, kind), {})}
    if attempt(f"{what}: create", lambda: res.create(body=body, namespace=ns)) is None:
        return
    got = attempt(f"{what}: read", lambda: res.get(name="py-crud", namespace=ns))
    attempt(f"{what}: list", lambda: res.get(namespace=ns))
    if got is not None:
        obj = got.to_dict()
        obj["metadata"].setdefault("labels", {})["replaced"] = "yes"
        attempt(f"{what}: replace", lambda: res.replace(body=obj, namespace=ns))
    attempt(f"{what}: delete", lambda: res.delete(name="py-crud", namespace=ns))


# ---- the checks -------------------------------------------------------------------------


def check_crud(api_client):
    kinds = attempt("discovery (/api/v1, /apis) parses into the typed models",
                    lambda: served_kinds(api_client))
    if not kinds:
        return
    check("discovery lists at least the core, apps, rbac and coordination kinds",
          {("", "ConfigMap"), ("apps", "Deployment"), ("rbac.authorization.k8s.io", "Role"),
           ("coordination.k8s.io", "Lease")} <= {(g, k) for g, _, k, _, _ in kinds}, f"{kinds}")
    dyn = None
    for group, version, kind, _plural, namespaced in kinds:
        if group in TYPED and version == "v1" and (group, kind) in BODIES:
            crud_typed(api_client, group, kind, namespaced)
        else:
            dyn = dyn or dynamic.DynamicClient(api_client)
            crud_dynamic(dyn, group, version, kind, namespaced)


def check_patches(api_client):
    """The four patch types, one after the other, on one Service."""
    v1 = client.CoreV1Api(api_client)
    name = "py-patch"
    v1.create_namespaced_service(NS, {
        "metadata": {"name": name, "labels": {"keep": "yes"}},
        "spec": {"ports": [{"name": "http", "port": 80, "targetPort": 8080}]},
    })
    # JSON patch: a list of operations (the client's default content type for a list).
    svc = attempt("JSON patch applies its operations", lambda: v1.patch_namespaced_service(
        name, NS, [{"op": "add", "path": "/metadata/labels/json", "value": "1"},
                   {"op": "test", "path": "/metadata/labels/keep", "value": "yes"}]))
    if svc is not None:
        check("JSON patch: label added", svc.metadata.labels == {"keep": "yes", "json": "1"},
              f"{svc.metadata.labels}")
    e = error_of(lambda: v1.patch_namespaced_service(
        name, NS, [{"op": "test", "path": "/metadata/labels/keep", "value": "no"}]))
    check("JSON patch: a failed test operation is refused (422)", e is not None and e.status == 422,
          f"{e and e.status}: {e and e.body}")
    # Merge patch: null removes, lists are replaced whole.
    svc = attempt("merge patch applies", lambda: v1.patch_namespaced_service(
        name, NS, {"metadata": {"labels": {"json": None, "merge": "1"}}},
        _content_type="application/merge-patch+json"))
    if svc is not None:
        check("merge patch: null removes a label, others stay",
              svc.metadata.labels == {"keep": "yes", "merge": "1"}, f"{svc.metadata.labels}")
    # Strategic merge patch (the client's default for an object body): ports merge by port.
    svc = attempt("strategic merge patch applies", lambda: v1.patch_namespaced_service(
        name, NS, {"spec": {"ports": [{"name": "https", "port": 443, "targetPort": 8443}]}}))
    if svc is not None:
        check("strategic merge patch: ports merge by port",
              sorted(p.port for p in svc.spec.ports) == [80, 443], f"{svc.spec.ports}")
    # Server-side apply, through the dynamic client.
    dyn = dynamic.DynamicClient(api_client)
    services = dyn.resources.get(api_version="v1", kind="Service")
    applied = attempt("server-side apply (dynamic client) applies", lambda: services.server_side_apply(
        body={"apiVersion": "v1", "kind": "Service",
              "metadata": {"name": name, "namespace": NS, "labels": {"applied": "1"}}},
        name=name, namespace=NS, field_manager="py-client", force_conflicts=True))
    if applied is not None:
        check("server-side apply: the applied label is set",
              applied.metadata.labels["applied"] == "1", f"{applied.metadata.labels}")
    created = attempt("server-side apply creates what does not exist", lambda: v1.patch_namespaced_config_map(
        "py-applied", NS,
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "py-applied"}, "data": {"a": "1"}},
        field_manager="py-client", _content_type="application/apply-patch+yaml"))
    if created is not None:
        check("server-side apply: created with its data", created.data == {"a": "1"}, f"{created.data}")
    v1.delete_namespaced_service(name, NS)


def check_watch_from_list(api_client):
    v1 = client.CoreV1Api(api_client)
    labels = {"watch": "from-list"}
    v1.create_namespaced_config_map(NS, {"metadata": {"name": "w-before", "labels": labels}})
    listed = v1.list_namespaced_config_map(NS, label_selector="watch=from-list")
    rv = listed.metadata.resource_version
    check("watch: the list holds the object made before it",
          [i.metadata.name for i in listed.items] == ["w-before"], f"{listed.items}")
    v1.create_namespaced_config_map(NS, {"metadata": {"name": "w-after", "labels": labels}})
    v1.patch_namespaced_config_map("w-after", NS, {"data": {"k": "v"}})
    v1.delete_namespaced_config_map("w-after", NS)
    w = watch.Watch()
    seen = []
    try:
        for ev in w.stream(v1.list_namespaced_config_map, NS, label_selector="watch=from-list",
                           resource_version=rv, timeout_seconds=3):
            seen.append((ev["type"], ev["object"].metadata.name, ev["object"].metadata.resource_version))
            if len(seen) == 3:
                w.stop()
    except Exception as e:  # noqa: BLE001
        fail("watch from a list's resourceVersion", f"{type(e).__name__}: {e}")
        return
    check("watch: ADDED, MODIFIED, DELETED after the list's resourceVersion, in order",
          [(t, n) for t, n, _ in seen] == [("ADDED", "w-after"), ("MODIFIED", "w-after"), ("DELETED", "w-after")],
          f"{seen}")
    check("watch: events carry increasing resourceVersions above the list's",
          all(int(r) > int(rv) for _, _, r in seen)
          and [int(r) for _, _, r in seen] == sorted(int(r) for _, _, r in seen), f"rv {rv}: {seen}")
    check("watch: nothing from before the list", all(n != "w-before" for _, n, _ in seen), f"{seen}")


def check_informer(api_client):
    """List, then watch from the list's resourceVersion with a 2 s server-side timeout,
    reconnecting from the last resourceVersion seen, while another thread writes across the
    reconnects."""
    v1 = client.CoreV1Api(api_client)
    sel = "informer=py"
    listed = v1.list_namespaced_config_map(NS, label_selector=sel)
    cache = {i.metadata.name: i.data for i in listed.items}
    rv = listed.metadata.resource_version
    log = []

    def writer():
        labels = {"informer": "py"}
        v1.create_namespaced_config_map(NS, {"metadata": {"name": "inf-a", "labels": labels}, "data": {"v": "1"}})
        time.sleep(2.5)  # past the first watch's timeout
        v1.patch_namespaced_config_map("inf-a", NS, {"data": {"v": "2"}})
        v1.create_namespaced_config_map(NS, {"metadata": {"name": "inf-b", "labels": labels}, "data": {"v": "1"}})
        time.sleep(2.5)
        v1.delete_namespaced_config_map("inf-a", NS)

    t = threading.Thread(target=writer, daemon=True)
    t.start()
    connections = 0
    deadline = time.monotonic() + 15
    try:
        while time.monotonic() < deadline:
            connections += 1
            started = time.monotonic()
            w = watch.Watch()
            for ev in w.stream(v1.list_namespaced_config_map, NS, label_selector=sel,
                               resource_version=rv, timeout_seconds=2):
                o = ev["object"]
                rv = o.metadata.resource_version
                log.append((ev["type"], o.metadata.name))
                if ev["type"] == "DELETED":
                    cache.pop(o.metadata.name, None)
                else:
                    cache[o.metadata.name] = o.data
            if time.monotonic() - started > 5:
                fail("informer: the server ends a watch after timeoutSeconds", "a watch lasted over 5 s")
                break
            if not t.is_alive() and cache == {"inf-b": {"v": "1"}}:
                break
    except Exception as e:  # noqa: BLE001
        fail("informer loop", f"{type(e).__name__}: {e}")
        return
    t.join(timeout=10)
    check("informer: reconnected after the server-side timeout", connections >= 3, f"{connections} connections")
    check("informer: saw adds, updates and deletes in order",
          log == [("ADDED", "inf-a"), ("MODIFIED", "inf-a"), ("ADDED", "inf-b"), ("DELETED", "inf-a")], f"{log}")
    check("informer: its cache matches the server",
          cache == {i.metadata.name: i.data for i in v1.list_namespaced_config_map(NS, label_selector=sel).items},
          f"{cache}")


MANIFEST = f"""apiVersion: v1
kind: ConfigMap
metadata:
  name: yaml-config
data:
  k: v
---
apiVersion: v1
kind: Service
metadata:
  name: yaml-svc
spec:
  selector: {{app: yaml}}
  ports:
  - port: 80
    targetPort: 8080
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: yaml-deploy
spec:
  replicas: 1
  selector:
    matchLabels: {{app: yaml}}
  template:
    metadata:
      labels: {{app: yaml}}
    spec:
      containers:
      - name: web
        image: nginx:1.27
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: yaml-role
rules:
- apiGroups: [""]
  resources: [configmaps]
  verbs: [get, list]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: yaml-role
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: Role
  name: yaml-role
subjects:
- kind: ServiceAccount
  name: default
  namespace: {NS}
---
apiVersion: coordination.k8s.io/v1
kind: Lease
metadata:
  name: yaml-lease
spec:
  holderIdentity: yaml
"""


def check_create_from_yaml(api_client, workdir):
    path = os.path.join(workdir, "manifest.yaml")
    with open(path, "w") as f:
        f.write(MANIFEST)
    created = attempt("create_from_yaml of a multi-document file",
                      lambda: utils.create_from_yaml(api_client, yaml_file=path, namespace=NS))
    if created is None:
        return
    kinds = [o.kind for group in created for o in group]
    check("create_from_yaml: answers every object, typed",
          kinds == ["ConfigMap", "Service", "Deployment", "Role", "RoleBinding", "Lease"], f"{kinds}")
    reads = [
        ("ConfigMap", lambda: client.CoreV1Api(api_client).read_namespaced_config_map("yaml-config", NS)),
        ("Service", lambda: client.CoreV1Api(api_client).read_namespaced_service("yaml-svc", NS)),
        ("Deployment", lambda: client.AppsV1Api(api_client).read_namespaced_deployment("yaml-deploy", NS)),
        ("Role", lambda: client.RbacAuthorizationV1Api(api_client).read_namespaced_role("yaml-role", NS)),
        ("RoleBinding", lambda: client.RbacAuthorizationV1Api(api_client).read_namespaced_role_binding("yaml-role", NS)),
        ("Lease", lambda: client.CoordinationV1Api(api_client).read_namespaced_lease("yaml-lease", NS)),
    ]
    for kind, read in reads:
        attempt(f"create_from_yaml: the {kind} is stored", read)
    # The Deployment's controller (the testbed's) makes its ReplicaSet and Pod.
    apps = client.AppsV1Api(api_client)
    check("create_from_yaml: the Deployment rolls out",
          wait_until("rollout", lambda: (apps.read_namespaced_deployment("yaml-deploy", NS).status.ready_replicas or 0) == 1,
                     timeout=15), "not ready in 15 s")
    try:
        utils.create_from_yaml(api_client, yaml_file=path, namespace=NS)
        statuses = []
    except utils.FailToCreateError as e:
        statuses = [(x.status, json.loads(x.body)["reason"]) for x in e.api_exceptions]
    check("create_from_yaml again: every object AlreadyExists (409)",
          statuses == [(409, "AlreadyExists")] * 6, f"{statuses}")


STATUS_FIELDS = ["kind", "apiVersion", "metadata", "status", "message", "reason", "details", "code"]


def status_checks(what, e, code, reason, message, details):
    if not check(f"{what}: ApiException status {code}", e is not None and e.status == code,
                 f"{e and e.status}: {e and e.body}"):
        return
    check(f"{what}: the body is JSON ending in a newline", e.body.endswith("}\n"), repr(e.body[-20:]))
    body = json.loads(e.body)
    check(f"{what}: Status fields in kube-apiserver's order",
          [k for k in body if k in STATUS_FIELDS] == [k for k in STATUS_FIELDS if k in body]
          and list(body)[:4] == STATUS_FIELDS[:4], f"{list(body)}")
    status = client.V1Status.from_dict(body)
    check(f"{what}: reason {reason}", status.reason == reason and status.status == "Failure"
          and status.code == code, f"{body}")
    check(f"{what}: message", status.message == message, f"{status.message!r}")
    # The model's view, fields the body left out (None) dropped.
    got = status.details.to_dict() if status.details else None
    if got is not None:
        got = {k: v for k, v in got.items() if v is not None}
        if got.get("causes"):
            got["causes"] = [{k: v for k, v in c.items() if v is not None} for c in got["causes"]]
    check(f"{what}: details", got == details, f"{got}")


def check_errors(api_client):
    v1 = client.CoreV1Api(api_client)
    apps = client.AppsV1Api(api_client)
    rbac = client.RbacAuthorizationV1Api(api_client)
    status_checks("404 of a core kind", error_of(lambda: v1.read_namespaced_config_map("nope", NS)),
                  404, "NotFound", 'configmaps "nope" not found', {"name": "nope", "kind": "configmaps"})
    status_checks("404 of a grouped kind", error_of(lambda: apps.read_namespaced_deployment("nope", NS)),
                  404, "NotFound", 'deployments.apps "nope" not found',
                  {"name": "nope", "group": "apps", "kind": "deployments"})
    v1.create_namespaced_config_map(NS, {"metadata": {"name": "dup"}})
    status_checks("409 AlreadyExists of a core kind",
                  error_of(lambda: v1.create_namespaced_config_map(NS, {"metadata": {"name": "dup"}})),
                  409, "AlreadyExists", 'configmaps "dup" already exists', {"name": "dup", "kind": "configmaps"})
    role = {"metadata": {"name": "dup"}, "rules": []}
    rbac.create_namespaced_role(NS, role)
    status_checks("409 AlreadyExists of a grouped kind", error_of(lambda: rbac.create_namespaced_role(NS, role)),
                  409, "AlreadyExists", 'roles.rbac.authorization.k8s.io "dup" already exists',
                  {"name": "dup", "group": "rbac.authorization.k8s.io", "kind": "roles"})
    stale = v1.read_namespaced_config_map("dup", NS)
    v1.patch_namespaced_config_map("dup", NS, {"data": {"k": "v"}})
    stale.data = {"k": "stale"}
    status_checks("409 Conflict of a stale replace",
                  error_of(lambda: v1.replace_namespaced_config_map("dup", NS, stale)),
                  409, "Conflict",
                  'Operation cannot be fulfilled on configmaps "dup": the object has been modified; '
                  "please apply your changes to the latest version and try again",
                  {"name": "dup", "kind": "configmaps"})
    bad_port = {"metadata": {"name": "bad"}, "spec": {"ports": [{"port": 0}]}}
    e = error_of(lambda: v1.create_namespaced_service(NS, bad_port))
    check("422 of a core kind: ApiException status 422", e is not None and e.status == 422,
          f"{e and e.status}: {e and e.body}")
    if e is not None and e.status == 422:
        body = json.loads(e.body)
        d = body.get("details", {})
        check("422 of a core kind: reason Invalid, details name the Service and the field",
              body.get("reason") == "Invalid" and d.get("kind") == "Service" and d.get("name") == "bad"
              and "group" not in d and any(c.get("field") == "spec.ports[0].port" for c in d.get("causes", [])),
              f"{body}")
        check("422 of a core kind: message", body.get("message", "").startswith('Service "bad" is invalid: spec.ports[0].port'),
              f"{body.get('message')}")
    bad_deploy = {
        "metadata": {"name": "bad"},
        "spec": {"selector": {"matchLabels": {"app": "a"}},
                 "template": {"metadata": {"labels": {"app": "b"}}, "spec": POD_TEMPLATE["spec"]}},
    }
    status_checks("422 of a grouped kind", error_of(lambda: apps.create_namespaced_deployment(NS, bad_deploy)),
                  422, "Invalid",
                  'Deployment.apps "bad" is invalid: spec.template.metadata.labels: Invalid value: '
                  'map[string]string{"app":"b"}: `selector` does not match template `labels`',
                  {"name": "bad", "group": "apps", "kind": "Deployment", "causes": [{
                      "reason": "FieldValueInvalid",
                      "message": 'Invalid value: map[string]string{"app":"b"}: `selector` does not match template `labels`',
                      "field": "spec.template.metadata.labels"}]})


def check_workload_kinds(api_client):
    """What the server adds to the new kinds: a Job's generated selector, the scale of a
    ReplicationController, a local APIService's `Available` condition, the 422 of a Job that
    would restart `Always`."""
    batch = client.BatchV1Api(api_client)
    v1 = client.CoreV1Api(api_client)
    job = batch.create_namespaced_job(NS, {"metadata": {"name": "py-job"}, **BODIES[("batch", "Job")]})
    uid = job.metadata.uid
    check("Job: the selector is generated from its uid",
          job.spec.selector.match_labels == {"batch.kubernetes.io/controller-uid": uid}
          and job.spec.template.metadata.labels.get("batch.kubernetes.io/job-name") == "py-job"
          and job.spec.backoff_limit == 6 and job.spec.completions == 1, repr(job.spec))
    v1.create_namespaced_replication_controller(NS, {
        "metadata": {"name": "py-rc"}, "spec": {"replicas": 1, "template": POD_TEMPLATE}})
    scale = v1.patch_namespaced_replication_controller_scale("py-rc", NS, {"spec": {"replicas": 3}})
    rc = v1.read_namespaced_replication_controller("py-rc", NS)
    check("ReplicationController: scale writes spec.replicas, the selector defaults from the template",
          scale.spec.replicas == 3 and rc.spec.replicas == 3 and rc.spec.selector == {"app": "py"},
          f"{scale.spec} {rc.spec.selector}")
    reg = client.ApiregistrationV1Api(api_client)
    reg.create_api_service({"metadata": {"name": "v1.py-local.example.com"}, "spec": {
        "group": "py-local.example.com", "version": "v1", "groupPriorityMinimum": 1000, "versionPriority": 15}})
    got = reg.read_api_service_status("v1.py-local.example.com")
    conditions = [(c.type, c.status, c.reason) for c in (got.status.conditions or [])]
    check("APIService: a local one is Available", conditions == [("Available", "True", "Local")], f"{conditions}")
    bad_job = {"metadata": {"name": "bad"}, "spec": {"template": POD_TEMPLATE}}
    message = 'Unsupported value: "Always": supported values: "OnFailure", "Never"'
    status_checks("422 of a Job restarting Always", error_of(lambda: batch.create_namespaced_job(NS, bad_job)),
                  422, "Invalid", f'Job.batch "bad" is invalid: spec.template.spec.restartPolicy: {message}',
                  {"name": "bad", "group": "batch", "kind": "Job", "causes": [{
                      "reason": "FieldValueNotSupported", "message": message,
                      "field": "spec.template.spec.restartPolicy"}]})


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--testbed", default="target/ci/testbed")
    args = p.parse_args()
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="kube-python-") as workdir:
        testbed = None
        try:
            testbed = Testbed(args.testbed, workdir)
            config.load_kube_config(config_file=testbed.kubeconfig)
            api_client = client.ApiClient()
            client.CoreV1Api().create_namespace({"metadata": {"name": NS}})
            for name, fn in [("CRUD", lambda: check_crud(api_client)),
                             ("patches", lambda: check_patches(api_client)),
                             ("watch", lambda: check_watch_from_list(api_client)),
                             ("informer", lambda: check_informer(api_client)),
                             ("create_from_yaml", lambda: check_create_from_yaml(api_client, workdir)),
                             ("errors", lambda: check_errors(api_client)),
                             ("workload kinds", lambda: check_workload_kinds(api_client))]:
                try:
                    fn()
                except Exception as e:  # noqa: BLE001 - one group's crash fails it, not the run
                    fail(f"{name} checks", f"{type(e).__name__}: {e}")
                    traceback.print_exc(file=sys.stderr)
        except Exception as e:  # noqa: BLE001
            fail("testbed", f"{type(e).__name__}: {e}")
        finally:
            if testbed is not None:
                testbed.stop()
    print(f"# {time.monotonic() - started:.1f} s", flush=True)
    print(f"{RESULTS['passed']} passed, {RESULTS['failed']} failed", flush=True)
    sys.exit(1 if RESULTS["failed"] else 0)


if __name__ == "__main__":
    main()
