{{/*
Render-time checks: values the schema cannot judge alone. Each check prints one line per
problem (jobhandlers.checks.problem): what is wrong, with the numbers, the fix, and the
rule id of `jobhandlers check` (chart/lifecycle.yaml rules with chart: true). Messages
start with "jobhandlers:". templates/checks.yaml collects every line and fails once,
GitLab checkConfig style, so a user fixes everything in one round.
*/}}

{{/* One problem: a line of the report. Call with the message. */}}
{{- define "jobhandlers.checks.problem" -}}
{{ printf "%s\n" . }}
{{- end }}

{{- define "jobhandlers.checks" -}}
{{- include "jobhandlers.checks.deprecations" . }}
{{- include "jobhandlers.checks.hookDeadlock" . }}
{{- include "jobhandlers.checks.hookSecret" . }}
{{- include "jobhandlers.checks.grace" . }}
{{- include "jobhandlers.checks.startupProbe" . }}
{{- include "jobhandlers.checks.multiplier" . }}
{{- include "jobhandlers.checks.rollback" . }}
{{- include "jobhandlers.checks.postDeploy" . }}
{{- include "jobhandlers.checks.imageTag" . }}
{{- include "jobhandlers.checks.sleepAction" . }}
{{- include "jobhandlers.checks.migrationSidecars" . }}
{{- include "jobhandlers.checks.networkPolicy" . }}
{{- include "jobhandlers.checks.envNames" (list . .Values "") }}
{{- range $role, $spec := .Values.handlers }}
{{- if and $spec (ternary $spec.enabled true (hasKey $spec "enabled")) }}
{{- include "jobhandlers.checks.probes" (list $ $role) }}
{{- include "jobhandlers.checks.drain" (list $ $role) }}
{{- include "jobhandlers.checks.identity" (list $ $role) }}
{{- include "jobhandlers.checks.launcher" (list $ $role) }}
{{- include "jobhandlers.checks.autoscaling" (list $ $role) }}
{{- include "jobhandlers.checks.scaleIn" (list $ $role) }}
{{- include "jobhandlers.checks.kindSwitch" (list $ $role) }}
{{- end }}
{{- end }}
{{- end }}

{{/* drain.runtimeMultiplier given as a string (helm --set) must still be a number >= 1. */}}
{{- define "jobhandlers.checks.multiplier" -}}
{{- $m := .Values.drain.runtimeMultiplier }}
{{- if lt (float64 $m) 1.0 }}
{{- include "jobhandlers.checks.problem" (printf "jobhandlers: drain.runtimeMultiplier=%v is below 1: the grace would be shorter than the longest job. Fix: set it to 1 or more (e.g. --set drain.runtimeMultiplier=1.5)." $m) }}
{{- end }}
{{- end }}

{{/* grpc probes only where honoured. (One handler per probe block is values.schema.json's
oneProbeHandler: helm validates it before rendering, jobhandlers check with jsonschema.) */}}
{{- define "jobhandlers.checks.probes" -}}
{{- $root := index . 0 }}
{{- $role := index . 1 }}
{{- range $kind := list "readiness" "liveness" "startup" }}
{{- $p := include "jobhandlers.probe.resolve" (list $root $role $kind) | fromJson }}
{{- /* a startupProbe below its minKubeVersion is not rendered at all (JH015 alike) */}}
{{- $rendered := or (ne $kind "startup") (include "jobhandlers.startupProbe.rendered" (list $root $role)) }}
{{- if and $p.enabled $rendered (eq $p.handler "grpc") (not (include "jobhandlers.gate" (list $root "grpcProbe"))) }}
{{- include "jobhandlers.checks.problem" (printf "jobhandlers: the %s probe of role %s is a grpc probe, but Kubernetes %s < %s drops grpc probes (GRPCContainerProbe is off there), so the container would run with no %s probe at all. Fix: use httpGet, tcpSocket or exec (e.g. grpc_health_probe) on this cluster, or target Kubernetes >= %s. (jobhandlers check: JH015)" $kind $role $root.Capabilities.KubeVersion.Version (include "jobhandlers.gate.version" (list $root "grpcProbe")) $kind (include "jobhandlers.gate.version" (list $root "grpcProbe"))) }}
{{- end }}
{{- end }}
{{- end }}

