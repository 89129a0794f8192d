{{/*
Probe adapters (generator/model.py: resolve_probe, startup_probe_rendered,
liveness_initial_delay, probe_grace — the generated tests hold them equal).

Per role and kind (readiness, liveness, startup) the probe is resolved from, in order:
  handler:     the first of the candidate blocks that names one (exec, httpGet,
               tcpSocket, grpc, heartbeat), else heartbeat:
                 readiness: handlers.<role>.readinessProbe, .livenessProbe, readiness, liveness
                 liveness:  handlers.<role>.livenessProbe, .readinessProbe, liveness, readiness
                 startup:   handlers.<role>.startupProbe, .livenessProbe, .readinessProbe,
                            startupProbe, liveness, readiness
  thresholds:  handlers.<role>.<kind>Probe.<key>, else the chart-wide block's key; a
               borrowed handler brings its block's timeoutSeconds (the command's cost).

The heartbeat handler is an `sh -c` script using date/stat only (the application's
interpreter is never started by it): the newest file matching the path glob must be
younger than maxAgeSeconds; for readiness with drain.mode=marker, no drain or
stopping marker may exist.
  readiness: maxAge = readiness.maxAgeSeconds; liveness: liveness.maxAgeSeconds;
  startup: readiness.maxAgeSeconds (a handler is started once it is fresh enough to be Ready).
*/}}


{{/* The probe handler kinds, Kubernetes' and ours (lifecycle.yaml probe.handlerKinds),
space-separated. Call with the root context. */}}
{{- define "jobhandlers.probe.handlerKinds" -}}
{{- include "jobhandlers.lifecycle.load" . }}
{{- join " " .jobhandlersLifecycle.probe.handlerKinds }}
{{- end }}

{{/* grpc probes: beta and on by default from 1.24 (GRPCContainerProbe; GA 1.27).
Below, the API server drops the field and the container has no probe at all. */}}

{{/* The spec of a role, {} for a null role. Call with (list $ "role"). */}}
{{- define "jobhandlers.role.spec" -}}
{{- toJson (index (index . 0).Values.handlers (index . 1) | default dict) }}
{{- end }}

{{/* The candidate blocks of a probe, in order (JSON list). Call with (list $ "role" "kind"). */}}
{{- define "jobhandlers.probe.candidates" -}}
{{- $root := index . 0 }}
{{- $kind := index . 2 }}
{{- $spec := include "jobhandlers.role.spec" . | fromJson }}
{{- $rr := $spec.readinessProbe | default dict }}
{{- $rl := $spec.livenessProbe | default dict }}
{{- $rs := $spec.startupProbe | default dict }}
{{- $gr := $root.Values.readiness | default dict }}
{{- $gl := $root.Values.liveness | default dict }}
{{- $gs := $root.Values.startupProbe | default dict }}
{{- if eq $kind "readiness" }}{{ toJson (list $rr $rl $gr $gl) }}
{{- else if eq $kind "liveness" }}{{ toJson (list $rl $rr $gl $gr) }}
{{- else }}{{ toJson (list $rs $rl $rr $gs $gl $gr) }}
{{- end }}
{{- end }}

