{{/*
Pod shape: what operators add around the lifecycle (env, config files, volumes, extra
init containers, sidecars, placement, security contexts). Chart-wide lists come first,
the role's (or migration's) are appended; maps are merged, the role's keys winning.

Init container order of a handler pod (Kubernetes runs them in this order):
  1. native sidecars (Kubernetes >= 1.29): a database proxy is up before anything
     needs the database, and is stopped only after the handler container has exited;
  2. extraInitContainers with position "before" (the default): a proxy or config
     renderer runs before wait-for-migrations needs the database;
  3. wait-for-migrations;
  4. extraInitContainers with position "after".
*/}}

{{/* Native sidecars (SidecarContainers: beta, on by default from 1.29; GA 1.33).
Below, restartPolicy on an init container is dropped by the API server and the
"sidecar" would block the pod's start forever. */}}

{{- define "jobhandlers.sidecars.native" -}}
{{- if include "jobhandlers.gate" (list . "nativeSidecars") }}true{{ end }}
{{- end }}

{{/* chart-wide list + the role's list (JSON list). Call with (list $ "role" "key"). */}}
{{- define "jobhandlers.pod.list" -}}
{{- $root := index . 0 }}
{{- $key := index . 2 }}
{{- $spec := include "jobhandlers.role.spec" (list $root (index . 1)) | fromJson }}
{{- toJson (concat (index $root.Values $key | default list) (index $spec $key | default list)) }}
{{- end }}

{{/* Same for the migration Job: chart-wide + migration.<key>. Call with (list $ "key"). */}}
{{- define "jobhandlers.migration.list" -}}
{{- $root := index . 0 }}
{{- $key := index . 1 }}
{{- toJson (concat (index $root.Values $key | default list) (index $root.Values.migration $key | default list)) }}
{{- end }}

{{/* The config-files volume mount, when files are set. */}}
{{- define "jobhandlers.files.volumeMount" -}}
{{- if .Values.files }}
- name: files
  mountPath: {{ .Values.filesMountPath }}
  readOnly: true
{{- end }}
{{- end }}

{{/* sha256 of the rendered files (the pod template annotation). */}}
{{- define "jobhandlers.files.checksum" -}}
{{- toJson .Values.files | sha256sum }}
{{- end }}

{{/* Volume mounts of an application container besides its own: tmp, files, the
chart-wide extraVolumeMounts and the given extra list. Call with (list $ $extraMounts). */}}
{{- define "jobhandlers.pod.appMounts" -}}
{{- $root := index . 0 }}
{{- include "jobhandlers.tmpVolumeMount" $root }}
{{- include "jobhandlers.files.volumeMount" $root }}
{{- with concat ($root.Values.extraVolumeMounts | default list) (index . 1) }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* env + envFrom of an application container: the chart's own first, then the
chart-wide and the role's lists. Call with (list $ "role"|"migration" $chartEnvYaml). */}}
{{- define "jobhandlers.pod.envBlock" -}}
{{- $root := index . 0 }}
{{- $role := index . 1 }}
{{- $env := list }}
{{- $envFrom := list }}
{{- if eq $role "migration" }}
{{- $env = include "jobhandlers.migration.list" (list $root "env") | fromJsonArray }}
{{- $envFrom = include "jobhandlers.migration.list" (list $root "envFrom") | fromJsonArray }}
{{- else if eq $role "post-migration" }}
{{- $env = concat (include "jobhandlers.migration.list" (list $root "env") | fromJsonArray) ($root.Values.migration.postDeploy.env | default list) }}
{{- $envFrom = include "jobhandlers.migration.list" (list $root "envFrom") | fromJsonArray }}
{{- else }}
{{- $env = include "jobhandlers.pod.list" (list $root $role "env") | fromJsonArray }}
{{- $envFrom = include "jobhandlers.pod.list" (list $root $role "envFrom") | fromJsonArray }}
{{- end -}}
env:
  {{- index . 2 | nindent 2 }}
  {{- with $env }}
  {{- toYaml . | nindent 2 }}
  {{- end }}
{{- with $envFrom }}
envFrom:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}

{{/* Strip the chart's own keys from a container list. Call with (list $list "key"...). */}}
{{- define "jobhandlers.pod.stripKeys" -}}
{{- $out := list }}
{{- range (index . 0) }}
{{- $out = append $out (omit . "position" "migration") }}
{{- end }}
{{- toJson $out }}
{{- end }}

