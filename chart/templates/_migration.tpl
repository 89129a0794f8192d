{{/*
The migration Job.

Hook mode (migration.useHelmHooks=true, helm install/upgrade):
  a pre-install,pre-upgrade hook with weight migration.hookWeight and
  hook-delete-policy before-hook-creation (a failed Job keeps its pod and logs until
  the next attempt; hook-output-log-policy hook-failed makes helm print them). Everything its pod needs exists before it as hooks with a
  LOWER weight (migration.hookWeight - 1): its own ServiceAccount and, unless
  database.existingSecret is used, its own database Secret. Those two carry
  before-hook-creation,hook-succeeded: helm removes them once the hooks succeeded;
  the handlers use the release's regular ServiceAccount and Secret.

Plain mode (migration.useHelmHooks=false, Argo CD / Flux): a regular Job whose
name ends in the first 10 hex digits of sha256(rendered Job spec), so a changed
spec (new image, new command) is a new Job and an unchanged one is left alone.
Never .Release.Revision (changes on every sync), never random. Version-gated fields are
part of the spec: a cluster upgrade past 1.29 (podReplacementPolicy) makes a new Job once,
as any other spec change does (the migration is idempotent; the old Job's spec stays as created).

The pod first waits (bounded) for the database itself (init container
wait-for-database: commands.databaseCheck), then runs commands.migrate.
*/}}

{{- define "jobhandlers.migration.hookMode" -}}
{{- if .Values.migration.useHelmHooks }}true{{ end }}
{{- end }}

{{/* Weight of the hooks the migration Job depends on (ServiceAccount, Secret). */}}
{{- define "jobhandlers.migration.prerequisiteWeight" -}}
{{- sub (int64 .Values.migration.hookWeight) 1 }}
{{- end }}

{{/* The hook phases of the migration prerequisites: pre-rollback too when the
downgrade hook (migration.onRollback=downgrade) needs them. */}}
{{- define "jobhandlers.migration.prerequisitePhases" -}}
pre-install,pre-upgrade{{ if eq (toString .Values.migration.onRollback) "downgrade" }},pre-rollback{{ end }}
{{- end }}

{{/* Annotations of a migration prerequisite rendered as a hook (hook mode only). */}}
{{- define "jobhandlers.migration.prerequisiteHookAnnotations" -}}
helm.sh/hook: {{ include "jobhandlers.migration.prerequisitePhases" . }}
helm.sh/hook-weight: {{ include "jobhandlers.migration.prerequisiteWeight" . | quote }}
helm.sh/hook-delete-policy: before-hook-creation,hook-succeeded
{{- end }}

{{/* ServiceAccount of the migration pod. */}}
{{- define "jobhandlers.migration.serviceAccountName" -}}
{{- if and .Values.serviceAccount.create (include "jobhandlers.migration.hookMode" .) }}
{{- include "jobhandlers.componentName" (list . "migration") }}
{{- else }}
{{- include "jobhandlers.serviceAccountName" . }}
{{- end }}
{{- end }}

{{/* Database Secret of the migration pod. */}}
{{- define "jobhandlers.migration.databaseSecretName" -}}
{{- if and (not .Values.database.existingSecret) (include "jobhandlers.migration.hookMode" .) }}
{{- include "jobhandlers.componentName" (list . "migration-database") }}
{{- else }}
{{- include "jobhandlers.databaseSecretName" . }}
{{- end }}
{{- end }}

{{/* The ConfigMap of the config files the migration pod mounts: in hook mode its
own hook copy (weight hookWeight - 1), like the database Secret. */}}
{{- define "jobhandlers.migration.filesName" -}}
{{- if include "jobhandlers.migration.hookMode" . }}
{{- include "jobhandlers.componentName" (list . "migration-files") }}
{{- else }}
{{- include "jobhandlers.componentName" (list . "files") }}
{{- end }}
{{- end }}