{{/* Drain adapters that cannot work as configured. */}}
{{- define "jobhandlers.checks.drain" -}}
{{- $root := index . 0 }}
{{- $role := index . 1 }}
{{- $spec := include "jobhandlers.role.spec" . | fromJson }}
{{- $d := include "jobhandlers.drain.settings" . | fromJson }}
{{- if and (eq $d.mode "marker") (not $spec.command) }}
{{- include "jobhandlers.checks.problem" (printf "jobhandlers: handlers.%s has no command, but drain.mode=marker wraps the role's command in sh -c to clear the stopping marker and exec it. Fix: set handlers.%s.command, or choose the drain adapter your app supports: handlers.%s.drain.mode none (SIGTERM alone), signal or command. (jobhandlers check: JH020)" $role $role $role) }}
{{- end }}
{{- if and (eq $d.mode "command") (not $d.command) }}
{{- include "jobhandlers.checks.problem" (printf "jobhandlers: role %s uses drain.mode=command without a drain command. Fix: set handlers.%s.drain.command (or drain.command) to the app's quiesce command, or use drain.mode none. (jobhandlers check: JH020)" $role $role) }}
{{- end }}
{{- if and $d.stopSignal (not (include "jobhandlers.drain.stopSignalRendered" .)) }}
{{- include "jobhandlers.checks.problem" (printf "jobhandlers: role %s sets drain.stopSignal=%s, but lifecycle.stopSignal needs Kubernetes >= %s with the ContainerStopSignals feature gate (alpha, off by default); this cluster is %s and drain.stopSignalFeatureGate=%v. Without it the kubelet sends the image's STOPSIGNAL (usually SIGTERM). Fix: set drain.stopSignalFeatureGate=true only if the gate is on; otherwise remove stopSignal and use drain.mode=signal with drain.signal=%s (sent by the preStop; needs sh in the image) or bake STOPSIGNAL into the image. (jobhandlers check: JH019)" $role (toString $d.stopSignal) (include "jobhandlers.gate.version" (list $root "stopSignal")) $root.Capabilities.KubeVersion.Version $root.Values.drain.stopSignalFeatureGate (trimPrefix "SIG" (toString $d.stopSignal))) }}
{{- end }}
{{- end }}

{{/* A pre-install hook cannot reach a database the same release creates. */}}
{{- define "jobhandlers.checks.hookDeadlock" -}}
{{- if and .Values.migration.enabled .Values.migration.useHelmHooks .Values.database.createdByRelease }}
{{- include "jobhandlers.checks.problem" "jobhandlers: database.createdByRelease=true with migration.useHelmHooks=true deadlocks the install: the pre-install migration hook waits for a database that helm creates only after all pre-install hooks succeeded. Fix: create the database outside this release (or in an earlier release) and set database.createdByRelease=false, or set migration.useHelmHooks=false (plain Job, hash-named). (jobhandlers check: JH004)" }}
{{- end }}
{{- end }}

{{/* In hook mode the migration pod's chart-created Secret must itself be a hook. */}}
{{- define "jobhandlers.checks.hookSecret" -}}
{{- if and .Values.migration.enabled .Values.migration.useHelmHooks (not .Values.database.existingSecret) (not .Values.database.secretIsHook) }}
{{- include "jobhandlers.checks.problem" "jobhandlers: database.secretIsHook=false with migration.useHelmHooks=true deadlocks the install: the pre-install migration pod mounts the chart-created database Secret, which helm creates only after all pre-install hooks succeeded, so the pod never starts. Fix: keep database.secretIsHook=true (the default), or use database.existingSecret, or set migration.useHelmHooks=false. (jobhandlers check: JH005)" }}
{{- end }}
{{- end }}

{{/* An explicit grace must cover the computed one (_grace.tpl); enabled roles only, like
every role check and JH001: a disabled role renders no pod its grace could apply to. */}}
{{- define "jobhandlers.checks.grace" -}}
{{- range $role, $spec := .Values.handlers }}
{{- if and $spec (ternary $spec.enabled true (hasKey $spec "enabled")) }}
{{- $explicit := include "jobhandlers.grace.explicit" (list $ $role) }}
{{- if $explicit }}
{{- $computed := include "jobhandlers.grace.computed" (list $ $role) }}
{{- if lt (int64 $explicit) (int64 $computed) }}
{{- include "jobhandlers.checks.problem" (printf "jobhandlers: handlers.%s.terminationGracePeriodSeconds=%s is shorter than the computed drain grace %s = ceil(maxJobRuntimeSeconds %d x drain.runtimeMultiplier %v) + drain.bufferSeconds %d + drain.preStopSeconds %d; a rollout would kill %s handlers mid-job. Fix: remove the override (the chart uses %s) or set it to at least %s. (jobhandlers check: JH001)" $role $explicit $computed (int64 $spec.maxJobRuntimeSeconds) $.Values.drain.runtimeMultiplier (int64 $.Values.drain.bufferSeconds) (int64 $.Values.drain.preStopSeconds) $role $computed $computed) }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}