{{/* extraInitContainers at a position ("before"|"after"), JSON list. Call with (list $list "before"). */}}
{{- define "jobhandlers.pod.initAt" -}}
{{- $out := list }}
{{- range (index . 0) }}
{{- if eq (toString (.position | default "before")) (index $ 1) }}
{{- $out = append $out (omit . "position" "migration") }}
{{- end }}
{{- end }}
{{- toJson $out }}
{{- end }}

{{/* Sidecars as native init containers (restartPolicy: Always), JSON list. */}}
{{- define "jobhandlers.pod.nativeSidecars" -}}
{{- $out := list }}
{{- range (index . 0) }}
{{- $out = append $out (merge (dict "restartPolicy" "Always") (omit . "position" "migration")) }}
{{- end }}
{{- toJson $out }}
{{- end }}

{{/* The initContainers of a handler pod, in the order above (YAML list, "" when none).
Call with (list $ "role"). */}}
{{- define "jobhandlers.pod.initContainers" -}}
{{- $root := index . 0 }}
{{- $role := index . 1 }}
{{- $inits := include "jobhandlers.pod.list" (list $root $role "extraInitContainers") | fromJsonArray }}
{{- $sidecars := include "jobhandlers.pod.list" (list $root $role "sidecars") | fromJsonArray }}
{{- $list := list }}
{{- if include "jobhandlers.sidecars.native" $root }}
{{- $list = concat $list (include "jobhandlers.pod.nativeSidecars" (list $sidecars) | fromJsonArray) }}
{{- end }}
{{- $list = concat $list (include "jobhandlers.pod.initAt" (list $inits "before") | fromJsonArray) }}
{{- with $list }}
{{ toYaml . }}
{{- end }}
{{- if $root.Values.waitForMigrations.enabled }}
{{ include "jobhandlers.waitForMigrations.initContainer" (list $root $role) }}
{{- end }}
{{- with include "jobhandlers.pod.initAt" (list $inits "after") | fromJsonArray }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* Sidecars as regular containers (below the native-sidecar version), YAML list or "". */}}
{{- define "jobhandlers.pod.regularSidecars" -}}
{{- $root := index . 0 }}
{{- if not (include "jobhandlers.sidecars.native" $root) }}
{{- with include "jobhandlers.pod.stripKeys" (list (include "jobhandlers.pod.list" . | fromJsonArray)) | fromJsonArray }}
{{ toYaml . }}
{{- end }}
{{- end }}
{{- end }}

{{/* Sidecars of the migration Job: those marked migration: true (JSON list, native form). */}}
{{- define "jobhandlers.migration.sidecars" -}}
{{- $out := list }}
{{- range (.Values.sidecars | default list) }}{{ if .migration }}{{ $out = append $out . }}{{ end }}{{ end }}
{{- $out = concat $out (.Values.migration.sidecars | default list) }}
{{- include "jobhandlers.pod.nativeSidecars" (list $out) }}
{{- end }}

{{/* The pod securityContext of a role: podSecurityContext merged with the role's.
The seccompProfile field exists from Kubernetes 1.19; below that it is an unknown field
(helm's OpenAPI validation rejects it), so it is left out there and
"jobhandlers.podSeccompAnnotation" sets the pre-1.19 annotation.
Call with $ (chart-wide) or (list $ "role"). */}}
{{- define "jobhandlers.podSecurityContext" -}}
{{- $root := . }}
{{- $own := dict }}
{{- if kindIs "slice" . }}
{{- $root = index . 0 }}
{{- $own = (include "jobhandlers.role.spec" . | fromJson).podSecurityContext | default dict }}
{{- end }}
{{- $ctx := mergeOverwrite (deepCopy $root.Values.podSecurityContext) $own }}
{{- if not (include "jobhandlers.gate" (list $root "seccompField")) }}
{{- $_ := unset $ctx "seccompProfile" }}
{{- end }}
{{- toYaml $ctx }}
{{- end }}

{{/* The container securityContext of a role's handler container. Call with (list $ "role"). */}}
{{- define "jobhandlers.containerSecurityContext" -}}
{{- $root := index . 0 }}
{{- toYaml (mergeOverwrite (deepCopy $root.Values.containerSecurityContext) ((include "jobhandlers.role.spec" . | fromJson).securityContext | default dict)) }}
{{- end }}

