#!/usr/bin/env python3
"""Render a Helm chart as `helm template` would, without helm: Go's own text/template.

No helm binary is available where CI runs, so the chart's templates keep to Go's
text/template built-ins (deploy/chart/README.md) and are executed by the PyPI package
`go_template==0.0.3`, a wheel wrapping Go's `text/template` (no sprig, no Helm functions).

    python ci/render_chart.py [CHART] [-f VALUES.yaml]... [--set KEY=VALUE[,KEY=VALUE]]...
                              [--set-string KEY=VALUE]... [--name RELEASE]
                              [-n NAMESPACE] [--strict] [--out FILE]

    CHART         the chart's directory (default: deploy/chart of this repository)
    -f FILE       values merged over values.yaml, in order (`-` reads standard input)
    --set         Helm's syntax: a.b=c, a.b[0]=c, list={x,y}, 'a\\.b=c' for a key with dots;
                  true/false, integers and null are typed (null deletes the key), the rest
                  are strings; --set-string keeps every value a string. Applied after -f.
    --name        .Release.Name (default: release-name, as `helm template`)
    -n            .Release.Namespace (default: default, as `helm template`; the chart is
                  installed with -n kube-system)
    --strict      fail where a template printed a missing value (Go's "<no value>",
                  which Helm replaces with ""), instead of replacing it
    --out FILE    write there instead of standard output

The data each template gets: `.Values` (values.yaml deep-merged with -f files and --set
pairs as Helm does: the user's values first, -f files merged in order and --set pairs
parsed into them, then coalesced over values.yaml: maps merge, anything else is replaced,
null deletes; so a --set into a list replaces the chart's list), `.Release` (Name, Namespace,
Service: Helm, IsInstall, IsUpgrade, Revision) and `.Chart` (Chart.yaml with Helm's
capitalised keys: Name, Version, AppVersion, APIVersion...).

Each `templates/*.yaml` (and *.yml, *.tpl not starting with `_`; NOTES.txt is skipped) is
rendered in its own Python process with every `templates/_*.tpl` appended to it (Go's
`define` may stand anywhere in a file; appended, the template keeps its line numbers): on
a template error the Go runtime panics and aborts the process, which is reported with the
file and line. The output is one multi-document YAML, documents in Helm's install order
(ServiceAccount, RBAC, Service, Deployment...), each headed by `# Source:
<chart>/templates/<file>`; documents that render empty or to whitespace are dropped, and
each other one must parse as YAML. Exit status 1 on any failure, with the reasons on
standard error.

Needs `go_template==0.0.3` and PyYAML in the interpreter that runs it (ci/test installs
both into target/cli-venv).
"""

from __future__ import annotations

import argparse
import copy
import os
import re
import subprocess
import sys
import tempfile

try:
    import yaml
except ImportError:  # pragma: no cover - an environment problem, said plainly
    sys.exit("render_chart: PyYAML is missing: pip install pyyaml")

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Helm's install order (pkg/releaseutil/kind_sorter.go); other kinds come after these.
INSTALL_ORDER = [
    "PriorityClass", "Namespace", "NetworkPolicy", "ResourceQuota", "LimitRange",
    "PodSecurityPolicy", "PodDisruptionBudget", "ServiceAccount", "Secret", "SecretList",
    "ConfigMap", "StorageClass", "PersistentVolume", "PersistentVolumeClaim",
    "CustomResourceDefinition", "ClusterRole", "ClusterRoleList", "ClusterRoleBinding",
    "ClusterRoleBindingList", "Role", "RoleList", "RoleBinding", "RoleBindingList",
    "Service", "DaemonSet", "Pod", "ReplicationController", "ReplicaSet", "Deployment",
    "HorizontalPodAutoscaler", "StatefulSet", "Job", "CronJob", "IngressClass", "Ingress",
    "APIService",
]

# Run in a child: a template error panics in Go and aborts the whole interpreter.
CHILD = (
    "import sys\n"
    "from go_template import render_template\n"
    "render_template(sys.argv[1], sys.argv[2], sys.argv[3])\n"
)


class RenderError(Exception):
    pass


# --- values -------------------------------------------------------------------------------


def merge(base, override, drop_nulls=True):
    """Helm's coalescing: maps merge key by key, null deletes, anything else replaces.

    With drop_nulls=False (user values merged among themselves, as Helm merges -f files),
    a null is kept so that it deletes the chart's default afterwards.
    """
    out = copy.deepcopy(base) if isinstance(base, dict) else {}
    for key, value in override.items():
        if value is None and drop_nulls:
            out.pop(key, None)
        elif isinstance(value, dict):
            out[key] = merge(out.get(key), value, drop_nulls)
        else:
            out[key] = copy.deepcopy(value)
    return out


