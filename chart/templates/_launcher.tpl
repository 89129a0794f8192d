{{/*
Launching roles (handlers.<role>.launcher; docs/launching.md): a role whose handlers create
Kubernetes objects, one Job per unit of work (Galaxy's Kubernetes runner, Airflow's
KubernetesExecutor). The work outlives the handler pod; a restarted handler adopts it.
- RBAC: a ServiceAccount of the role's own (<fullname>-<role>), a Role with launcher.rules (null:
  lifecycle.yaml launcher.defaultRules) and its RoleBinding, both in launcher.namespace (the
  release namespace when empty). Every other role and the migration Jobs keep no token.
- Token: from Kubernetes 1.21 (projectedServiceAccountToken gate) a projected volume laid out as
  the automounted one (token, ca.crt, namespace) and mounted at its path in the handler container
  only; init containers and sidecars never see it. Its expiration is the automount's 3607 s,
  which the API server extends to a year (--service-account-extend-token-expiration, on by
  default), because in-cluster clients such as pykube-ng read the token once, at start. Below
  1.21 the ServiceAccount token is automounted into every container (JH049).
- Egress: with networkPolicy.enabled the role's policy also allows networkPolicy.apiServer (JH046).
- Pod Security of the launched pods: launcher.podSecurity (JH047); from 1.36 an opt-in
  MutatingAdmissionPolicy adds the restricted fields to the pods podSelector selects.
*/}}

{{/* "true" for an enabled role that launches. Call with (list $ "role"). */}}
{{- define "jobhandlers.launcher.enabled" -}}
{{- $spec := include "jobhandlers.role.spec" . | fromJson }}
{{- if and (ternary $spec.enabled true (hasKey $spec "enabled")) ($spec.launcher | default dict).enabled }}true{{ end }}
{{- end }}

{{/* The role's launcher settings with the defaults resolved (JSON): enabled, namespace,
rules, podSecurity {enforce, podsMeet, mutate, podSelector}. Call with (list $ "role"). */}}
{{- define "jobhandlers.launcher.settings" -}}
{{- $root := index . 0 }}
{{- include "jobhandlers.lifecycle.load" $root }}
{{- $spec := include "jobhandlers.role.spec" . | fromJson }}
{{- $l := $spec.launcher | default dict }}
{{- $ps := $l.podSecurity | default dict }}
{{- $rules := $l.rules }}
{{- if kindIs "invalid" $rules }}{{ $rules = $root.jobhandlersLifecycle.launcher.defaultRules }}{{ end }}
{{- toJson (dict
  "enabled" (eq (include "jobhandlers.launcher.enabled" .) "true")
  "namespace" ($l.namespace | default $root.Release.Namespace)
  "rules" $rules
  "enforce" ($ps.enforce | default "restricted")
  "podsMeet" ($ps.podsMeet | default "restricted")
  "mutate" (and (hasKey $ps "mutate") $ps.mutate)
  "podSelector" ($ps.podSelector | default dict)) }}
{{- end }}

{{/* The ServiceAccount of a role's pods: its own for a launching role or one that sets its
deletion cost (_scalein.tpl), else the handlers'. */}}
{{- define "jobhandlers.launcher.serviceAccountName" -}}
{{- if include "jobhandlers.role.ownServiceAccount" . }}
{{- include "jobhandlers.componentName" . }}
{{- else }}
{{- include "jobhandlers.serviceAccountName" (index . 0) }}
{{- end }}
{{- end }}

{{/* "true" for a launching role whose token is a projected volume in the handler container
alone (from 1.21); a launching role below gets the automounted token. Call with (list $ "role"). */}}
{{- define "jobhandlers.launcher.projectedToken" -}}
{{- if and (include "jobhandlers.launcher.enabled" .) (include "jobhandlers.gate" (list (index . 0) "projectedServiceAccountToken")) }}true{{ end }}
{{- end }}

{{/* The pod's automountServiceAccountToken: only a role with a token of its own (a launching
role, preferIdle) below 1.21. */}}
{{- define "jobhandlers.launcher.automount" -}}
{{- $root := index . 0 }}
{{- if and (include "jobhandlers.role.ownServiceAccount" .) (not (include "jobhandlers.gate" (list $root "projectedServiceAccountToken"))) }}true{{ else }}false{{ end }}
{{- end }}

{{/* The handler container's token mount (a launching role from 1.21). Call with (list $ "role"). */}}
{{- define "jobhandlers.launcher.tokenMount" -}}
{{- if include "jobhandlers.launcher.projectedToken" . }}
{{- include "jobhandlers.lifecycle.load" (index . 0) }}
- name: launcher-token
  mountPath: {{ (index . 0).jobhandlersLifecycle.launcher.tokenPath }}
  readOnly: true
{{- end }}
{{- end }}

{{/* The token volume, laid out as the automounted one. Call with (list $ "role"). */}}
{{- define "jobhandlers.launcher.tokenVolume" -}}
{{- if include "jobhandlers.launcher.projectedToken" . }}
{{- include "jobhandlers.lifecycle.load" (index . 0) }}
- name: launcher-token
  projected:
    sources:
      - serviceAccountToken:
          path: token
          expirationSeconds: {{ int64 (index . 0).jobhandlersLifecycle.launcher.tokenExpirationSeconds }}
      - configMap:
          name: kube-root-ca.crt
          items:
            - key: ca.crt
              path: ca.crt
      - downwardAPI:
          items:
            - path: namespace
              fieldRef:
                apiVersion: v1
                fieldPath: metadata.namespace
{{- end }}
{{- end }}

{{/* The API server egress rule of a role that calls the API server (a launching role, preferIdle; list of rules, YAML). */}}
{{- define "jobhandlers.launcher.egress" -}}
{{- if include "jobhandlers.role.ownServiceAccount" . }}
{{- $api := (index . 0).Values.networkPolicy.apiServer | default dict }}
{{- with $api.to }}
- to:
    {{- toYaml . | nindent 4 }}
  ports:
    {{- toYaml ($api.ports | default (list (dict "port" 443 "protocol" "TCP"))) | nindent 4 }}
{{- end }}
{{- end }}
{{- end }}

{{/* "true" when the role's MutatingAdmissionPolicy is rendered (mutate, >= 1.36). */}}
{{- define "jobhandlers.launcher.mutate" -}}
{{- $l := include "jobhandlers.launcher.settings" . | fromJson }}
{{- if and $l.enabled $l.mutate (include "jobhandlers.gate" (list (index . 0) "mutatingAdmissionPolicy")) $l.podSelector }}true{{ end }}
{{- end }}

{{/* The index of a Pod Security level (privileged 0, baseline 1, restricted 2). Call with (list $ "level"). */}}
{{- define "jobhandlers.launcher.levelIndex" -}}
{{- $root := index . 0 }}
{{- include "jobhandlers.lifecycle.load" $root }}
{{- $i := 0 }}
{{- range $n, $l := $root.jobhandlersLifecycle.launcher.levels }}{{ if eq $l (index $ 1) }}{{ $i = $n }}{{ end }}{{ end }}
{{- $i }}
{{- end }}