{{/* The resolved probe of a role as JSON: {handler, spec (the handler's fields),
period, failure, timeout, success, initialDelay, grace ("" = none), enabled,
maxAge, path (heartbeat only)}. Call with (list $ "role" "kind"). */}}
{{- define "jobhandlers.probe.resolve" -}}
{{- $root := index . 0 }}
{{- $kind := index . 2 }}
{{- $candidates := include "jobhandlers.probe.candidates" . | fromJsonArray }}
{{- $own := index $candidates 0 }}
{{- $global := ternary $root.Values.startupProbe (index $root.Values $kind) (eq $kind "startup") | default dict }}
{{- $handler := "" }}
{{- $hspec := dict }}
{{- $source := $own }}
{{- range $block := $candidates }}
{{- if not $handler }}
{{- range $k := splitList " " (include "jobhandlers.probe.handlerKinds" $root) }}
{{- if and (not $handler) (hasKey $block $k) (not (kindIs "invalid" (index $block $k))) }}
{{- $handler = $k }}
{{- $hspec = index $block $k }}
{{- $source = $block }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}
{{- if not $handler }}{{ $handler = "heartbeat" }}{{ end }}
{{- $out := dict "handler" $handler "spec" $hspec }}
{{- range $key, $def := dict "periodSeconds" 10 "failureThreshold" 3 "timeoutSeconds" 1 "successThreshold" 1 "initialDelaySeconds" 0 }}
{{- $v := $def }}
{{- if hasKey $global $key }}{{ $v = index $global $key }}{{ end }}
{{- /* a borrowed handler brings its timeout: it is the command's cost */}}
{{- if and (eq $key "timeoutSeconds") (ne (toJson $source) (toJson $own)) (hasKey $source $key) (not (kindIs "invalid" (index $source $key))) }}{{ $v = index $source $key }}{{ end }}
{{- if and (hasKey $own $key) (not (kindIs "invalid" (index $own $key))) }}{{ $v = index $own $key }}{{ end }}
{{- $_ := set $out $key (int64 $v) }}
{{- end }}
{{- $grace := "" }}
{{- if hasKey $global "terminationGracePeriodSeconds" }}{{ $grace = $global.terminationGracePeriodSeconds }}{{ end }}
{{- if hasKey $own "terminationGracePeriodSeconds" }}{{ $grace = $own.terminationGracePeriodSeconds }}{{ end }}
{{- $_ := set $out "grace" (ternary "" (toString $grace) (or (kindIs "invalid" $grace) (eq (toString $grace) ""))) }}
{{- $enabled := true }}
{{- if and (hasKey $global "enabled") (kindIs "bool" $global.enabled) }}{{ $enabled = $global.enabled }}{{ end }}
{{- if and (hasKey $own "enabled") (kindIs "bool" $own.enabled) }}{{ $enabled = $own.enabled }}{{ end }}
{{- $_ := set $out "enabled" $enabled }}
{{- if eq $handler "heartbeat" }}
{{- $maxKind := ternary "readiness" $kind (eq $kind "startup") }}
{{- $max := (index $root.Values $maxKind).maxAgeSeconds }}
{{- $ownBeat := (index $own "heartbeat") | default dict }}
{{- if $ownBeat.maxAgeSeconds }}{{ $max = $ownBeat.maxAgeSeconds }}{{ end }}
{{- $path := ($hspec | default dict).path | default $root.Values.heartbeat.path | default "heartbeat" }}
{{- if not (hasPrefix "/" $path) }}{{ $path = printf "%s/%s" $root.Values.heartbeat.dir $path }}{{ end }}
{{- $_ := set $out "maxAge" (int64 $max) }}
{{- $_ := set $out "path" $path }}
{{- end }}
{{- toJson $out }}
{{- end }}

{{/* "true" when the startupProbe of a role is rendered: enabled, and the cluster is
>= startupProbe.minKubeVersion or the probe is forced with the feature gate declared on.
Call with (list $ "role"), or with $ alone for the chart-wide answer. */}}
{{- define "jobhandlers.startupProbe.rendered" -}}
{{- $root := . }}
{{- $enabled := false }}
{{- if not (kindIs "slice" .) }}{{ $enabled = .Values.startupProbe.enabled }}{{ end }}
{{- if kindIs "slice" . }}
{{- $root = index . 0 }}
{{- $enabled = (include "jobhandlers.probe.resolve" (list $root (index . 1) "startup") | fromJson).enabled }}
{{- end }}
{{- $sp := $root.Values.startupProbe }}
{{- if $enabled }}
{{- if include "jobhandlers.kubeAtLeast" (list $root (toString $sp.minKubeVersion)) }}true
{{- else if and $sp.force $sp.featureGateEnabled }}true
{{- end }}
{{- end }}
{{- end }}

{{/* Liveness initialDelaySeconds: the role's own value with a startupProbe, else at
least the startup budget periodSeconds * failureThreshold of the resolved startupProbe.
Call with (list $ "role"). */}}
{{- define "jobhandlers.liveness.initialDelaySeconds" -}}
{{- $live := include "jobhandlers.probe.resolve" (list (index . 0) (index . 1) "liveness") | fromJson }}
{{- if include "jobhandlers.startupProbe.rendered" . }}{{ $live.initialDelaySeconds }}
{{- else }}
{{- $s := include "jobhandlers.probe.resolve" (list (index . 0) (index . 1) "startup") | fromJson }}
{{- max (int64 $live.initialDelaySeconds) (mul (int64 $s.periodSeconds) (int64 $s.failureThreshold)) }}
{{- end }}
{{- end }}