{{/* Forcing the startupProbe below minKubeVersion needs the feature gate on. */}}
{{- define "jobhandlers.checks.startupProbe" -}}
{{- $sp := .Values.startupProbe }}
{{- if and $sp.enabled $sp.force (not $sp.featureGateEnabled) (not (include "jobhandlers.kubeAtLeast" (list . (toString $sp.minKubeVersion)))) }}
{{- include "jobhandlers.checks.problem" (printf "jobhandlers: startupProbe.force=true on Kubernetes %s (below startupProbe.minKubeVersion %s) without startupProbe.featureGateEnabled=true: there the StartupProbe feature gate is off by default and the API server silently drops the probe, so handlers would run with neither a startupProbe nor the liveness delay that replaces it. Fix: set startupProbe.featureGateEnabled=true only if you enabled the StartupProbe feature gate on this cluster; otherwise remove startupProbe.force (liveness then waits initialDelaySeconds = startupProbe.periodSeconds x failureThreshold). (jobhandlers check: JH007)" .Capabilities.KubeVersion.Version (toString $sp.minKubeVersion)) }}
{{- end }}
{{- end }}


{{/* migration.onRollback=downgrade needs the command and helm hooks. */}}
{{- define "jobhandlers.checks.rollback" -}}
{{- if eq (toString .Values.migration.onRollback) "downgrade" }}
{{- if not .Values.commands.downgrade }}
{{- include "jobhandlers.checks.problem" "jobhandlers: migration.onRollback=downgrade without commands.downgrade: the pre-rollback hook would have nothing to run. Fix: set commands.downgrade to the app's downgrade command (it runs in the image being rolled back to and must undo the revisions above that image's head), or set migration.onRollback=none. (jobhandlers check: JH022)" }}
{{- end }}
{{- if not (and .Values.migration.enabled .Values.migration.useHelmHooks) }}
{{- include "jobhandlers.checks.problem" "jobhandlers: migration.onRollback=downgrade needs migration.enabled=true and migration.useHelmHooks=true: only helm runs pre-rollback hooks. Fix: use hook mode, or migration.onRollback=none (with waitForMigrations.acceptAhead=true for expand-only migrations). (jobhandlers check: JH022)" }}
{{- end }}
{{- end }}
{{- end }}

{{/* The post-deploy phase (commands.postMigrate): the previous image's pods must survive the
pre-deploy phase, GitOps mode must say how its tool runs the Job, and the rollout wait must
outlast the longest drain. */}}
{{- define "jobhandlers.checks.postDeploy" -}}
{{- if include "jobhandlers.postDeploy.enabled" . }}
{{- if ne (toString .Values.waitForMigrations.acceptAhead) "true" }}
{{- include "jobhandlers.checks.problem" "jobhandlers: commands.postMigrate is set (two migration phases) but waitForMigrations.acceptAhead=false: after the pre-deploy phase the schema is ahead of the previous image, so any of its pods that (re)starts before the post-deploy phase (a container restart, a replacement on another node, a rollback) fails its schema gate. Fix: set waitForMigrations.acceptAhead=true, in the release BEFORE the first two-phase upgrade too (old pods keep the values they were created with), and keep the pre-deploy migrations expand-only. (jobhandlers check: JH035)" }}
{{- end }}
{{- if and (not .Values.migration.useHelmHooks) (not (has (toString .Values.migration.postDeploy.gitOps) (list "argocd" "plain"))) }}
{{- include "jobhandlers.checks.problem" "jobhandlers: commands.postMigrate is set in GitOps mode (migration.useHelmHooks=false) without migration.postDeploy.gitOps: nothing says how your tool runs the post-deploy Job. Fix: migration.postDeploy.gitOps=argocd (an Argo CD PostSync hook) or plain (a hash-named Job applied with the rest; it waits for the pre-deploy schema and the last old pod by itself: Flux Kustomization, kubectl apply). A Flux HelmRelease runs helm hooks: use migration.useHelmHooks=true. (jobhandlers check: JH036)" }}
{{- end }}
{{- $t := .Values.migration.postDeploy.waitForRollout.timeoutSeconds }}
{{- $grace := include "jobhandlers.postDeploy.maxGrace" . | int64 }}
{{- if and (not (kindIs "invalid" $t)) (lt (int64 $t) $grace) }}
{{- include "jobhandlers.checks.problem" (printf "jobhandlers: migration.postDeploy.waitForRollout.timeoutSeconds=%d is below the longest role grace (%d s): old pods may legitimately drain that long, so the post-deploy Job would give up and the contract migration would not run. Fix: remove it (the chart uses %d s = the longest grace + waitForMigrations.timeoutSeconds) or set it to at least %d. (jobhandlers check: JH037)" (int64 $t) $grace (add $grace (int64 .Values.waitForMigrations.timeoutSeconds)) $grace) }}
{{- end }}
{{- end }}
{{- end }}

