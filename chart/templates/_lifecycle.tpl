{{/*
The chart's lifecycle data: chart/lifecycle.yaml, which the tool reads too
(generator/lifecycle.py). Version gates, probe handler kinds, drain modes and fallbacks,
workload kinds and the rules' words live there once; templates ask these helpers.
*/}}

{{/* Parse chart/lifecycle.yaml once per render into $.jobhandlersLifecycle (the root
context is one map for every template). Call with the root context. */}}
{{- define "jobhandlers.lifecycle.load" -}}
{{- if not (hasKey . "jobhandlersLifecycle") }}
{{- $_ := set . "jobhandlersLifecycle" (.Files.Get "lifecycle.yaml" | fromYaml) }}
{{- end }}
{{- end }}

{{/* The lifecycle data as JSON (for fromJson). Call with the root context. */}}
{{- define "jobhandlers.lifecycle" -}}
{{- include "jobhandlers.lifecycle.load" . }}
{{- toJson .jobhandlersLifecycle }}
{{- end }}

{{/* The first Kubernetes minor where a gated field is rendered (gates.<name>.minKubeVersion).
Call with (list $ "gateName"); an unknown name fails the render (a chart bug, not the user's). */}}
{{- define "jobhandlers.gate.version" -}}
{{- $root := index . 0 }}
{{- include "jobhandlers.lifecycle.load" $root }}
{{- $gate := index $root.jobhandlersLifecycle.gates (index . 1) }}
{{- if not $gate }}{{ fail (printf "jobhandlers: internal: no gate %q in lifecycle.yaml" (index . 1)) }}{{ end }}
{{- $gate.minKubeVersion }}
{{- end }}

{{/* "true" when the cluster is >= the given major.minor. The "-0" makes
pre-release/vendor versions such as v1.29.3-eks-1 match. Call with (list $ "1.25"). */}}
{{- define "jobhandlers.kubeAtLeast" -}}
{{- $root := index . 0 }}
{{- if semverCompare (printf ">=%s-0" (index . 1)) $root.Capabilities.KubeVersion.Version }}true{{ end }}
{{- end }}

{{/* "true" when the cluster is at or above a gate's minKubeVersion (bitnami common's
capabilities pattern: one helper for every version gate). The "-0" makes pre-release and
vendor versions such as v1.29.3-eks-1 match. Call with (list $ "gateName"). */}}
{{- define "jobhandlers.gate" -}}
{{- include "jobhandlers.kubeAtLeast" (list (index . 0) (include "jobhandlers.gate.version" .)) }}
{{- end }}