{{/* The heartbeat script. Call with (dict "root" $ "probe" $resolved "kind" "readiness" "markers" bool).
The startup kind also refuses a heartbeat older than the container: a crashed handler's
last beat survives in the pod's emptyDir and would pass the restarted container's
startupProbe before the new process has started. PID 1's start is field 22 of
/proc/1/stat (1/100 s since boot, USER_HZ) plus btime from /proc/stat; where /proc/1 is
unreadable the check is left out. */}}
{{- define "jobhandlers.probe.heartbeatScript" -}}
{{- $dir := .root.Values.heartbeat.dir }}
{{- $max := int64 .probe.maxAge }}
{{- $word := get (dict "readiness" "not ready" "liveness" "not alive" "startup" "not started") .kind }}
{{- if .markers -}}
if [ -e {{ printf "%s/drain" $dir | squote }} ]; then echo "not ready: drain mode (drain marker present)"; exit 1; fi
if [ -e {{ printf "%s/stopping" $dir | squote }} ]; then echo "not ready: stopping"; exit 1; fi
{{ end -}}
newest=0
for f in {{ .probe.path }}; do m=$(stat -c %Y "$f" 2>/dev/null) && [ "$m" -gt "$newest" ] && newest=$m; done
[ "$newest" -gt 0 ] || { echo "no heartbeat file yet ({{ .probe.path }})"; exit 1; }
age=$(( $(date +%s) - newest ))
if [ "$age" -gt {{ $max }} ]; then echo "{{ $word }}: heartbeat is ${age}s old (max {{ $max }}s)"; exit 1; fi
{{- if eq .kind "startup" }}
if read -r s < /proc/1/stat 2>/dev/null; then
  s=${s##*) }; set -- $s; b=
  while read -r k v; do [ "$k" = btime ] && b=$v && break; done < /proc/stat
  if [ -n "$b" ] && [ -n "${20:-}" ] && [ "$newest" -lt $(( b + ${20} / 100 )) ]; then echo "not started: the newest heartbeat is from before this container started"; exit 1; fi
fi
{{- end }}
{{- end }}

{{/* One probe, as the YAML under readinessProbe:/livenessProbe:/startupProbe:.
Call with (list $ "role" "kind"). */}}
{{- define "jobhandlers.probe.render" -}}
{{- $root := index . 0 }}
{{- $role := index . 1 }}
{{- $kind := index . 2 }}
{{- $p := include "jobhandlers.probe.resolve" . | fromJson }}
{{- if eq $p.handler "heartbeat" -}}
exec:
  command:
    - sh
    - -c
    - |-
      {{- include "jobhandlers.probe.heartbeatScript" (dict "root" $root "probe" $p "kind" $kind "markers" (and (eq $kind "readiness") (eq (include "jobhandlers.drain.mode" (list $root $role)) "marker"))) | nindent 6 }}
{{- else }}
{{- dict $p.handler $p.spec | toYaml }}
{{- end }}
{{- if eq $kind "liveness" }}
initialDelaySeconds: {{ include "jobhandlers.liveness.initialDelaySeconds" (list $root $role) }}
{{- else if $p.initialDelaySeconds }}
initialDelaySeconds: {{ $p.initialDelaySeconds }}
{{- end }}
periodSeconds: {{ $p.periodSeconds }}
failureThreshold: {{ $p.failureThreshold }}
timeoutSeconds: {{ $p.timeoutSeconds }}
{{- if and (eq $kind "readiness") (ne (int64 $p.successThreshold) 1) }}
successThreshold: {{ $p.successThreshold }}
{{- end }}
{{- if and (ne $kind "readiness") $p.grace (include "jobhandlers.gate" (list $root "probeGrace")) }}
terminationGracePeriodSeconds: {{ $p.grace }}
{{- end }}
{{- end }}

{{/* The probes of a handler container, at container indentation. Call with (list $ "role"). */}}
{{- define "jobhandlers.probes" -}}
{{- $root := index . 0 }}
{{- $role := index . 1 }}
{{- range $kind := list "readiness" "liveness" }}
{{- $p := include "jobhandlers.probe.resolve" (list $root $role $kind) | fromJson }}
{{- if $p.enabled }}
{{ $kind }}Probe:
  {{- include "jobhandlers.probe.render" (list $root $role $kind) | nindent 2 }}
{{- end }}
{{- end }}
{{- if include "jobhandlers.startupProbe.rendered" (list $root $role) }}
startupProbe:
  {{- include "jobhandlers.probe.render" (list $root $role "startup") | nindent 2 }}
{{- end }}
{{- end }}

{{/* "true" when a role's probes need a shell in the image (a heartbeat probe). */}}
{{- define "jobhandlers.probes.needShell" -}}
{{- $root := index . 0 }}
{{- range $kind := list "readiness" "liveness" "startup" }}
{{- $p := include "jobhandlers.probe.resolve" (list $root (index $ 1) $kind) | fromJson }}
{{- if and $p.enabled (eq $p.handler "heartbeat") }}true{{ end }}
{{- end }}
{{- end }}
