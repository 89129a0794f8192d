{{/*
Drain: on shutdown and on demand (maintenance mode).

Drain adapters (drain.mode, per role handlers.<role>.drain.mode): how the preStop tells
a handler to stop taking work — marker (writes <heartbeat.dir>/stopping), signal (kill -s
<drain.signal> 1), command (drain.command), none (SIGTERM alone). Every mode then waits
drain.preStopSeconds (native sleep action where the cluster has it, for mode none), or
with drain.waitForExit (signal, command) until PID 1 has exited, at most
DRAIN_DEADLINE_SECONDS: for apps that drain on that signal/command and must not get
SIGTERM while they finish (Huey: SIGINT graceful, SIGTERM immediate).

Shutdown order for a handler pod (mode marker):
  1. preStop writes <heartbeat.dir>/stopping  -> readiness fails, endpoints drop the pod
  2. preStop sleeps drain.preStopSeconds       -> endpoint/load-balancer updates land
  3. SIGTERM reaches the main process (the role's command is exec'd by the
     entrypoint below, so it is PID 1) -> the handler stops claiming, finishes or requeues within
     DRAIN_DEADLINE_SECONDS, exits
  4. terminationGracePeriodSeconds (_grace.tpl) covers all of it.

Maintenance mode: `kubectl exec ... -- <commands.drain>` writes <heartbeat.dir>/drain;
the handler stays alive, is not Ready and claims nothing until <commands.undrain>.
*/}}

{{/* The drain settings of a role, role keys over the chart-wide drain block (JSON:
mode, signal (without SIG), command, stopSignal ("" = none)). Call with (list $ "role"). */}}
{{- define "jobhandlers.drain.settings" -}}
{{- $root := index . 0 }}
{{- $g := $root.Values.drain }}
{{- $r := (include "jobhandlers.role.spec" . | fromJson).drain | default dict }}
{{- include "jobhandlers.lifecycle.load" $root }}
{{- $fb := $root.jobhandlersLifecycle.drain.fallback }}
{{- $out := dict "mode" ($g.mode | default $fb.mode) "signal" ($g.signal | default $fb.signal) "command" ($g.command | default list) "stopSignal" ($g.stopSignal | default "") "waitForExit" ($g.waitForExit | default $fb.waitForExit) }}
{{- range $k := list "mode" "signal" "command" "stopSignal" "waitForExit" }}
{{- if and (hasKey $r $k) (not (kindIs "invalid" (index $r $k))) }}{{ $_ := set $out $k (index $r $k) }}{{ end }}
{{- end }}
{{- $_ := set $out "signal" (trimPrefix "SIG" (toString $out.signal)) }}
{{- toJson $out }}
{{- end }}

{{- define "jobhandlers.drain.mode" -}}
{{- (include "jobhandlers.drain.settings" . | fromJson).mode }}
{{- end }}

{{/* The native preStop sleep action: beta and on by default from 1.30
(PodLifecycleSleepAction; GA 1.34). Below, the API server drops it. */}}

{{/* A 0-second sleep action: valid from 1.33 (PodLifecycleSleepActionAllowZero, KEP-4818:
alpha 1.32, beta and on by default 1.33, GA 1.34); below, the API server rejects it. */}}

{{/* lifecycle.stopSignal: from 1.33, alpha behind ContainerStopSignals (off by default). */}}

{{/* "true" when a role's preStop is the native sleep action. */}}
{{- define "jobhandlers.drain.nativeSleep" -}}
{{- $root := index . 0 }}
{{- if and (eq (include "jobhandlers.drain.mode" .) "none") $root.Values.drain.nativeSleep (include "jobhandlers.gate" (list $root "nativeSleep")) }}true{{ end }}
{{- end }}

{{/* "true" when lifecycle.stopSignal is rendered for a role. */}}
{{- define "jobhandlers.drain.stopSignalRendered" -}}
{{- $root := index . 0 }}
{{- $d := include "jobhandlers.drain.settings" . | fromJson }}
{{- if and $d.stopSignal $root.Values.drain.stopSignalFeatureGate (include "jobhandlers.gate" (list $root "stopSignal")) }}true{{ end }}
{{- end }}