{{/* The Job's spec (hashed for the plain-mode name). */}}
{{- define "jobhandlers.migration.jobSpec" -}}
{{- $m := .Values.migration -}}
backoffLimit: {{ int64 $m.backoffLimit }}
{{- /* podReplacementPolicy: Failed = a replacement pod starts only once the previous one has
fully terminated, so two migrations never overlap. Rendered from 1.29 (JobPodReplacementPolicy,
KEP-3939: alpha 1.28, beta and on by default 1.29, GA 1.34); below, the API server drops it. */}}
{{- if and $m.podReplacementPolicy (include "jobhandlers.gate" (list . "jobPodReplacementPolicy")) }}
podReplacementPolicy: {{ $m.podReplacementPolicy }}
{{- end }}
activeDeadlineSeconds: {{ int64 $m.activeDeadlineSeconds }}
{{- if not (kindIs "invalid" $m.ttlSecondsAfterFinished) }}
ttlSecondsAfterFinished: {{ int64 $m.ttlSecondsAfterFinished }}
{{- end }}
template:
  metadata:
    labels:
      {{- include "jobhandlers.podLabels" (list . "migration") | nindent 6 }}
    {{- $seccomp := include "jobhandlers.podSeccompAnnotation" . }}
    {{- $annotations := mergeOverwrite (deepCopy (.Values.podAnnotations | default dict)) ($m.podAnnotations | default dict) }}
    {{- if or $annotations $seccomp .Values.files }}
    annotations:
      {{- with $seccomp }}
      {{- . | trim | nindent 6 }}
      {{- end }}
      {{- if .Values.files }}
      checksum/files: {{ include "jobhandlers.files.checksum" . }}
      {{- end }}
      {{- with $annotations }}
      {{- toYaml . | nindent 6 }}
      {{- end }}
    {{- end }}
  spec:
    restartPolicy: Never
    {{- with $m.priorityClassName | default .Values.priorityClassName }}
    priorityClassName: {{ . }}
    {{- end }}
    serviceAccountName: {{ include "jobhandlers.migration.serviceAccountName" . }}
    automountServiceAccountToken: false
    {{- with .Values.imagePullSecrets }}
    imagePullSecrets:
      {{- toYaml . | nindent 6 }}
    {{- end }}
    securityContext:
      {{- include "jobhandlers.podSecurityContext" . | nindent 6 }}
    {{- $inits := include "jobhandlers.migration.list" (list . "extraInitContainers") | fromJsonArray }}
    {{- $before := include "jobhandlers.pod.initAt" (list $inits "before") | fromJsonArray }}
    {{- $after := include "jobhandlers.pod.initAt" (list $inits "after") | fromJsonArray }}
    {{- $sidecars := include "jobhandlers.migration.sidecars" . | fromJsonArray }}
    {{- if or $sidecars $before $m.waitForDatabase.enabled $after }}
    initContainers:
      {{- with concat $sidecars $before }}
      {{- toYaml . | nindent 6 }}
      {{- end }}
      {{- if $m.waitForDatabase.enabled }}
      - name: wait-for-database
        image: {{ include "jobhandlers.image" . }}
        imagePullPolicy: {{ .Values.image.pullPolicy }}
        command:
          - sh
          - -c
          - |-
            {{- include "jobhandlers.retryLoop" (dict "what" "wait-for-database" "timeout" $m.waitForDatabase.timeoutSeconds "interval" $m.waitForDatabase.intervalSeconds "hint" (printf "The database at %s:%d does not accept connections. Check database.host/port, the DATABASE_URL Secret and that the database is running." .Values.database.host (int .Values.database.port))) | nindent 12 }}
          - wait-for-database
        args:
          {{- toYaml .Values.commands.databaseCheck | nindent 10 }}
        {{- include "jobhandlers.pod.envBlock" (list . "migration" (include "jobhandlers.common.env" (list . (include "jobhandlers.migration.databaseSecretName" .)))) | nindent 8 }}
        securityContext:
          {{- toYaml .Values.containerSecurityContext | nindent 10 }}
        {{- with include "jobhandlers.resources" (list . $m.resources) }}
        resources:
          {{- . | nindent 10 }}
        {{- end }}
        volumeMounts:
          {{- include "jobhandlers.pod.appMounts" (list . ($m.extraVolumeMounts | default list)) | nindent 10 }}
      {{- end }}
      {{- with $after }}
      {{- toYaml . | nindent 6 }}
      {{- end }}
    {{- end }}
    containers:
      - name: {{ .jhContainer | default "migrate" }}
        image: {{ include "jobhandlers.image" . }}
        imagePullPolicy: {{ .Values.image.pullPolicy }}
        command:
          {{- toYaml (.jhCommand | default .Values.commands.migrate) | nindent 10 }}
        {{- with (ternary list $m.extraArgs (hasKey . "jhCommand")) }}
        args:
          {{- toYaml . | nindent 10 }}
        {{- end }}
        {{- include "jobhandlers.pod.envBlock" (list . "migration" (include "jobhandlers.common.env" (list . (include "jobhandlers.migration.databaseSecretName" .)))) | nindent 8 }}
        securityContext:
          {{- toYaml .Values.containerSecurityContext | nindent 10 }}
        {{- with include "jobhandlers.resources" (list . $m.resources) }}
        resources:
          {{- . | nindent 10 }}
        {{- end }}
        volumeMounts:
          {{- include "jobhandlers.pod.appMounts" (list . ($m.extraVolumeMounts | default list)) | nindent 10 }}
    volumes:
      - name: tmp
        emptyDir: {}
      {{- if .Values.files }}
      - name: files
        configMap:
          name: {{ include "jobhandlers.migration.filesName" . }}
      {{- end }}
      {{- with include "jobhandlers.migration.list" (list . "extraVolumes") | fromJsonArray }}
      {{- toYaml . | nindent 6 }}
      {{- end }}
{{- end }}

{{/* The Job's name: fixed in hook mode and with jobNameSuffix=fixed, else hashed. */}}
{{- define "jobhandlers.migration.jobName" -}}
{{- if or (include "jobhandlers.migration.hookMode" .) (eq .Values.migration.jobNameSuffix "fixed") }}
{{- include "jobhandlers.componentName" (list . "migration") }}
{{- else }}
{{- $hash := include "jobhandlers.migration.jobSpec" . | sha256sum | trunc 10 }}
{{- include "jobhandlers.componentName" (list . (printf "migration-%s" $hash)) }}
{{- end }}
{{- end }}
