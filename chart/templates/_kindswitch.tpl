{{/*
Kind switch guard (handlers.<role>.kind: Deployment <-> StatefulSet; issue 35, item 3).

In one `helm upgrade` helm creates the new kind's workload and deletes the old one in the same
apply, so the old pods drain while the new ones already run: both kinds at once (3-27 s in kind
scenario 25b). The two-step switch (the old kind scaled to 0, its pods gone, then the new kind)
never overlaps (scenario 25c). This helper finds the old kind's workload through helm's `lookup`;
_checks.tpl (jobhandlers.checks.kindSwitch) refuses with rule JH061's words from lifecycle.yaml.

`lookup` sees the cluster only in `helm install`/`upgrade` and `--dry-run=server`: `helm template`,
`helm lint` and client-side dry runs get an empty map, so there the guard is silent, as is
`jobhandlers check` (offline, and --server renders client-side).
*/}}

{{/* This release's workload of the role's OTHER kind (the name the chart gives that kind) when it
still runs anything: spec.replicas or status.replicas > 0, or else pods it owns (terminating ones:
still draining). JSON {kind, name, specReplicas, statusReplicas, pods, terminating}; "" when there
is none, it runs nothing, or handlers.<role>.kindSwitch.allowOverlap is true. Pods are looked up
only when both counts are 0. Call with (list $ "role"). */}}
{{- define "jobhandlers.kindSwitch.oldWorkload" -}}
{{- $root := index . 0 }}
{{- $role := index . 1 }}
{{- $spec := include "jobhandlers.role.spec" . | fromJson }}
{{- if not ($spec.kindSwitch | default dict).allowOverlap }}
{{- $other := ternary "Deployment" "StatefulSet" (eq (include "jobhandlers.identity.kind" .) "StatefulSet") }}
{{- $name := include "jobhandlers.identity.nameOfKind" (list $root $role $other) }}
{{- $obj := lookup "apps/v1" $other $root.Release.Namespace $name }}
{{- $owner := index (($obj.metadata | default dict).annotations | default dict) "meta.helm.sh/release-name" }}
{{- if and $obj (eq (toString $owner) $root.Release.Name) }}
{{- $want := int64 (($obj.spec | default dict).replicas | default 0) }}
{{- $have := int64 (($obj.status | default dict).replicas | default 0) }}
{{- $pods := 0 }}
{{- $terminating := 0 }}
{{- if and (eq $want 0) (eq $have 0) }}
{{- $ownerKind := ternary "ReplicaSet" "StatefulSet" (eq $other "Deployment") }}
{{- $ownerName := ternary (printf "^%s-[^-]+$" (regexQuoteMeta $name)) (printf "^%s$" (regexQuoteMeta $name)) (eq $other "Deployment") }}
{{- range $pod := (lookup "v1" "Pod" $root.Release.Namespace "").items | default list }}
{{- range $ref := $pod.metadata.ownerReferences | default list }}
{{- if and (eq $ref.kind $ownerKind) (regexMatch $ownerName $ref.name) }}
{{- $pods = add1 $pods }}
{{- if $pod.metadata.deletionTimestamp }}{{ $terminating = add1 $terminating }}{{ end }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}
{{- if or $want $have $pods }}
{{- toJson (dict "kind" $other "name" $name "specReplicas" $want "statusReplicas" $have "pods" $pods "terminating" $terminating) }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}
