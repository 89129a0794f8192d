{{/*
The `wait-for-migrations` init container of every handler pod.

It runs the image's own schema check (commands.schemaCheck: exit 0 iff the
database is at the revision this image expects; 3 behind, 4 ahead, 5 unreachable)
in a loop, printing the check's message on every try, until it passes or
waitForMigrations.timeoutSeconds have elapsed (then a clear message and exit 1,
so the pod shows Init:Error / Init:CrashLoopBackOff instead of a crashing handler).

It asks the database, not the Kubernetes API: no RBAC, no Job status, no marker file.
Same image as the handler, so "expected revision" is the handler's own.

commands.schemaWait (optional) replaces the sh loop with the app's own blocking wait
(e.g. `airflow db check-migrations --migration-wait-timeout $(WAIT_TIMEOUT_SECONDS)`),
for images without a shell: it must exit 0 at the revision, non-zero on timeout.
*/}}

{{/* The init container. Call with (list $ "role"). */}}
{{- define "jobhandlers.waitForMigrations.initContainer" -}}
{{- $root := index . 0 }}
{{- $role := index . 1 }}
{{- $w := $root.Values.waitForMigrations }}
{{- $hint := printf "The database is not at the schema revision image %s expects. Behind (exit 3): is the migration Job done? kubectl get jobs -n %s -l app.kubernetes.io/instance=%s,app.kubernetes.io/component=migration and kubectl logs on it. Ahead (exit 4): this image is older than the schema, roll forward. Unreachable (exit 5): check database.host and the DATABASE_URL Secret." (include "jobhandlers.image" $root) $root.Release.Namespace $root.Release.Name -}}
- name: wait-for-migrations
  image: {{ include "jobhandlers.image" $root | quote }}
  imagePullPolicy: {{ $root.Values.image.pullPolicy }}
  {{- if $root.Values.commands.schemaWait }}
  command:
    {{- toYaml $root.Values.commands.schemaWait | nindent 4 }}
  {{- else }}
  command:
    - sh
    - -c
    - |-
      {{- include "jobhandlers.retryLoop" (dict "what" "wait-for-migrations" "timeout" $w.timeoutSeconds "interval" $w.intervalSeconds "hint" $hint "ahead" (ternary "accept" "fail" (eq (toString $w.acceptAhead) "true"))) | nindent 6 }}
    - wait-for-migrations
  args:
    {{- toYaml $root.Values.commands.schemaCheck | nindent 4 }}
  {{- end }}
  {{- /* the handler container's own variables first (same $(VAR) meaning in both), then WAIT_TIMEOUT_SECONDS */}}
  {{- $spec := include "jobhandlers.role.spec" . | fromJson }}
  {{- $startDrained := and (hasKey $spec "startDrained") $spec.startDrained }}
  {{- $env := printf "%s\n- name: WAIT_TIMEOUT_SECONDS\n  value: %s" (include "jobhandlers.handler.env" (list $root $role $startDrained)) (int64 $w.timeoutSeconds | toString | quote) }}
  {{- include "jobhandlers.pod.envBlock" (list $root $role $env) | nindent 2 }}
  securityContext:
    {{- include "jobhandlers.containerSecurityContext" (list $root $role) | nindent 4 }}
  {{- with include "jobhandlers.resources" (list $root $w.resources) }}
  resources:
    {{- . | nindent 4 }}
  {{- end }}
  volumeMounts:
    {{- include "jobhandlers.pod.appMounts" (list $root ((include "jobhandlers.role.spec" . | fromJson).extraVolumeMounts | default list)) | nindent 4 }}
{{- end }}
