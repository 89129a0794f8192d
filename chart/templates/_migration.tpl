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
{{- if .jhPost }}
{{- include "jobhandlers.componentName" (list . "post-migration") }}
{{- else if and .Values.serviceAccount.create (include "jobhandlers.migration.hookMode" .) }}
{{- include "jobhandlers.componentName" (list . "migration") }}
{{- else }}
{{- include "jobhandlers.serviceAccountName" . }}
{{- end }}
{{- end }}

{{/* Database Secret of the migration pod. */}}
{{- define "jobhandlers.migration.databaseSecretName" -}}
{{- if and (not .Values.database.existingSecret) (include "jobhandlers.migration.hookMode" .) (not .jhPost) }}
{{- include "jobhandlers.componentName" (list . "migration-database") }}
{{- else }}
{{- include "jobhandlers.databaseSecretName" . }}
{{- end }}
{{- end }}

{{/* The ConfigMap of the config files the migration pod mounts: in hook mode its
own hook copy (weight hookWeight - 1), like the database Secret. */}}
{{- define "jobhandlers.migration.filesName" -}}
{{- if and (include "jobhandlers.migration.hookMode" .) (not .jhPost) }}
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
{{- if .jhPost }}
activeDeadlineSeconds: {{ add (int64 $m.activeDeadlineSeconds) (include "jobhandlers.postDeploy.rolloutTimeout" .) }}
{{- else }}
activeDeadlineSeconds: {{ int64 $m.activeDeadlineSeconds }}
{{- end }}
{{- if not (kindIs "invalid" $m.ttlSecondsAfterFinished) }}
ttlSecondsAfterFinished: {{ int64 $m.ttlSecondsAfterFinished }}
{{- end }}
template:
  metadata:
    labels:
      {{- include "jobhandlers.podLabels" (list . (ternary "post-migration" "migration" (hasKey . "jhPost"))) | nindent 6 }}
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
    priorityClassName: {{ . | quote }}
    {{- end }}
    serviceAccountName: {{ include "jobhandlers.migration.serviceAccountName" . | quote }}
    {{- with $m.nodeSelector }}
    nodeSelector:
      {{- toYaml . | nindent 6 }}
    {{- end }}
    {{- with $m.tolerations }}
    tolerations:
      {{- toYaml . | nindent 6 }}
    {{- end }}
    {{- with $m.affinity }}
    affinity:
      {{- toYaml . | nindent 6 }}
    {{- end }}
    {{- /* the post-deploy Job's wait-for-rollout lists pods: from 1.21 with a token only that
    init container mounts (below, the legacy automount: every container of the pod, JH038) */}}
    automountServiceAccountToken: {{ and (hasKey . "jhPost") (not (include "jobhandlers.postDeploy.projectedToken" .)) }}
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
    {{- if or $sidecars $before $m.waitForDatabase.enabled $after .jhPost }}
    initContainers:
      {{- with concat $sidecars $before }}
      {{- toYaml . | nindent 6 }}
      {{- end }}
      {{- if .jhPost }}
      {{- include "jobhandlers.postDeploy.initContainers" . | trim | nindent 6 }}
      {{- else if $m.waitForDatabase.enabled }}
      - name: wait-for-database
        image: {{ include "jobhandlers.image" . | quote }}
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
        image: {{ include "jobhandlers.image" . | quote }}
        imagePullPolicy: {{ .Values.image.pullPolicy }}
        command:
          {{- toYaml (.jhCommand | default .Values.commands.migrate) | nindent 10 }}
        {{- with (ternary list $m.extraArgs (hasKey . "jhCommand")) }}
        args:
          {{- toYaml . | nindent 10 }}
        {{- end }}
        {{- include "jobhandlers.pod.envBlock" (list . (ternary "post-migration" "migration" (hasKey . "jhPost")) (include "jobhandlers.common.env" (list . (include "jobhandlers.migration.databaseSecretName" .)))) | nindent 8 }}
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
      {{- if and .jhPost (include "jobhandlers.postDeploy.projectedToken" .) }}
      {{- include "jobhandlers.postDeploy.tokenVolume" . | nindent 6 }}
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

