{{/*
Render-time checks: values the schema cannot judge alone. Each `fail` says what
is wrong, with the numbers, and the fix. Messages start with "jobhandlers:".
Included once, from templates/checks.yaml.
*/}}

{{- define "jobhandlers.checks" -}}
{{- include "jobhandlers.checks.hookDeadlock" . }}
{{- include "jobhandlers.checks.hookSecret" . }}
{{- include "jobhandlers.checks.grace" . }}
{{- include "jobhandlers.checks.startupProbe" . }}
{{- end }}

{{/* A pre-install hook cannot reach a database the same release creates. */}}
{{- define "jobhandlers.checks.hookDeadlock" -}}
{{- if and .Values.migration.enabled .Values.migration.useHelmHooks .Values.database.createdByRelease }}
{{- fail "jobhandlers: database.createdByRelease=true with migration.useHelmHooks=true deadlocks the install: the pre-install migration hook waits for a database that helm creates only after all pre-install hooks succeeded. Fix: create the database outside this release (or in an earlier release) and set database.createdByRelease=false, or set migration.useHelmHooks=false (plain Job, hash-named)." }}
{{- end }}
{{- end }}

{{/* In hook mode the migration pod's chart-created Secret must itself be a hook. */}}
{{- define "jobhandlers.checks.hookSecret" -}}
{{- if and .Values.migration.enabled .Values.migration.useHelmHooks (not .Values.database.existingSecret) (not .Values.database.secretIsHook) }}
{{- fail "jobhandlers: database.secretIsHook=false with migration.useHelmHooks=true deadlocks the install: the pre-install migration pod mounts the chart-created database Secret, which helm creates only after all pre-install hooks succeeded, so the pod never starts. Fix: keep database.secretIsHook=true (the default), or use database.existingSecret, or set migration.useHelmHooks=false." }}
{{- end }}
{{- end }}

{{/* An explicit grace must cover the computed one (_grace.tpl). */}}
{{- define "jobhandlers.checks.grace" -}}
{{- range $role, $spec := .Values.handlers }}
{{- if $spec }}
{{- $explicit := include "jobhandlers.grace.explicit" (list $ $role) }}
{{- if $explicit }}
{{- $computed := include "jobhandlers.grace.computed" (list $ $role) }}
{{- if lt (int64 $explicit) (int64 $computed) }}
{{- fail (printf "jobhandlers: handlers.%s.terminationGracePeriodSeconds=%s is shorter than the computed drain grace %s = ceil(maxJobRuntimeSeconds %d x drain.runtimeMultiplier %v) + drain.bufferSeconds %d + drain.preStopSeconds %d; a rollout would kill %s handlers mid-job. Fix: remove the override (the chart uses %s) or set it to at least %s." $role $explicit $computed (int64 $spec.maxJobRuntimeSeconds) $.Values.drain.runtimeMultiplier (int64 $.Values.drain.bufferSeconds) (int64 $.Values.drain.preStopSeconds) $role $computed $computed) }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}

{{/* Forcing the startupProbe below minKubeVersion needs the feature gate on. */}}
{{- define "jobhandlers.checks.startupProbe" -}}
{{- $sp := .Values.startupProbe }}
{{- if and $sp.enabled $sp.force (not $sp.featureGateEnabled) (not (include "jobhandlers.kubeAtLeast" (list . (toString $sp.minKubeVersion)))) }}
{{- fail (printf "jobhandlers: startupProbe.force=true on Kubernetes %s (below startupProbe.minKubeVersion %s) without startupProbe.featureGateEnabled=true: there the StartupProbe feature gate is off by default and the API server silently drops the probe, so handlers would run with neither a startupProbe nor the liveness delay that replaces it. Fix: set startupProbe.featureGateEnabled=true only if you enabled the StartupProbe feature gate on this cluster; otherwise remove startupProbe.force (liveness then waits initialDelaySeconds = startupProbe.periodSeconds x failureThreshold)." .Capabilities.KubeVersion.Version (toString $sp.minKubeVersion)) }}
{{- end }}
{{- end }}
