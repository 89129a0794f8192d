{{/*
Names, labels and small shared pieces. Lifecycle logic lives in its own file:
_migration.tpl, _wait-for-migrations.tpl, _probes.tpl, _grace.tpl, _drain.tpl,
_checks.tpl.
*/}}

{{- define "jobhandlers.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "jobhandlers.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* "<fullname>-<suffix>", at most 63 characters. Call with (list $ "suffix"). */}}
{{- define "jobhandlers.componentName" -}}
{{- $root := index . 0 }}
{{- $suffix := index . 1 }}
{{- $full := include "jobhandlers.fullname" $root }}
{{- printf "%s-%s" ($full | trunc (int (sub 62 (len $suffix)))) $suffix | trimSuffix "-" }}
{{- end }}

{{- define "jobhandlers.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The image tag: image.tag, else the chart's appVersion. */}}
{{- define "jobhandlers.imageTag" -}}
{{- .Values.image.tag | default .Chart.AppVersion | toString }}
{{- end }}

{{/* The image reference of every container the chart renders: repository@digest when
image.digest is set (the tag is then ignored, as in the Bitnami and Apache Airflow charts:
a digest names exactly one image), else repository:tag. */}}
{{- define "jobhandlers.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (include "jobhandlers.imageTag" .) }}
{{- end }}
{{- end }}

{{/* The app.kubernetes.io/version label: the tag as a valid label value whatever the tag
holds (at most 63 of [A-Za-z0-9._-], alphanumeric at both ends; other characters become
"_"). The API server rejects every object whose label carries "@" or ":". */}}
{{- define "jobhandlers.versionLabel" -}}
{{- regexReplaceAll "[^-A-Za-z0-9_.]" (include "jobhandlers.imageTag" .) "_" | trunc 63 | trimAll "-_." }}
{{- end }}

{{/* Selector labels. Call with (list $ "component"). */}}
{{- define "jobhandlers.selectorLabels" -}}
{{- $root := index . 0 -}}
app.kubernetes.io/name: {{ include "jobhandlers.name" $root | quote }}
app.kubernetes.io/instance: {{ $root.Release.Name | quote }}
app.kubernetes.io/component: {{ index . 1 | quote }}
{{- end }}

{{/* Standard labels. Call with (list $ "component"). */}}
{{- define "jobhandlers.labels" -}}
{{- $root := index . 0 -}}
helm.sh/chart: {{ include "jobhandlers.chart" $root }}
{{ include "jobhandlers.selectorLabels" . }}
app.kubernetes.io/version: {{ include "jobhandlers.versionLabel" $root | quote }}
app.kubernetes.io/part-of: {{ include "jobhandlers.name" $root | quote }}
app.kubernetes.io/managed-by: {{ $root.Release.Service }}
{{- end }}

{{/* Labels of a pod template: selector labels, version, podLabels. Call with (list $ "component"). */}}
{{- define "jobhandlers.podLabels" -}}
{{- $root := index . 0 -}}
{{ include "jobhandlers.selectorLabels" . }}
app.kubernetes.io/version: {{ include "jobhandlers.versionLabel" $root | quote }}
{{- $labels := deepCopy ($root.Values.podLabels | default dict) }}
{{- if not (has (index . 1) (list "migration" "post-migration")) }}
{{- $labels = mergeOverwrite $labels ((include "jobhandlers.role.spec" . | fromJson).podLabels | default dict) }}
{{- else }}
{{- $labels = mergeOverwrite $labels ($root.Values.migration.podLabels | default dict) }}
{{- end }}
{{- with omit $labels "app.kubernetes.io/name" "app.kubernetes.io/instance" "app.kubernetes.io/component" }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* The ServiceAccount the handlers use. */}}
{{- define "jobhandlers.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "jobhandlers.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* The Secret holding DATABASE_URL for the handlers. */}}
{{- define "jobhandlers.databaseSecretName" -}}
{{- if .Values.database.existingSecret }}
{{- .Values.database.existingSecret }}
{{- else }}
{{- include "jobhandlers.componentName" (list . "database") }}
{{- end }}
{{- end }}

{{- define "jobhandlers.databaseSecretKey" -}}
{{- if .Values.database.existingSecret }}
{{- .Values.database.existingSecretKey }}
{{- else -}}
DATABASE_URL
{{- end }}
{{- end }}

{{/* postgresql://user:password@host:port/name, user and password percent-encoded
(urlquery, with its "+" for a space turned into %20: "+" is literal in userinfo). */}}
{{- define "jobhandlers.databaseUrl" -}}
{{- $db := .Values.database }}
{{- $auth := urlquery $db.user | replace "+" "%20" }}
{{- if $db.password }}
{{- $auth = printf "%s:%s" $auth (urlquery $db.password | replace "+" "%20") }}
{{- end }}
{{- printf "postgresql://%s@%s:%d/%s" $auth $db.host (int $db.port) $db.name }}
{{- end }}

{{/* The DATABASE_URL env var. Call with (list $ "secret-name"). */}}
{{- define "jobhandlers.databaseEnv" -}}
{{- $root := index . 0 -}}
- name: DATABASE_URL
  valueFrom:
    secretKeyRef:
      name: {{ index . 1 }}
      key: {{ include "jobhandlers.databaseSecretKey" $root }}
{{- end }}

{{/* An emptyDir for /tmp (the root filesystem is read-only). */}}
{{- define "jobhandlers.tmpVolumeMount" -}}
- name: tmp
  mountPath: /tmp
{{- end }}

{{/*
A bounded retry loop: runs "$@" until it exits 0, printing its output on every
try; after timeoutSeconds prints the hint and exits 1.
Call with (dict "what" "wait-for-migrations" "timeout" N "interval" N "hint" "..." ["ahead" "accept"|"fail"]).
ahead: what exit 4 ("schema ahead of this image") means: accept = pass with a warning,
fail = fail at once with the fixes (no waiting out the timeout), unset = retry like any failure.
The loop is a POSIX sh script; the command comes as positional arguments.

Signals: the loop is PID 1 of its container, and the kernel drops every signal PID 1
has no handler for (SIGKILL aside). Without the trap, SIGTERM did nothing: a pod
deleted, uninstalled or drained while waiting was killed only when its whole
terminationGracePeriodSeconds had run out (hours for a long job role), exactly when a
migration was slow or failed. With it, SIGTERM exits 143 and SIGINT (an image
STOPSIGNAL) 130 at once, printing how long it waited. sh runs a trap only after
the foreground command returns, so the check and the sleep run in the background
and are waited for (`wait` returns on a signal); the check's output goes through a
file in /tmp (the chart's emptyDir), since $(...) cannot be waited for that way.
*/}}
{{- define "jobhandlers.retryLoop" -}}
what={{ .what | quote }}; timeout={{ int .timeout }}; interval={{ int .interval }}
start=$(date +%s); try=0; child=""; outf="${TMPDIR:-/tmp}/jobhandlers-$what.$$"
stop() {
  [ -z "$child" ] || kill "$child" 2>/dev/null
  echo "$what: stopped by SIG$1 after $(( $(date +%s) - start ))s (try $try)"
  exit "$2"
}
trap 'rm -f "$outf"' EXIT
trap 'stop TERM 143' TERM
trap 'stop INT 130' INT
while :; do
  try=$((try + 1))
  "$@" >"$outf" 2>&1 & child=$!
  wait "$child"; rc=$?; child=""
  out=$(cat "$outf")
  elapsed=$(( $(date +%s) - start ))
  if [ "$rc" -eq 0 ]; then
    echo "$what: try $try after ${elapsed}s: ok${out:+: $out}"
    exit 0
  fi
  {{- if eq (toString .ahead) "accept" }}
  if [ "$rc" -eq 4 ]; then
    echo "$what: WARNING: the schema is ahead of this image (${out:-exit 4}); accepted: waitForMigrations.acceptAhead=true (the newer revisions must be expand-only)"
    exit 0
  fi
  {{- else if eq (toString .ahead) "fail" }}
  if [ "$rc" -eq 4 ]; then
    echo "$what: schema is ahead of this image (${out:-exit 4}): roll forward (deploy the newer image), or downgrade with migration.onRollback=downgrade and commands.downgrade; set waitForMigrations.acceptAhead=true only if the newer revisions are expand-only" >&2
    exit 1
  fi
  {{- end }}
  echo "$what: try $try after ${elapsed}s: '$*' exited $rc${out:+: $out}"
  if [ "$elapsed" -ge "$timeout" ]; then
    echo "$what: TIMEOUT: still failing after ${elapsed}s (limit ${timeout}s, last exit $rc). {{ .hint }}" >&2
    exit 1
  fi
  sleep "$interval" & child=$!
  wait "$child"; child=""
done
{{- end }}

{{/* The names of a list of containers, comma-separated. */}}
{{- define "jobhandlers.names" -}}
{{- $names := list }}
{{- range . }}{{ $names = append $names (toString .name) }}{{ end }}
{{- join ", " $names }}
{{- end }}