{{/*
The post-deploy phase (commands.postMigrate; README "Two migration phases").

commands.migrate is then the pre-deploy phase (expand: add, backfill) and commands.postMigrate
the post-deploy phase (contract: drop, rename), GitLab's pre-/post-deployment migrations and
Mastodon's SKIP_POST_DEPLOYMENT_MIGRATIONS split. The post-deploy Job runs the contract only
when no handler pod of the release runs another image than its own: the previous image's
pods, Ready, surplus or still draining (a deleted pod stays until its grace ends, hours for
long jobs), all count. Its init containers:

  wait-for-migrations  the image's schema check, looped: 0 = the pre-deploy phase is applied
                       (GitOps mode: the plain migration Job may still run), 4 = a newer image
                       migrated further: fail.
  wait-for-rollout     lists the release's pods through the API until none owned by a
                       ReplicaSet or StatefulSet runs another image (the handler container,
                       named after the pod's component) — by image, not pod-template hash: a
                       rollback restores the old image, so a post-deploy Job left waiting by a
                       failed upgrade never drops what the rolled-back pods still read.

Why the API and not the database: only the API server knows which pods still exist (a draining
pod is alive and may still run old code for hours); a database-side registry would need every
app to record its code version with a lease. Least privilege: a namespaced Role with `list` on
`pods` only (RBAC cannot narrow a list by label), bound to the Job's own ServiceAccount; from
1.21 the token is a projected, 10-minute token mounted into wait-for-rollout alone (migrate and
the app never see it); below 1.21 the ServiceAccount token is automounted (JH038).

Hook mode: a post-install,post-upgrade hook (weight migration.postDeploy.hookWeight). helm runs
post hooks after the release's resources exist (and, with --wait, are Ready): the Job needs
only those (the regular database Secret, files ConfigMap, its ServiceAccount/Role/RoleBinding),
and it waits for the old pods to exit, which the Deployments remove by themselves — nothing it
waits for waits for helm, so `helm upgrade --wait` cannot deadlock; it returns once the
contract is applied, so give --timeout the longest grace on top (README).
GitOps mode: the same Job, named with a hash of its spec; migration.postDeploy.gitOps=argocd
annotates it as an Argo CD PostSync hook, plain applies it with everything else (it waits by
itself, so it needs no ordering; Flux: see README).
*/}}

{{- define "jobhandlers.postDeploy.enabled" -}}
{{- if and .Values.migration.enabled .Values.commands.postMigrate }}true{{ end }}
{{- end }}

{{/* Projected ServiceAccount token + kube-root-ca.crt: TokenRequestProjection GA 1.20,
RootCAConfigMap (KEP-1205) GA 1.21. */}}
{{- define "jobhandlers.postDeploy.projectedToken" -}}
{{- include "jobhandlers.gate" (list . "projectedServiceAccountToken") }}
{{- end }}

{{/* The longest effective grace of any enabled role. */}}
{{- define "jobhandlers.postDeploy.maxGrace" -}}
{{- $max := 0 }}
{{- range $role, $spec := .Values.handlers }}
{{- if and $spec (ternary $spec.enabled true (hasKey $spec "enabled")) }}
{{- $max = max $max (include "jobhandlers.grace.effective" (list $ $role) | int64) }}
{{- end }}
{{- end }}
{{- $max }}
{{- end }}

{{/* wait-for-rollout's limit: explicit, else the longest grace + waitForMigrations.timeoutSeconds. */}}
{{- define "jobhandlers.postDeploy.rolloutTimeout" -}}
{{- $t := .Values.migration.postDeploy.waitForRollout.timeoutSeconds }}
{{- if kindIs "invalid" $t }}
{{- add (include "jobhandlers.postDeploy.maxGrace" . | int64) (int64 .Values.waitForMigrations.timeoutSeconds) }}
{{- else }}
{{- int64 $t }}
{{- end }}
{{- end }}

{{- define "jobhandlers.postDeploy.tokenDir" -}}
{{- if include "jobhandlers.postDeploy.projectedToken" . }}/var/run/secrets/jobhandlers{{ else }}/var/run/secrets/kubernetes.io/serviceaccount{{ end }}
{{- end }}

{{- define "jobhandlers.postDeploy.tokenVolume" -}}
- name: api-token
  projected:
    sources:
      - serviceAccountToken:
          path: token
          expirationSeconds: 600
      - configMap:
          name: kube-root-ca.crt
          items:
            - key: ca.crt
              path: ca.crt
{{- end }}

{{/* The default wait: python3 (stdlib only), the API read with the mounted token. Prints the
old pods whenever the set changes (and every 30 s); exit 0 when none is left, 1 at the timeout,
143 on SIGTERM. */}}
{{- define "jobhandlers.postDeploy.waitScript" -}}
import json, os, signal, ssl, sys, time, urllib.parse, urllib.request
signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
e = os.environ
d, img = e["API_TOKEN_DIR"], e["IMAGE"]
timeout, interval = int(e["WAIT_TIMEOUT_SECONDS"]), int(e["WAIT_INTERVAL_SECONDS"])
url = "https://%s:%s/api/v1/namespaces/%s/pods?labelSelector=%s" % (
    e["KUBERNETES_SERVICE_HOST"], e["KUBERNETES_SERVICE_PORT"], e["POD_NAMESPACE"],
    urllib.parse.quote(e["RELEASE_SELECTOR"]))
tls = ssl.create_default_context(cafile=d + "/ca.crt")
start, last, said, tries = time.time(), None, 0.0, 0
def old(pod):
    m, s = pod["metadata"], pod.get("status") or {}
    if s.get("phase") in ("Succeeded", "Failed"):
        return False
    if not any(o.get("kind") in ("ReplicaSet", "StatefulSet") for o in m.get("ownerReferences") or []):
        return False
    cs = pod["spec"]["containers"]
    role = (m.get("labels") or {}).get("app.kubernetes.io/component")
    c = next((c for c in cs if c["name"] == role), cs[0])
    return c["image"] != img
