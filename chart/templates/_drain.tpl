{{/*
Drain: on shutdown and on demand (maintenance mode).

Shutdown order for a handler pod:
  1. preStop writes <heartbeat.dir>/stopping  -> readiness fails, endpoints drop the pod
  2. preStop sleeps drain.preStopSeconds       -> endpoint/load-balancer updates land
  3. SIGTERM reaches the main process (the role's command is exec'd by the
     entrypoint below, so it is PID 1) -> the handler stops claiming, finishes or requeues within
     DRAIN_DEADLINE_SECONDS, exits
  4. terminationGracePeriodSeconds (_grace.tpl) covers all of it.

Maintenance mode: `kubectl exec ... -- <commands.drain>` writes <heartbeat.dir>/drain;
the handler stays alive, is not Ready and claims nothing until <commands.undrain>.
*/}}

{{/* The handler container's command: clears a stale stopping marker left in the
pod's emptyDir by the preStop of a previous container instance (a liveness restart
runs preStop too), then exec's the role's command, so it is PID 1 and receives
SIGTERM itself. The drain marker is kept: drain mode survives container restarts. */}}
{{- define "jobhandlers.drain.entrypoint" -}}
- sh
- -c
- {{ printf "rm -f %s; exec \"$@\"" (printf "%s/stopping" .Values.heartbeat.dir | squote) | quote }}
- handler
{{- end }}

{{/* The preStop hook of a handler container. */}}
{{- define "jobhandlers.drain.lifecycle" -}}
lifecycle:
  preStop:
    exec:
      command:
        - sh
        - -c
        - {{ printf "touch %s; sleep %d" (printf "%s/stopping" .Values.heartbeat.dir | squote) (int64 .Values.drain.preStopSeconds) | quote }}
{{- end }}

{{/* Drain-related env of a handler container. Call with (list $ "role" $startDrained). */}}
{{- define "jobhandlers.drain.env" -}}
{{- $root := index . 0 -}}
- name: DRAIN_DEADLINE_SECONDS
  value: {{ include "jobhandlers.grace.drainDeadline" (list $root (index . 1)) | quote }}
{{- if index . 2 }}
- name: JOBHANDLERS_START_DRAINED
  value: "1"
{{- end }}
{{- end }}

{{/* The kubectl command that runs a command in every pod of a role (for NOTES.txt).
Call with (list $ "role" $commandList). */}}
{{- define "jobhandlers.drain.kubectl" -}}
{{- $root := index . 0 }}
{{- $role := index . 1 }}
{{- $sel := printf "app.kubernetes.io/instance=%s,app.kubernetes.io/component=%s" $root.Release.Name $role -}}
for p in $(kubectl get pods -n {{ $root.Release.Namespace }} -l {{ $sel }} -o name); do kubectl exec -n {{ $root.Release.Namespace }} "$p" -c {{ $role }} -- {{ join " " (index . 2) }}; done
{{- end }}