{{/* Workload-kind keys that do not combine: a Deployment has no identities to manage, and
$(JOBHANDLERS_POD_NAME) / $(JOBHANDLERS_ORDINAL) exist only where the chart renders them. */}}
{{- define "jobhandlers.checks.identity" -}}
{{- $root := index . 0 }}
{{- $role := index . 1 }}
{{- $spec := include "jobhandlers.role.spec" . | fromJson }}
{{- $stable := include "jobhandlers.identity.stable" . }}
{{- if not $stable }}
{{- range $k := list "podManagementPolicy" "updateStrategy" }}
{{- if not (kindIs "invalid" (index $spec $k)) }}
{{- include "jobhandlers.checks.problem" (printf "jobhandlers: handlers.%s.%s is set, but the role is a Deployment; %s applies only to kind: StatefulSet. Fix: set handlers.%s.kind=StatefulSet for stable identities, or remove %s (a Deployment rolls by strategy). (jobhandlers check: JH023)" $role $k $k $role $k) }}
{{- end }}
{{- end }}
{{- end }}
{{- $text := toJson (list $spec.command $spec.args $spec.env) }}
{{- if and (not $stable) (contains "$(JOBHANDLERS_POD_NAME)" $text) }}
{{- include "jobhandlers.checks.problem" (printf "jobhandlers: handlers.%s uses $(JOBHANDLERS_POD_NAME), which only StatefulSet roles get: in a Deployment the text stays literal. Fix: set handlers.%s.kind=StatefulSet. (jobhandlers check: JH025)" $role $role) }}
{{- end }}
{{- if contains "$(JOBHANDLERS_ORDINAL)" $text }}
{{- if not $stable }}
{{- include "jobhandlers.checks.problem" (printf "jobhandlers: handlers.%s uses $(JOBHANDLERS_ORDINAL), which only StatefulSet roles get: in a Deployment the text stays literal. Fix: set handlers.%s.kind=StatefulSet. (jobhandlers check: JH025)" $role $role) }}
{{- else if ne (include "jobhandlers.gate" (list $root "podIndexLabel")) "true" }}
{{- include "jobhandlers.checks.problem" (printf "jobhandlers: handlers.%s uses $(JOBHANDLERS_ORDINAL), but Kubernetes %s < %s has no pod label apps.kubernetes.io/pod-index, so the chart cannot render it and the text would stay literal. Fix: use $(JOBHANDLERS_POD_NAME) (the ordinal is its last dash-separated part), or target Kubernetes >= %s. (jobhandlers check: JH025)" $role $root.Capabilities.KubeVersion.Version (include "jobhandlers.gate.version" (list $root "podIndexLabel")) (include "jobhandlers.gate.version" (list $root "podIndexLabel"))) }}
{{- end }}
{{- end }}
{{- end }}

