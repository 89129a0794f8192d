{{/*
Probes (generator/model.py: startup_probe_rendered, liveness_initial_delay,
probe_grace). All are exec probes running `sh -c` with date/stat only: the
application's interpreter is never started by a probe.

  readiness: no drain marker, no stopping marker, heartbeat age <= readiness.maxAgeSeconds
  liveness:  heartbeat age <= liveness.maxAgeSeconds (markers ignored: a draining
             handler is alive)
  startup:   heartbeat exists and age <= readiness.maxAgeSeconds
*/}}

{{/* "true" when the cluster is >= the given major.minor. The "-0" makes
pre-release/vendor versions such as v1.29.3-eks-1 match. Call with (list $ "1.25"). */}}
{{- define "jobhandlers.kubeAtLeast" -}}
{{- $root := index . 0 }}
{{- if semverCompare (printf ">=%s-0" (index . 1)) $root.Capabilities.KubeVersion.Version }}true{{ end }}
{{- end }}

{{/* "true" when the startupProbe is rendered: enabled, and the cluster is >=
startupProbe.minKubeVersion or the probe is forced with the feature gate declared on. */}}
{{- define "jobhandlers.startupProbe.rendered" -}}
{{- $sp := .Values.startupProbe }}
{{- if $sp.enabled }}
{{- if include "jobhandlers.kubeAtLeast" (list . (toString $sp.minKubeVersion)) }}true
{{- else if and $sp.force $sp.featureGateEnabled }}true
{{- end }}
{{- end }}
{{- end }}

{{/* Liveness initialDelaySeconds: 0 with a startupProbe, else the startup budget
startupProbe.periodSeconds * startupProbe.failureThreshold. */}}
{{- define "jobhandlers.liveness.initialDelaySeconds" -}}
{{- if include "jobhandlers.startupProbe.rendered" . }}0
{{- else }}{{ mul (int64 .Values.startupProbe.periodSeconds) (int64 .Values.startupProbe.failureThreshold) }}
{{- end }}
{{- end }}

{{/* The age check shared by the scripts: sets $age or fails when there is no heartbeat. */}}
{{- define "jobhandlers.probe.heartbeatAge" -}}
m=$(stat -c %Y {{ printf "%s/heartbeat" .Values.heartbeat.dir | squote }} 2>/dev/null) || { echo "no heartbeat file yet"; exit 1; }
age=$(( $(date +%s) - m ))
{{- end }}

{{- define "jobhandlers.probe.readinessScript" -}}
{{- $dir := .Values.heartbeat.dir }}
{{- $max := int64 .Values.readiness.maxAgeSeconds -}}
if [ -e {{ printf "%s/drain" $dir | squote }} ]; then echo "not ready: drain mode (drain marker present)"; exit 1; fi
if [ -e {{ printf "%s/stopping" $dir | squote }} ]; then echo "not ready: stopping"; exit 1; fi
{{ include "jobhandlers.probe.heartbeatAge" . }}
if [ "$age" -gt {{ $max }} ]; then echo "not ready: heartbeat is ${age}s old (max {{ $max }}s)"; exit 1; fi
{{- end }}

{{- define "jobhandlers.probe.livenessScript" -}}
{{- $max := int64 .Values.liveness.maxAgeSeconds -}}
{{ include "jobhandlers.probe.heartbeatAge" . }}
if [ "$age" -gt {{ $max }} ]; then echo "not alive: heartbeat is ${age}s old (max {{ $max }}s)"; exit 1; fi
{{- end }}

{{- define "jobhandlers.probe.startupScript" -}}
{{- $max := int64 .Values.readiness.maxAgeSeconds -}}
{{ include "jobhandlers.probe.heartbeatAge" . }}
if [ "$age" -gt {{ $max }} ]; then echo "not started: heartbeat is ${age}s old (max {{ $max }}s)"; exit 1; fi
{{- end }}

{{/* The probes of a handler container, at container indentation (nindent 10). */}}
{{- define "jobhandlers.probes" -}}
{{- $r := .Values.readiness }}
{{- $l := .Values.liveness }}
{{- $s := .Values.startupProbe -}}
readinessProbe:
  exec:
    command:
      - sh
      - -c
      - |-
        {{- include "jobhandlers.probe.readinessScript" . | nindent 8 }}
  periodSeconds: {{ int64 $r.periodSeconds }}
  failureThreshold: {{ int64 $r.failureThreshold }}
  timeoutSeconds: {{ int64 $r.timeoutSeconds }}
livenessProbe:
  exec:
    command:
      - sh
      - -c
      - |-
        {{- include "jobhandlers.probe.livenessScript" . | nindent 8 }}
  initialDelaySeconds: {{ include "jobhandlers.liveness.initialDelaySeconds" . }}
  periodSeconds: {{ int64 $l.periodSeconds }}
  failureThreshold: {{ int64 $l.failureThreshold }}
  timeoutSeconds: {{ int64 $l.timeoutSeconds }}
  {{- if and (not (kindIs "invalid" $l.terminationGracePeriodSeconds)) (include "jobhandlers.kubeAtLeast" (list . "1.25")) }}
  terminationGracePeriodSeconds: {{ int64 $l.terminationGracePeriodSeconds }}
  {{- end }}
{{- if include "jobhandlers.startupProbe.rendered" . }}
startupProbe:
  exec:
    command:
      - sh
      - -c
      - |-
        {{- include "jobhandlers.probe.startupScript" . | nindent 8 }}
  periodSeconds: {{ int64 $s.periodSeconds }}
  failureThreshold: {{ int64 $s.failureThreshold }}
  timeoutSeconds: {{ int64 $s.timeoutSeconds }}
{{- end }}
{{- end }}