{{/* command: and args: of a handler container. drain.mode=marker: an `sh -c`
wrapper clears a stale stopping marker left in the pod's emptyDir by the preStop of a
previous container instance (a liveness restart runs preStop too), then exec's the
role's command, so it is PID 1 and receives SIGTERM itself (the drain marker is kept:
drain mode survives container restarts). Other modes: the role's command and args as
given (no command: the image's entrypoint), so the image needs no shell.
Call with (list $ "role"). */}}
{{- define "jobhandlers.drain.commandArgs" -}}
{{- $root := index . 0 }}
{{- $spec := include "jobhandlers.role.spec" . | fromJson }}
{{- $cmd := $spec.command | default list }}
{{- $args := $spec.args | default list }}
{{- if eq (include "jobhandlers.drain.mode" .) "marker" -}}
command:
  - sh
  - -c
  - {{ printf "rm -f %s; exec \"$@\"" (printf "%s/stopping" $root.Values.heartbeat.dir | squote) | quote }}
  - handler
args:
  {{- concat $cmd $args | toYaml | nindent 2 }}
{{- else }}
{{- with $cmd }}
command:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $args }}
args:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}
{{- end }}

{{/* The lifecycle of a handler container (preStop per drain mode, stopSignal).
Call with (list $ "role"). */}}
{{- define "jobhandlers.drain.lifecycle" -}}
{{- $root := index . 0 }}
{{- $d := include "jobhandlers.drain.settings" . | fromJson }}
{{- $sleep := int64 $root.Values.drain.preStopSeconds }}
{{- $stopping := printf "%s/stopping" $root.Values.heartbeat.dir | squote }}
{{- $preStop := "" }}
{{- $wait := printf "sleep %d" $sleep }}
{{- if $d.waitForExit }}
{{- /* The wait ends on SIGTERM/SIGINT too (exit 143/130; sleep in the background so
the trap runs at once), like the retry loops (_helpers.tpl): a shell never outlives a
stop request. */}}
{{- $wait = printf "trap 'exit 143' TERM; trap 'exit 130' INT; n=0; while kill -0 1 2>/dev/null && [ $n -lt %s ]; do sleep 1 & wait $!; n=$((n + 1)); done" (include "jobhandlers.grace.drainDeadline" .) }}
{{- end }}
{{- if eq $d.mode "marker" }}
{{- $preStop = dict "exec" (dict "command" (list "sh" "-c" (printf "touch %s; sleep %d" $stopping $sleep))) }}
{{- else if eq $d.mode "signal" }}
{{- $preStop = dict "exec" (dict "command" (list "sh" "-c" (printf "kill -s %s 1; %s" $d.signal $wait))) }}
{{- else if eq $d.mode "command" }}
{{- if or $sleep $d.waitForExit }}
{{- $preStop = dict "exec" (dict "command" (concat (list "sh" "-c" (printf "\"$@\"; %s" $wait) "drain") $d.command)) }}
{{- else }}
{{- $preStop = dict "exec" (dict "command" $d.command) }}
{{- end }}
{{- else if $sleep }}
{{- /* A 0-second wait renders no preStop at all (on every version): `sleep: {seconds: 0}`
is rejected below 1.33 (gate sleepZero) and does nothing where it is valid. */}}
{{- if include "jobhandlers.drain.nativeSleep" . }}
{{- $preStop = dict "sleep" (dict "seconds" $sleep) }}
{{- else }}
{{- $preStop = dict "exec" (dict "command" (list "sleep" (toString $sleep))) }}
{{- end }}
{{- end }}
{{- $lc := dict }}
{{- if $preStop }}{{ $_ := set $lc "preStop" $preStop }}{{ end }}
{{- if include "jobhandlers.drain.stopSignalRendered" . }}
{{- $_ := set $lc "stopSignal" (printf "SIG%s" (trimPrefix "SIG" (toString $d.stopSignal))) }}
{{- end }}
{{- with $lc }}
lifecycle:
  {{- toYaml . | nindent 2 }}
{{- end }}
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