while True:
    tries += 1
    try:
        with open(d + "/token") as f:
            req = urllib.request.Request(url, headers={"Authorization": "Bearer " + f.read().strip()})
        items = json.load(urllib.request.urlopen(req, context=tls, timeout=10))["items"]
        names = sorted(p["metadata"]["name"] + (" (terminating)" if p["metadata"].get("deletionTimestamp") else "")
                       for p in items if old(p))
        state = "%d pod(s) of another image: %s" % (len(names), ", ".join(names)) if names else ""
    except Exception as exc:
        names, state = None, "cannot list pods: %s" % exc
    elapsed = int(time.time() - start)
    if names == []:
        print("wait-for-rollout: try %d after %ds: ok: every handler pod runs %s" % (tries, elapsed, img), flush=True)
        sys.exit(0)
    if state != last or time.time() - said >= 30:
        print("wait-for-rollout: try %d after %ds: %s" % (tries, elapsed, state), flush=True)
        last, said = state, time.time()
    if elapsed >= timeout:
        print("wait-for-rollout: TIMEOUT after %ds (limit %ds): %s. The post-deploy migration did not run. "
              "Old pods drain up to their grace; raise migration.postDeploy.waitForRollout.timeoutSeconds "
              "(JH037), or, after a rollback, delete this Job." % (elapsed, timeout, state), file=sys.stderr)
        sys.exit(1)
    time.sleep(interval)
{{- end }}

{{/* The post-deploy Job's own init containers (after sidecars and "before" extras). */}}
{{- define "jobhandlers.postDeploy.initContainers" -}}
{{- $m := .Values.migration }}
{{- $w := .Values.waitForMigrations }}
{{- $r := $m.postDeploy.waitForRollout }}
{{- $env := printf "%s\n- name: WAIT_TIMEOUT_SECONDS\n  value: %s" (include "jobhandlers.common.env" (list . (include "jobhandlers.migration.databaseSecretName" .))) (int64 $w.timeoutSeconds | toString | quote) }}
- name: wait-for-migrations
  image: {{ include "jobhandlers.image" . | quote }}
  imagePullPolicy: {{ .Values.image.pullPolicy }}
  {{- if .Values.commands.schemaWait }}
  command:
    {{- toYaml .Values.commands.schemaWait | nindent 4 }}
  {{- else }}
  command:
    - sh
    - -c
    - |-
      {{- include "jobhandlers.retryLoop" (dict "what" "wait-for-migrations" "timeout" $w.timeoutSeconds "interval" $w.intervalSeconds "hint" "The pre-deploy phase (commands.migrate) has not brought the schema to this image's revision: is the migration Job done?" "ahead" "fail") | nindent 6 }}
    - wait-for-migrations
  args:
    {{- toYaml .Values.commands.schemaCheck | nindent 4 }}
  {{- end }}
  {{- include "jobhandlers.pod.envBlock" (list . "post-migration" $env) | nindent 2 }}
  securityContext:
    {{- toYaml .Values.containerSecurityContext | nindent 4 }}
  {{- with include "jobhandlers.resources" (list . $m.resources) }}
  resources:
    {{- . | nindent 4 }}
  {{- end }}
  volumeMounts:
    {{- include "jobhandlers.pod.appMounts" (list . ($m.extraVolumeMounts | default list)) | nindent 4 }}
- name: wait-for-rollout
  image: {{ $r.image | default (include "jobhandlers.image" .) | quote }}
  imagePullPolicy: {{ .Values.image.pullPolicy }}
  command:
    {{- toYaml ($r.command | default (list "python3" "-c" (include "jobhandlers.postDeploy.waitScript" .))) | nindent 4 }}
  env:
    - name: POD_NAMESPACE
      value: {{ .Release.Namespace | quote }}
    - name: RELEASE_SELECTOR
      value: {{ printf "app.kubernetes.io/name=%s,app.kubernetes.io/instance=%s" (include "jobhandlers.name" .) .Release.Name | quote }}
    - name: IMAGE
      value: {{ include "jobhandlers.image" . | quote }}
    - name: WAIT_TIMEOUT_SECONDS
      value: {{ include "jobhandlers.postDeploy.rolloutTimeout" . | quote }}
    - name: WAIT_INTERVAL_SECONDS
      value: {{ int64 $r.intervalSeconds | quote }}
    - name: API_TOKEN_DIR
      value: {{ include "jobhandlers.postDeploy.tokenDir" . | quote }}
  securityContext:
    {{- toYaml .Values.containerSecurityContext | nindent 4 }}
  {{- with include "jobhandlers.resources" (list . $m.resources) }}
  resources:
    {{- . | nindent 4 }}
  {{- end }}
  {{- if include "jobhandlers.postDeploy.projectedToken" . }}
  volumeMounts:
    - name: api-token
      mountPath: {{ include "jobhandlers.postDeploy.tokenDir" . }}
      readOnly: true
  {{- end }}
{{- end }}