{{/* image.tag must be a tag ([A-Za-z0-9_][A-Za-z0-9_.-]{0,127}): a digest belongs in image.digest. */}}
{{- define "jobhandlers.checks.imageTag" -}}
{{- $tag := include "jobhandlers.imageTag" . }}
{{- if contains "@" $tag }}
{{- $parts := splitn "@" 2 $tag }}
{{- include "jobhandlers.checks.problem" (printf "jobhandlers: image.tag=%q holds a digest (@%s): a tag cannot carry one, and the chart copies the tag into the app.kubernetes.io/version label. Fix: move it to image.digest: set image.digest=%s and image.tag=%q (the image is then %s@%s; the tag only names the version label). (jobhandlers check: JH028)" $tag $parts._1 $parts._1 $parts._0 .Values.image.repository $parts._1) }}
{{- else if not (regexMatch "^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$" $tag) }}
{{- include "jobhandlers.checks.problem" (printf "jobhandlers: image.tag=%q is not an image tag (at most 128 of A-Z a-z 0-9 _ . -, not starting with . or -): the image reference %s:%s is invalid and the kubelet cannot pull it. Fix: set image.tag to the release tag, e.g. \"2\"; a digest goes to image.digest. (jobhandlers check: JH028)" $tag .Values.image.repository $tag) }}
{{- end }}
{{- end }}

{{/* The containers the user gives (sidecars, extraInitContainers: chart-wide, per role,
migration) go to the API server as written: a preStop/postStart sleep action where the
cluster rejects it fails the install. The sleep action: beta, on by default from 1.30
(PodLifecycleSleepAction, KEP-3960); a 0-second sleep from 1.33 (PodLifecycleSleepActionAllowZero,
KEP-4818: beta, on by default in 1.33; GA 1.34). */}}
{{- define "jobhandlers.checks.sleepAction" -}}
{{- $lists := dict "sidecars" .Values.sidecars "extraInitContainers" .Values.extraInitContainers "migration.sidecars" .Values.migration.sidecars "migration.extraInitContainers" .Values.migration.extraInitContainers }}
{{- range $role, $spec := .Values.handlers }}
{{- if $spec }}
{{- $_ := set $lists (printf "handlers.%s.sidecars" $role) $spec.sidecars }}
{{- $_ := set $lists (printf "handlers.%s.extraInitContainers" $role) $spec.extraInitContainers }}
{{- end }}
{{- end }}
{{- range $key, $list := $lists }}
{{- range $c := $list | default list }}
{{- range $hook := list "preStop" "postStart" }}
{{- $sleep := (index ($c.lifecycle | default dict) $hook | default dict).sleep }}
{{- if $sleep }}
{{- if not (include "jobhandlers.gate" (list $ "nativeSleep")) }}
{{- include "jobhandlers.checks.problem" (printf "jobhandlers: %s: container %s has a lifecycle.%s sleep action, but Kubernetes %s < %s has none (PodLifecycleSleepAction is off there): the API server rejects the pod. Fix: use exec: {command: [sleep, \"N\"]} (needs sleep in its image), or target Kubernetes >= %s. (jobhandlers check: JH031)" $key (toString $c.name) $hook $.Capabilities.KubeVersion.Version (include "jobhandlers.gate.version" (list $ "nativeSleep")) (include "jobhandlers.gate.version" (list $ "nativeSleep"))) }}
{{- else if and (eq (int64 ($sleep.seconds | default 0)) 0) (not (include "jobhandlers.gate" (list $ "sleepZero"))) }}
{{- include "jobhandlers.checks.problem" (printf "jobhandlers: %s: container %s has lifecycle.%s.sleep.seconds=0, but Kubernetes %s < %s rejects a 0-second sleep (PodLifecycleSleepActionAllowZero is beta, on by default, from 1.33): the API server rejects the pod. Fix: remove the %s hook (a 0-second sleep does nothing), or target Kubernetes >= %s. (jobhandlers check: JH031)" $key (toString $c.name) $hook $.Capabilities.KubeVersion.Version (include "jobhandlers.gate.version" (list $ "sleepZero")) $hook (include "jobhandlers.gate.version" (list $ "sleepZero"))) }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}

{{/* A migration Job's sidecars must be native (>= 1.29): a regular one keeps running after
migrate exits, so the Job never completes. */}}
{{- define "jobhandlers.checks.migrationSidecars" -}}
{{- $sidecars := include "jobhandlers.migration.sidecars" . | fromJsonArray }}
{{- if and .Values.migration.enabled $sidecars (not (include "jobhandlers.sidecars.native" .)) }}
{{- include "jobhandlers.checks.problem" (printf "jobhandlers: the migration Job has sidecars (%s) but Kubernetes %s < %s has no native sidecars: as a regular container a sidecar keeps running after migrate exits, so the Job never completes and the install/upgrade hangs until its timeout. Fix: on Kubernetes >= %s they run as native sidecars; below, remove migration: true from sidecars (and migration.sidecars) and let the migration reach the database directly, or run the proxy as a Service. (jobhandlers check: JH016)" (include "jobhandlers.names" $sidecars) .Capabilities.KubeVersion.Version (include "jobhandlers.gate.version" (list . "nativeSidecars")) (include "jobhandlers.gate.version" (list . "nativeSidecars"))) }}
{{- end }}
{{- end }}