def split_unescaped(text, sep):
    """Splits on `sep` outside `{...}` and not after a backslash (kept for the next step)."""
    parts, cur, depth, i = [], "", 0, 0
    while i < len(text):
        c = text[i]
        if c == "\\" and i + 1 < len(text):
            cur += text[i : i + 2]
            i += 2
            continue
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
        if c == sep and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += c
        i += 1
    parts.append(cur)
    return parts


def unescape(text):
    return re.sub(r"\\(.)", r"\1", text)


def typed(text, as_string):
    """A --set value as Helm's strvals types it."""
    if as_string:
        return text
    if text == "true":
        return True
    if text == "false":
        return False
    if text == "null":
        return None
    if re.fullmatch(r"[-+]?(0|[1-9][0-9]*)", text):
        return int(text)
    return text


def set_value(values, key, raw, as_string):
    """Applies one `key=value` of --set to `values` (a dict), in place."""
    if raw.startswith("{") and raw.endswith("}"):
        value = [typed(unescape(v), as_string) for v in split_unescaped(raw[1:-1], ",") if v != ""]
    else:
        value = typed(unescape(raw), as_string)
    path = []
    for part in split_unescaped(key, "."):
        m = re.fullmatch(r"(.*?)((?:\[[0-9]+\])+)", part)
        if m:
            path.append(unescape(m.group(1)))
            path.extend(int(i) for i in re.findall(r"\[([0-9]+)\]", m.group(2)))
        else:
            path.append(unescape(part))
    if any(p == "" for p in path):
        raise RenderError(f"--set {key}={raw}: an empty key")
    node = values
    for step, nxt in zip(path, path[1:]):
        child = node[step] if _has(node, step) else None
        if isinstance(nxt, int):
            if not isinstance(child, list):
                child = []
        elif not isinstance(child, dict):
            child = {}
        _put(node, step, child)
        node = child
    # A null is kept: it deletes the chart's default when the values are coalesced.
    _put(node, path[-1], value)


def _has(node, step):
    if isinstance(node, list):
        return step < len(node)
    return step in node


def _put(node, step, value):
    if isinstance(node, list):
        while len(node) <= step:
            node.append(None)
    node[step] = value


def chart_data(chart_dir, files, sets, release, namespace):
    with open(os.path.join(chart_dir, "Chart.yaml"), encoding="utf-8") as f:
        meta = yaml.safe_load(f) or {}
    with open(os.path.join(chart_dir, "values.yaml"), encoding="utf-8") as f:
        defaults = yaml.safe_load(f) or {}
    # As Helm: the user's values (-f files, then --set pairs parsed into them) first, then
    # coalesced over the chart's. So `--set list[1].x=y` replaces the chart's list, as in Helm.
    values = {}
    for path in files:
        if path == "-":
            override = yaml.safe_load(sys.stdin)
        else:
            with open(path, encoding="utf-8") as f:
                override = yaml.safe_load(f)
        if override is None:
            continue
        if not isinstance(override, dict):
            raise RenderError(f"-f {path}: not a map of values")
        values = merge(values, override, drop_nulls=False)
    for text, as_string in sets:
        for pair in split_unescaped(text, ","):
            # An escaped '=' stays in the key: find the first unescaped one.
            m = re.match(r"((?:\\.|[^=\\])*)=(.*)", pair, re.S)
            if not m:
                raise RenderError(f"--set {pair}: no '='")
            key, raw = m.group(1), m.group(2)
            set_value(values, key, raw, as_string)
    return {
        "Values": merge(defaults, values),
        "Release": {
            "Name": release,
            "Namespace": namespace,
            "Service": "Helm",
            "IsInstall": True,
            "IsUpgrade": False,
            "Revision": 1,
        },
        "Chart": helm_keys(meta),
    }


def helm_keys(meta):
    """Chart.yaml's keys as Helm's Chart struct spells them (.Chart.AppVersion...)."""
    special = {"apiVersion": "APIVersion", "appVersion": "AppVersion", "kubeVersion": "KubeVersion", "url": "URL"}
    if isinstance(meta, list):
        return [helm_keys(m) for m in meta]
    if not isinstance(meta, dict):
        return meta
    out = {}
    for key, value in meta.items():
        name = special.get(key, key[:1].upper() + key[1:])
        # Annotations are a free map: their keys stay as written.
        out[name] = value if key == "annotations" else helm_keys(value)
    return out


# --- rendering ----------------------------------------------------------------------------


def panic_message(stderr):
    for line in stderr.splitlines():
        if line.startswith("panic: "):
            return line[len("panic: ") :]
    tail = stderr.strip().splitlines()
    return tail[0] if tail else "the renderer died without a message"


