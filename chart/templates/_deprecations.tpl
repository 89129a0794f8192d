{{/*
Values of earlier releases (chart/lifecycle.yaml `deprecations` and `refusals`; the tool reads
the same tables in generator/upgrades.py), GitLab _deprecations.tpl style: each renamed or
removed key the values still set is one problem line of templates/checks.yaml (JH060), and a
refusal of what an earlier release accepted carries its CHANGELOG line.
*/}}

{{/* One line per renamed or removed key the values set: old path, new path, fix. Call with the root context. */}}
{{- define "jobhandlers.checks.deprecations" -}}
{{- include "jobhandlers.lifecycle.load" . }}
{{- range $d := .jobhandlersLifecycle.deprecations | default list }}
{{- $old := splitList "." $d.path }}
{{- range $found := splitList "\n" (include "jobhandlers.deprecations.find" (list $.Values $old "")) }}
{{- if $found }}
{{- $keys := splitList "." $found }}
{{- $what := "removed" }}
{{- if $d.newPath }}
{{- $wild := list }}
{{- range $i, $seg := $old }}{{ if eq $seg "*" }}{{ $wild = append $wild (index $keys $i) }}{{ end }}{{ end }}
{{- $new := list }}
{{- range $seg := splitList "." $d.newPath }}
{{- if and (eq $seg "*") $wild }}{{ $new = append $new (first $wild) }}{{ $wild = rest $wild }}{{ else }}{{ $new = append $new $seg }}{{ end }}
{{- end }}
{{- $what = printf "renamed to %s" (join "." $new) }}
{{- end }}
{{- include "jobhandlers.checks.problem" (printf "jobhandlers: %s was %s in chart %s. Fix: %s. (jobhandlers check: JH060)" $found $what (toString $d.since) (trimSuffix "." $d.fix)) }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}

{{/* The key paths under a node that match pattern segments (`*`: any key) and are not null,
one per line. Call with (list node segments prefix). */}}
{{- define "jobhandlers.deprecations.find" -}}
{{- $node := index . 0 }}
{{- $segs := index . 1 }}
{{- $prefix := index . 2 }}
{{- if and $segs (kindIs "map" $node) }}
{{- $head := first $segs }}
{{- range $key, $value := $node }}
{{- if or (eq $head "*") (eq $head $key) }}
{{- $path := $key }}{{ if $prefix }}{{ $path = printf "%s.%s" $prefix $key }}{{ end }}
{{- if rest $segs }}
{{- include "jobhandlers.deprecations.find" (list $value (rest $segs) $path) }}
{{- else if not (kindIs "invalid" $value) }}
{{- printf "%s\n" $path }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}

{{/* A problem line with the CHANGELOG line of the refusal its rule id names (refusals: a rule
that refuses what an earlier release accepted). Call with (list $ line). */}}
{{- define "jobhandlers.deprecations.annotate" -}}
{{- $root := index . 0 }}
{{- $line := index . 1 }}
{{- include "jobhandlers.lifecycle.load" $root }}
{{- range $r := $root.jobhandlersLifecycle.refusals | default list }}
{{- range $id := $r.rules }}
{{- if contains (printf "(jobhandlers check: %s)" $id) $line }}
{{- $took := ternary "an installed release may hold it" "earlier releases rendered it and the API server refused it" (eq (toString $r.cluster) "accepted") }}
{{- $line = printf "%s (refused since chart %s, %s; CHANGELOG: %s)" $line (toString $r.since) $took $r.changelog }}
{{- end }}
{{- end }}
{{- end }}
{{- $line }}
{{- end }}