{{/* networkPolicy.enabled denies every egress it does not list: without a database peer (or
the user's own egress rules) no chart pod could reach the database. */}}
{{- define "jobhandlers.checks.networkPolicy" -}}
{{- $np := .Values.networkPolicy }}
{{- if and $np.enabled (not $np.database.to) (not $np.extraEgress) }}
{{- include "jobhandlers.checks.problem" (printf "jobhandlers: networkPolicy.enabled=true, but networkPolicy.database.to is empty and there is no networkPolicy.extraEgress: the policies would deny the handlers, wait-for-migrations, the migration Job and the helm test every connection to the database (%s:%v). Fix: set networkPolicy.database.to to the database's peers, e.g. an ipBlock {cidr: 10.0.0.5/32} for a database outside the cluster or a podSelector/namespaceSelector for one inside, or give networkPolicy.extraEgress rules that reach it. (jobhandlers check: JH041)" .Values.database.host .Values.database.port) }}
{{- end }}
{{- end }}

{{/* Launching roles (handlers.<role>.launcher, _launcher.tpl): what does not combine. */}}
{{- define "jobhandlers.checks.launcher" -}}
{{- $root := index . 0 }}
{{- $role := index . 1 }}
{{- $spec := include "jobhandlers.role.spec" . | fromJson }}
{{- $raw := $spec.launcher | default dict }}
{{- $ps := $raw.podSecurity | default dict }}
{{- $l := include "jobhandlers.launcher.settings" . | fromJson }}
{{- if $l.enabled }}
{{- if and (not (kindIs "invalid" $raw.rules)) (not $raw.rules) }}
{{- include "jobhandlers.checks.problem" (printf "jobhandlers: handlers.%s.launcher.enabled=true with launcher.rules=[]: the role would get an API token that may do nothing, and every launch would fail with 403 Forbidden. Fix: remove handlers.%s.launcher.rules (null: the launcher default, batch Jobs and pods) or list the PolicyRules the app needs. (jobhandlers check: JH044)" $role $role) }}
{{- end }}
{{- $np := $root.Values.networkPolicy }}
{{- $own := $spec.networkPolicy | default dict }}
{{- if and $np.enabled (not ($np.apiServer | default dict).to) (not $np.extraEgress) (not $own.extraEgress) }}
{{- include "jobhandlers.checks.problem" (printf "jobhandlers: networkPolicy.enabled=true and handlers.%s launches Kubernetes objects, but networkPolicy.apiServer.to is empty and there is no extraEgress (chart-wide or the role's): its NetworkPolicy would deny every call to the API server, so nothing is launched or adopted. Fix: set networkPolicy.apiServer.to to the API server's endpoint addresses (kubectl get endpointslice -n default -l kubernetes.io/service-name=kubernetes), e.g. [{ipBlock: {cidr: 172.18.0.2/32}}], and networkPolicy.apiServer.ports to their port. (jobhandlers check: JH046)" $role) }}
{{- end }}
{{- $meet := include "jobhandlers.launcher.levelIndex" (list $root $l.podsMeet) | int }}
{{- $need := include "jobhandlers.launcher.levelIndex" (list $root $l.enforce) | int }}
{{- $lifted := and (include "jobhandlers.launcher.mutate" .) (eq $l.podsMeet "baseline") (eq $l.enforce "restricted") }}
{{- if and (lt $meet $need) (not $lifted) }}
{{- $why := "" }}
{{- if and $l.mutate (not (include "jobhandlers.gate" (list $root "mutatingAdmissionPolicy"))) }}
{{- $why = printf " podSecurity.mutate needs Kubernetes >= %s (MutatingAdmissionPolicy GA, KEP-3962); this cluster is %s." (include "jobhandlers.gate.version" (list $root "mutatingAdmissionPolicy")) $root.Capabilities.KubeVersion.Version }}
{{- else if and $l.mutate (not $l.podSelector) }}
{{- $why = " podSecurity.mutate needs podSecurity.podSelector (the launched pods' labels)." }}
{{- else if $l.mutate }}
{{- $why = " podSecurity.mutate only lifts baseline pods to restricted." }}
{{- end }}
{{- include "jobhandlers.checks.problem" (printf "jobhandlers: handlers.%s.launcher.podSecurity: the launched pods meet Pod Security %s, but %s is enforced where they run: the Job controller could not create them and every launched job would fail.%s Fix: launch into a namespace labelled with the level the pods meet (handlers.%s.launcher.namespace, podSecurity.enforce: %s), or on Kubernetes >= %s set podSecurity.mutate=true with the launched pods' podSecurity.podSelector. (jobhandlers check: JH047)" $role $l.podsMeet $l.enforce $why $role $l.podsMeet (include "jobhandlers.gate.version" (list $root "mutatingAdmissionPolicy"))) }}
{{- end }}
{{- else if or (not (kindIs "invalid" $raw.rules)) $raw.namespace (and (hasKey $ps "mutate") $ps.mutate) }}
{{- include "jobhandlers.checks.problem" (printf "jobhandlers: handlers.%s sets launcher.rules, launcher.namespace or launcher.podSecurity.mutate, but launcher.enabled is false: nothing is rendered for them. Fix: set handlers.%s.launcher.enabled=true, or remove them. (jobhandlers check: JH045)" $role $role) }}
{{- end }}
{{- end }}

