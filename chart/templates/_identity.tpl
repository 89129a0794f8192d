{{/*
Identity: which workload kind runs a role, and what a pod learns of its own identity.

handlers.<role>.kind: Deployment (the default: interchangeable pods with random names) or
StatefulSet (stable identities: pod <name>-0, <name>-1, ... ; ingress-nginx's controller.kind).
An application whose work belongs to a process's name (Galaxy's job handlers recover only
the jobs assigned to their own --server-name; OpenWhisk's invoker ids) needs the second:
a replacement pod keeps the name, so it recovers what its predecessor held.

At most one live process per identity: the StatefulSet controller creates pod N again only
after the old pod N is gone (its whole grace, drain included), through rollouts, evictions
and node drains. On node loss the old pod stays Terminating until the kubelet confirms it
stopped, the node object is deleted, or the node gets the out-of-service taint
(non-graceful node shutdown, GA in 1.28). `kubectl delete pod --force --grace-period=0`
breaks the guarantee: the API object goes at once, and a second process with the same
name can start while the first still runs on an unreachable node.
*/}}

{{- define "jobhandlers.identity.kinds" -}}Deployment StatefulSet{{- end }}

{{/* The first enabled StatefulSet role, by name ("" when none). */}}
{{- define "jobhandlers.identity.firstStable" -}}
{{- $first := "" }}
{{- range $role, $spec := .Values.handlers }}
{{- if and $spec (ternary $spec.enabled true (hasKey $spec "enabled")) (not $first) (include "jobhandlers.identity.stable" (list $ $role)) }}{{ $first = $role }}{{ end }}
{{- end }}
{{- $first }}
{{- end }}

{{/* The role's workload kind. Call with (list $ "role"). */}}
{{- define "jobhandlers.identity.kind" -}}
{{- $spec := include "jobhandlers.role.spec" . | fromJson }}
{{- $spec.kind | default "Deployment" }}
{{- end }}

{{/* True ("true") when the role runs as a StatefulSet. Call with (list $ "role"). */}}
{{- define "jobhandlers.identity.stable" -}}
{{- if eq (include "jobhandlers.identity.kind" .) "StatefulSet" }}true{{ end }}
{{- end }}

{{/* A StatefulSet's name is at most 52 characters: its pods carry the label
controller-revision-hash=<name>-<10-character hash>, and a label value has at most 63. */}}
{{- define "jobhandlers.identity.workloadName" -}}
{{- include "jobhandlers.identity.nameOfKind" (list (index . 0) (index . 1) (include "jobhandlers.identity.kind" .)) }}
{{- end }}

{{/* The role's workload name were it of the given kind (_kindswitch.tpl looks up the other
kind's). Call with (list $ "role" "Deployment"|"StatefulSet"). */}}
{{- define "jobhandlers.identity.nameOfKind" -}}
{{- $name := include "jobhandlers.componentName" (list (index . 0) (index . 1)) }}
{{- if eq (index . 2) "StatefulSet" }}{{ $name | trunc 52 | trimSuffix "-" }}{{ else }}{{ $name }}{{ end }}
{{- end }}

{{/* The headless Service that governs a StatefulSet's pods (spec.serviceName): each pod
gets the DNS name <pod>.<service>. */}}
{{- define "jobhandlers.identity.serviceName" -}}
{{- include "jobhandlers.identity.workloadName" . | trunc 54 | trimSuffix "-" }}-pods
{{- end }}

{{/* The pod label apps.kubernetes.io/pod-index (KEP-4017: beta and on by default in 1.28,
GA in 1.32): below 1.28 the label does not exist, so JOBHANDLERS_ORDINAL is not rendered. */}}

{{/* StatefulSet rollingUpdate.maxUnavailable (MaxUnavailableStatefulSet, KEP-961: alpha 1.24,
beta off by default 1.35, beta on by default 1.37). Where the gate is off the API server
drops the field silently and the rollout replaces one pod at a time; so it is rendered
only from 1.37. */}}

{{/* The env a StatefulSet pod's containers get: its identity. JOBHANDLERS_POD_NAME is the
pod's name (stable), JOBHANDLERS_ORDINAL its index; both usable in args as $(VAR).
Call with (list $ "role"). Nothing for a Deployment. */}}
{{- define "jobhandlers.identity.env" -}}
{{- if include "jobhandlers.identity.stable" . }}
- name: JOBHANDLERS_POD_NAME
  valueFrom:
    fieldRef:
      fieldPath: metadata.name
{{- if eq (include "jobhandlers.gate" (list (index . 0) "podIndexLabel")) "true" }}
- name: JOBHANDLERS_ORDINAL
  valueFrom:
    fieldRef:
      fieldPath: metadata.labels['apps.kubernetes.io/pod-index']
{{- end }}
{{- end }}
{{- end }}

{{/* spec fields of a role's StatefulSet: serviceName, podManagementPolicy, updateStrategy.
podManagementPolicy defaults to Parallel: handlers are independent, and OrderedReady would
start pod N+1 only when pod N is Ready (a fresh install then waits out every handler's
start-up in turn, and one handler that never gets Ready stops the rest from starting).
Call with (list $ "role"). */}}
{{- define "jobhandlers.identity.statefulSetSpec" -}}
{{- $root := index . 0 }}
{{- $spec := include "jobhandlers.role.spec" . | fromJson -}}
serviceName: {{ include "jobhandlers.identity.serviceName" . }}
podManagementPolicy: {{ $spec.podManagementPolicy | default "Parallel" }}
{{- $u := deepCopy ($spec.updateStrategy | default (dict "type" "RollingUpdate")) }}
{{- if eq (toString $u.type) "OnDelete" }}{{ $u = omit $u "rollingUpdate" }}{{ end }}
{{- if and $u.rollingUpdate (hasKey $u.rollingUpdate "maxUnavailable") (ne (include "jobhandlers.gate" (list $root "statefulSetMaxUnavailable")) "true") }}
{{- $_ := set $u "rollingUpdate" (omit $u.rollingUpdate "maxUnavailable") }}
{{- end }}
{{- if and (hasKey $u "rollingUpdate") (not $u.rollingUpdate) }}{{ $u = omit $u "rollingUpdate" }}{{ end }}
updateStrategy:
  {{- toYaml $u | nindent 2 }}
{{- end }}
