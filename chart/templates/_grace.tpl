{{/*
Shutdown grace per role (generator/model.py: computed_grace, Grace.effective,
Grace.drain_deadline — the render tests hold these equal).

  computed = ceil(round(maxJobRuntimeSeconds * drain.runtimeMultiplier, 6))
             + drain.bufferSeconds + drain.preStopSeconds

round(.., 6) first so that 100 * 1.1 (= 110.00000000000001 in float64) gives 110,
not 111, exactly like the Python model.

All helpers are called with (list $ "role") and print an integer.
*/}}

{{/* ceil(round(runtime * multiplier, 6)) + buffer + preStop */}}
{{- define "jobhandlers.grace.computed" -}}
{{- $root := index . 0 }}
{{- $spec := index $root.Values.handlers (index . 1) }}
{{- $drain := $root.Values.drain }}
{{- $work := round (mulf (float64 $spec.maxJobRuntimeSeconds) (float64 $drain.runtimeMultiplier)) 6 | ceil | int64 }}
{{- add $work (int64 $drain.bufferSeconds) (int64 $drain.preStopSeconds) }}
{{- end }}

{{/* The explicit handlers.<role>.terminationGracePeriodSeconds, or "" when unset/null. */}}
{{- define "jobhandlers.grace.explicit" -}}
{{- $spec := index (index . 0).Values.handlers (index . 1) }}
{{- $explicit := $spec.terminationGracePeriodSeconds }}
{{- if not (kindIs "invalid" $explicit) }}{{ int64 $explicit }}{{ end }}
{{- end }}

{{/* What the Deployment renders: the explicit value when set, else the computed one. */}}
{{- define "jobhandlers.grace.effective" -}}
{{- $explicit := include "jobhandlers.grace.explicit" . }}
{{- if $explicit }}{{ $explicit }}{{ else }}{{ include "jobhandlers.grace.computed" . }}{{ end }}
{{- end }}

{{/* DRAIN_DEADLINE_SECONDS: max(1, effective - preStop - floor(buffer / 2)). */}}
{{- define "jobhandlers.grace.drainDeadline" -}}
{{- $drain := (index . 0).Values.drain }}
{{- $effective := include "jobhandlers.grace.effective" . | int64 }}
{{- max 1 (sub (sub $effective (int64 $drain.preStopSeconds)) (div (int64 $drain.bufferSeconds) 2)) }}
{{- end }}