{{/* preferIdle roles (handlers.<role>.scaleIn.preferIdle, _scalein.tpl): a ReplicaSet's only, and
with a NetworkPolicy, a way to the API server (a launching role's is JH046 above). */}}
{{- define "jobhandlers.checks.scaleIn" -}}
{{- $root := index . 0 }}
{{- $role := index . 1 }}
{{- if include "jobhandlers.scaleIn.enabled" . }}
{{- if include "jobhandlers.identity.stable" . }}
{{- include "jobhandlers.checks.problem" (printf "jobhandlers: handlers.%s.scaleIn.preferIdle.enabled=true on a StatefulSet role: a StatefulSet always removes its highest ordinal and ignores controller.kubernetes.io/pod-deletion-cost (ReplicaSets only), so the deletion-cost container, token and RBAC would cost without effect. Fix: turn handlers.%s.scaleIn.preferIdle off (the drain still finishes the removed pod's jobs), or use kind: Deployment where the role needs no stable identities. (jobhandlers check: JH071)" $role $role) }}
{{- end }}
{{- $np := $root.Values.networkPolicy }}
{{- $own := (include "jobhandlers.role.spec" . | fromJson).networkPolicy | default dict }}
{{- if and $np.enabled (not (include "jobhandlers.launcher.enabled" .)) (not ($np.apiServer | default dict).to) (not $np.extraEgress) (not $own.extraEgress) }}
{{- include "jobhandlers.checks.problem" (printf "jobhandlers: networkPolicy.enabled=true and handlers.%s sets its pod-deletion-cost (scaleIn.preferIdle), but networkPolicy.apiServer.to is empty and there is no extraEgress (chart-wide or the role's): its NetworkPolicy would deny every call to the API server, so its idle pods would not go first. Fix: set networkPolicy.apiServer.to to the API server's endpoint addresses (kubectl get endpointslice -n default -l kubernetes.io/service-name=kubernetes), e.g. [{ipBlock: {cidr: 172.18.0.2/32}}], and networkPolicy.apiServer.ports to their port. (jobhandlers check: JH046)" $role) }}
{{- end }}
{{- end }}
{{- end }}

{{/* Autoscaled roles (handlers.<role>.autoscaling, _autoscaling.tpl): one autoscaler per role. */}}
{{- define "jobhandlers.checks.autoscaling" -}}
{{- $role := index . 1 }}
{{- $spec := include "jobhandlers.role.spec" . | fromJson }}
{{- $a := $spec.autoscaling | default dict }}
{{- if and ($a.hpa | default dict).enabled ($a.keda | default dict).enabled }}
{{- include "jobhandlers.checks.problem" (printf "jobhandlers: handlers.%s.autoscaling has both hpa.enabled and keda.enabled: KEDA creates an HPA of its own, and two HPAs fight over one workload's replicas. Fix: keep one of them. (jobhandlers check: JH055)" $role) }}
{{- end }}
{{- end }}

