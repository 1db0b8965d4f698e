{{- /*
Shared templates. Only Go text/template built-ins are used (no sprig, no `include`,
`toYaml`, `default`, `required`, `fail`): README.md says why. `template` writes its output
where it is called and cannot be piped or re-indented, so these write no YAML, only refuse
values: a refusal calls a template that is not defined and whose name is the message, which
is an execution error in Go's text/template, hence in Helm and in ci/render_chart.py alike:

  template: .../_helpers.tpl:N:M: executing "..." at <{{template "ERROR: ...">>: template "ERROR: ..." not defined

A number is compared as text (printf "%v"), as Helm reads values.yaml's numbers as float64
and --set's as int64, and text/template compares neither with an untyped constant of the
other kind. For an integer, `gt (printf "%v" N) "1"` is N > 1: any integer above 1 sorts
after "1" (its first digit is higher, or it is "1" followed by more digits); 0, 1 and
negative numbers sort before or equal.
*/ -}}

{{- define "cloudscale-ccm.checks" -}}
{{- if and (not .Values.leaderElection.enabled) (gt (printf "%v" .Values.replicas) "1") -}}
{{- template "ERROR: leaderElection.enabled=false needs replicas: 1 (without leader election every replica runs every controller)" -}}
{{- end -}}
{{- if not (or (eq (printf "%v" .Values.logFormat) "text") (eq (printf "%v" .Values.logFormat) "json")) -}}
{{- template "ERROR: logFormat must be text or json" -}}
{{- end -}}
{{- if not .Values.clusterName -}}
{{- template "ERROR: clusterName must not be empty (it is part of the tags of this cluster's load balancers)" -}}
{{- end -}}
{{- end -}}

{{- /* The image: repository, then the tag, else the chart's appVersion. */ -}}
{{- define "cloudscale-ccm.image" -}}
{{- .Values.image.repository }}:{{ if .Values.image.tag }}{{ .Values.image.tag }}{{ else }}{{ .Chart.AppVersion }}{{ end -}}
{{- end -}}