{{/* Below 1.19: the seccomp annotation equivalent to podSecurityContext.seccompProfile. */}}
{{- define "jobhandlers.podSeccompAnnotation" -}}
{{- $profile := (.Values.podSecurityContext.seccompProfile | default dict) }}
{{- if and $profile (not (include "jobhandlers.gate" (list . "seccompField"))) }}
{{- if eq (toString $profile.type) "RuntimeDefault" }}
seccomp.security.alpha.kubernetes.io/pod: runtime/default
{{- else if eq (toString $profile.type) "Localhost" }}
seccomp.security.alpha.kubernetes.io/pod: {{ printf "localhost/%s" $profile.localhostProfile | quote }}
{{- else if eq (toString $profile.type) "Unconfined" }}
seccomp.security.alpha.kubernetes.io/pod: unconfined
{{- end }}
{{- end }}
{{- end }}

{{/* topologySpreadConstraints are honoured from 1.18 (EvenPodsSpread beta); matchLabelKeys
(spread each rollout's pods on their own, MatchLabelKeysInPodTopologySpread beta) from 1.27. */}}

{{/* The role's topologySpreadConstraints (YAML list or ""). null: spread over nodes. */}}
{{- define "jobhandlers.pod.topologySpread" -}}
{{- $root := index . 0 }}
{{- $role := index . 1 }}
{{- $spec := include "jobhandlers.role.spec" . | fromJson }}
{{- if include "jobhandlers.gate" (list $root "spread") }}
{{- if kindIs "invalid" $spec.topologySpreadConstraints }}
{{- $c := dict "maxSkew" 1 "topologyKey" "kubernetes.io/hostname" "whenUnsatisfiable" "ScheduleAnyway" "labelSelector" (dict "matchLabels" (include "jobhandlers.selectorLabels" (list $root $role) | fromYaml)) }}
{{- if include "jobhandlers.gate" (list $root "spreadMatchLabelKeys") }}
{{- $_ := set $c "matchLabelKeys" (list "pod-template-hash") }}
{{- end }}
{{- toYaml (list $c) }}
{{- else if $spec.topologySpreadConstraints }}
{{- toYaml $spec.topologySpreadConstraints }}
{{- end }}
{{- end }}
{{- end }}

{{/* The role's tolerations: its own, plus not-ready/unreachable with
nodeLossTolerationSeconds unless it tolerates those keys itself (YAML list or ""). */}}
{{- define "jobhandlers.pod.tolerations" -}}
{{- $root := index . 0 }}
{{- $spec := include "jobhandlers.role.spec" . | fromJson }}
{{- $list := $spec.tolerations | default list }}
{{- $seconds := $root.Values.nodeLossTolerationSeconds }}
{{- if and (hasKey $spec "nodeLossTolerationSeconds") (not (kindIs "invalid" $spec.nodeLossTolerationSeconds)) }}{{ $seconds = $spec.nodeLossTolerationSeconds }}{{ end }}
{{- if not (kindIs "invalid" $seconds) }}
{{- $own := list }}
{{- range $list }}{{ $own = append $own (toString .key) }}{{ end }}
{{- range $key := list "node.kubernetes.io/not-ready" "node.kubernetes.io/unreachable" }}
{{- if not (has $key $own) }}
{{- $list = append $list (dict "key" $key "operator" "Exists" "effect" "NoExecute" "tolerationSeconds" (int64 $seconds)) }}
{{- end }}
{{- end }}
{{- end }}
{{- with $list }}{{ toYaml . }}{{ end }}
{{- end }}

{{/* The role's Deployment strategy (Recreate carries no rollingUpdate). */}}
{{- define "jobhandlers.pod.strategy" -}}
{{- $spec := include "jobhandlers.role.spec" . | fromJson }}
{{- $s := $spec.strategy | default (dict "type" "RollingUpdate" "rollingUpdate" (dict "maxSurge" 1 "maxUnavailable" 0)) }}
{{- if eq (toString $s.type) "Recreate" }}{{ $s = omit $s "rollingUpdate" }}{{ end }}
{{- toYaml $s }}
{{- end }}