{{/* Every env[].name and envFrom[].prefix at any depth of the values (chart-wide, roles,
migration, sidecars, init containers) as the target version's API server validates it:
printable ASCII but '=' from 1.32 (relaxedEnvVarNames), a C-identifier-like name below. */}}
{{- define "jobhandlers.checks.envNames" -}}
{{- $root := index . 0 }}{{- $node := index . 1 }}{{- $path := index . 2 }}
{{- if kindIs "map" $node }}
{{- range $k, $v := $node }}
{{- $p := ternary $k (printf "%s.%s" $path $k) (eq $path "") }}
{{- if and (has $k (list "env" "envFrom")) (kindIs "slice" $v) }}
{{- $field := ternary "name" "prefix" (eq $k "env") }}
{{- range $i, $item := $v }}
{{- $n := "" }}{{- if kindIs "map" $item }}{{- $n = index $item $field }}{{- end }}
{{- if and (kindIs "string" $n) (or $n (eq $k "env")) }}
{{- $relaxed := include "jobhandlers.gate" (list $root "relaxedEnvVarNames") }}
{{- $ok := regexMatch "^[ -<>-~]+$" $n }}
{{- if and $ok (not $relaxed) }}
{{- $ok = and (regexMatch "^[-._a-zA-Z][-._a-zA-Z0-9]*$" $n) (ne $n ".") (not (hasPrefix ".." $n)) }}
{{- end }}
{{- if not $ok }}
{{- include "jobhandlers.checks.problem" (printf "jobhandlers: %s[%d].%s=%q: the API server of Kubernetes %s refuses this %s (%s), so no pod of the chart would be created. Fix: rename it to letters, digits and '_' (e.g. MY_SETTING): valid on every version; printable ASCII other than '=' only from Kubernetes %s. (jobhandlers check: JH050)" $p $i $field $n $root.Capabilities.KubeVersion.Version (ternary "variable name" "envFrom prefix" (eq $k "env")) (ternary "printable ASCII other than '=' only" "letters, digits, '_', '-' or '.', no leading digit, not '.' or '..'-prefixed" (not (not $relaxed))) (include "jobhandlers.gate.version" (list $root "relaxedEnvVarNames"))) }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}
{{- include "jobhandlers.checks.envNames" (list $root $v $p) }}
{{- end }}
{{- else if kindIs "slice" $node }}
{{- range $i, $v := $node }}
{{- include "jobhandlers.checks.envNames" (list $root $v (printf "%s[%d]" $path $i)) }}
{{- end }}
{{- end }}
{{- end }}

{{/* A role's kind switched while this release's workload of the other kind still runs
(_kindswitch.tpl, through helm's lookup: silent in helm template). The words are rule JH061's
in lifecycle.yaml, with the role, kinds, release and namespace filled in. */}}
{{- define "jobhandlers.checks.kindSwitch" -}}
{{- $root := index . 0 }}
{{- $role := index . 1 }}
{{- $found := include "jobhandlers.kindSwitch.oldWorkload" . }}
{{- if $found }}
{{- $old := $found | fromJson }}
{{- $new := include "jobhandlers.identity.kind" . }}
{{- include "jobhandlers.lifecycle.load" $root }}
{{- $rule := index $root.jobhandlersLifecycle.rules "JH061" }}
{{- $when := $rule.when }}
{{- $fix := $rule.fix }}
{{- range $k, $v := dict "<role>" $role "<old kind>" $old.kind "<new kind>" $new "<release>" $root.Release.Name "<namespace>" $root.Release.Namespace }}
{{- $when = replace $k $v $when }}
{{- $fix = replace $k $v $fix }}
{{- end }}
{{- $state := printf "spec.replicas %d, status.replicas %d" (int64 $old.specReplicas) (int64 $old.statusReplicas) }}
{{- if $old.pods }}
{{- $state = printf "replicas 0, but %d of its pods are still there, %d of them terminating (draining)" (int64 $old.pods) (int64 $old.terminating) }}
{{- end }}
{{- include "jobhandlers.checks.problem" (printf "jobhandlers: handlers.%s.kind=%s, but this release's %s %s still runs (%s). Refused because %s. Fix: %s. (jobhandlers check: JH061)" $role $new $old.kind $old.name $state (replace "`" "" $when) (replace "`" "" $fix)) }}
{{- end }}
{{- end }}