def render_file(workdir, data_path, name, text, helpers):
    """Renders one template, `helpers` ((file, text) pairs) appended, in a child process."""
    if not text.endswith("\n"):
        text += "\n"
    # Which file each line of the source comes from (Go reports lines of the whole source).
    spans = [(f"templates/{name}", 0, text.count("\n"))]
    source = text
    for rel, helper in helpers:
        helper += "\n"
        start = source.count("\n")
        spans.append((f"templates/{rel}", start, start + helper.count("\n")))
        source += helper
    src = os.path.join(workdir, "src", name)
    os.makedirs(os.path.dirname(src), exist_ok=True)
    with open(src, "w", encoding="utf-8") as f:
        f.write(source)
    out = os.path.join(workdir, "out", name)
    os.makedirs(os.path.dirname(out), exist_ok=True)
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, src, data_path, out],
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0 or not os.path.exists(out):
        message = panic_message(proc.stderr)

        # Go names the file by its base name and counts lines over the whole source.
        def where(m):
            line = int(m.group(1))
            for file, first, last in spans:
                if first < line <= last:
                    return f"{file}:{line - first}:"
            return m.group(0)

        message = re.sub(re.escape(os.path.basename(name)) + r":([0-9]+):", where, message)
        raise RenderError(f"templates/{name}: {message}")
    with open(out, encoding="utf-8") as f:
        return f.read()


def render(chart_dir, data, strict):
    templates = os.path.join(chart_dir, "templates")
    names, helper_names = [], []
    for root, _dirs, files in os.walk(templates):
        for file in files:
            rel = os.path.relpath(os.path.join(root, file), templates)
            if file.startswith("_"):
                if file.endswith(".tpl"):
                    helper_names.append(rel)
            elif file != "NOTES.txt" and file.endswith((".yaml", ".yml", ".tpl")):
                names.append(rel)
    helpers = []
    for rel in sorted(helper_names):
        with open(os.path.join(templates, rel), encoding="utf-8") as f:
            helpers.append((rel, f.read()))
    chart_name = data["Chart"].get("Name", os.path.basename(os.path.abspath(chart_dir)))
    docs, errors = [], []
    with tempfile.TemporaryDirectory(prefix="render_chart.") as workdir:
        data_path = os.path.join(workdir, "data.yaml")
        with open(data_path, "w", encoding="utf-8") as f:
            yaml.safe_dump(data, f, default_flow_style=False, allow_unicode=True)
        for order, name in enumerate(sorted(names)):
            with open(os.path.join(templates, name), encoding="utf-8") as f:
                text = f.read()
            try:
                out = render_file(workdir, data_path, name, text, helpers)
            except RenderError as e:
                errors.append(str(e))
                continue
            if "<no value>" in out:
                if strict:
                    errors.append(f"templates/{name}: prints a value that does not exist (<no value>)")
                    continue
                out = out.replace("<no value>", "")
            for doc in re.split(r"^---[ \t]*$", out, flags=re.M):
                if not doc.strip():
                    continue
                try:
                    parsed = yaml.safe_load(doc)
                except yaml.YAMLError as e:
                    errors.append(f"templates/{name}: renders YAML that does not parse: {e}")
                    continue
                kind = parsed.get("kind") if isinstance(parsed, dict) else None
                rank = INSTALL_ORDER.index(kind) if kind in INSTALL_ORDER else len(INSTALL_ORDER)
                body = doc.strip("\n")
                docs.append((rank, order, f"---\n# Source: {chart_name}/templates/{name}\n{body}\n"))
    if errors:
        raise RenderError("\n".join(errors))
    docs.sort(key=lambda d: (d[0], d[1]))
    return "".join(d[2] for d in docs)


def main(argv=None):
    parser = argparse.ArgumentParser(
        description="Render a Helm chart like `helm template`, with Go's text/template (go_template).",
    )
    parser.add_argument("chart", nargs="?", default=os.path.join(REPO, "deploy", "chart"))
    parser.add_argument("-f", "--values", action="append", default=[], metavar="FILE")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--set-string", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--name", default="release-name")
    parser.add_argument("-n", "--namespace", default="default")
    parser.add_argument("--strict", action="store_true")
    parser.add_argument("--out")
    args = parser.parse_args(argv)
    try:
        import go_template  # noqa: F401  (checked here, used by the children)
    except ImportError:
        print("render_chart: go_template is missing: pip install go_template==0.0.3", file=sys.stderr)
        return 1
    try:
        data = chart_data(
            args.chart,
            args.values,
            [(s, False) for s in args.set] + [(s, True) for s in args.set_string],
            args.name,
            args.namespace,
        )
        text = render(args.chart, data, args.strict)
    except (RenderError, OSError, yaml.YAMLError) as e:
        print(f"render_chart: {args.chart}:\n{e}", file=sys.stderr)
        return 1
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