{{/*
The chart's own variables come first in the env of every container that gets the
user's env (chart-wide env, then the role's or migration.env): Kubernetes expands
$(VAR) in an env value only from names defined EARLIER IN THE SAME CONTAINER, so a
user value such as "$(JOBHANDLERS_STATE_DIR)/x.log" must find the chart's name in
each container it is copied into, or it stays literal there (generator/model.py:
env_containers; `jobhandlers check` JH026 warns where a name stays undefined).
  handler container, wait-for-migrations (+ WAIT_TIMEOUT_SECONDS): "jobhandlers.handler.env"
  wait-for-database, migrate, downgrade, the helm test's schema-check (no role, so no
  JOBHANDLERS_ROLE, DRAIN_DEADLINE_SECONDS, JOBHANDLERS_START_DRAINED): "jobhandlers.common.env"
extraInitContainers and sidecars are the user's containers as written: no chart env.
*/}}

{{/* The env the chart gives a handler container (before the user's env). Call with
(list $ "role" $startDrained). */}}
{{- define "jobhandlers.handler.env" -}}
{{- $root := index . 0 }}
{{- $role := index . 1 -}}
{{ include "jobhandlers.databaseEnv" (list $root (include "jobhandlers.databaseSecretName" $root)) }}
- name: JOBHANDLERS_ROLE
  value: {{ $role | quote }}
{{- include "jobhandlers.identity.env" (list $root $role) }}
{{ include "jobhandlers.stateEnv" $root }}
{{ include "jobhandlers.drain.env" . }}
{{- include "jobhandlers.acceptAheadEnv" $root }}
{{- end }}

{{/* The env the chart gives a container without a role (migration Job, helm test),
before the user's env. Call with (list $ "database-secret-name"). */}}
{{- define "jobhandlers.common.env" -}}
{{- $root := index . 0 -}}
{{ include "jobhandlers.databaseEnv" . }}
{{ include "jobhandlers.stateEnv" $root }}
{{- include "jobhandlers.acceptAheadEnv" $root }}
{{- end }}

{{/* JOBHANDLERS_STATE_DIR and HEARTBEAT_INTERVAL_SECONDS (no role needed). */}}
{{- define "jobhandlers.stateEnv" -}}
- name: JOBHANDLERS_STATE_DIR
  value: {{ .Values.heartbeat.dir | quote }}
- name: HEARTBEAT_INTERVAL_SECONDS
  value: {{ int64 .Values.heartbeat.intervalSeconds | quote }}
{{- end }}

{{/* waitForMigrations.acceptAhead: tell the app too (JOBHANDLERS_SCHEMA_ACCEPT_AHEAD=1), so a
handler that refuses a foreign schema accepts a newer, expand-only one. */}}
{{- define "jobhandlers.acceptAheadEnv" -}}
{{- if eq (toString .Values.waitForMigrations.acceptAhead) "true" }}
- name: JOBHANDLERS_SCHEMA_ACCEPT_AHEAD
  value: "1"
{{- end }}
{{- end }}

{{/* unhealthyPodEvictionPolicy of a role's PodDisruptionBudget: handlers.<role>.pdb's, else
pdb.unhealthyPodEvictionPolicy; rendered from 1.27 (PDBUnhealthyPodEvictionPolicy, KEP-3017:
alpha 1.26, beta and on by default 1.27, GA 1.31), "" below or when null. AlwaysAllow lets
a drain evict a role's pods that run but are not Ready (drain mode, startDrained, a readiness
outage) instead of hanging on the budget. Call with (list $ "role"). */}}

{{- define "jobhandlers.pdb.unhealthyPodEvictionPolicy" -}}
{{- $root := index . 0 }}
{{- $own := ((include "jobhandlers.role.spec" . | fromJson).pdb | default dict).unhealthyPodEvictionPolicy }}
{{- $policy := $own | default ($root.Values.pdb | default dict).unhealthyPodEvictionPolicy }}
{{- if and $policy (include "jobhandlers.gate" (list $root "pdbUnhealthyPodEvictionPolicy")) }}
{{- $policy }}
{{- end }}
{{- end }}

{{/* The resources of a container the chart owns: its own (non-empty) block, else
defaultResources (YAML, "" when both are empty). Only an empty block falls back: own limits
without requests keep Kubernetes' requests = limits. Call with (list $ $own). */}}
{{- define "jobhandlers.resources" -}}
{{- $root := index . 0 }}
{{- with (index . 1) | default $root.Values.defaultResources }}
{{- toYaml . }}
{{- end }}
{{- end }}
