{{/*
Scale-in that takes idle pods first (handlers.<role>.scaleIn.preferIdle; README: Autoscaling).
A ReplicaSet scale-in (an HPA's, KEDA's, `kubectl scale`) removes, after unscheduled, pending and
not-Ready pods, the pods with the lowest controller.kubernetes.io/pod-deletion-cost first
(PodDeletionCost, beta and on by default from 1.22, KEP-2255; pkg/controller/controller_utils.go).
A StatefulSet ignores it and removes its highest ordinal: refused (JH071).
- The container `deletion-cost` (a regular container of the pod, every version) reads the busy
  signal every periodSeconds (a file glob in heartbeat.dir that the app writes while it runs work,
  or busyCommand) and patches its own pod's annotation when the state changes, with curl or
  python3 from its image. A terminating pod is never a scale-in victim, so it stops at SIGTERM.
- RBAC: the role's ServiceAccount of its own (<fullname>-<role>, shared with a launcher), a Role
  that may patch pods and its RoleBinding. The API token is a projected volume in that container
  only (from 1.21; below, automounted into every container, JH070).
- From 1.30 (ValidatingAdmissionPolicy GA, KEP-3488) a policy narrows the token: a request of that
  ServiceAccount may change only the pod named in its token (the pod-bound token's user extra
  authentication.kubernetes.io/pod-name) and only that annotation. Below, RBAC lets it patch any
  pod of the namespace (JH070 warns).
*/}}

{{/* "true" for an enabled role with preferIdle on. Call with (list $ "role"). */}}
{{- define "jobhandlers.scaleIn.enabled" -}}
{{- $spec := include "jobhandlers.role.spec" . | fromJson }}
{{- if and (ternary $spec.enabled true (hasKey $spec "enabled")) ((($spec.scaleIn | default dict).preferIdle | default dict).enabled) }}true{{ end }}
{{- end }}

{{/* The role's preferIdle settings with the defaults resolved (JSON). Call with (list $ "role"). */}}
{{- define "jobhandlers.scaleIn.settings" -}}
{{- $root := index . 0 }}
{{- include "jobhandlers.lifecycle.load" $root }}
{{- $lc := $root.jobhandlersLifecycle.scaleIn }}
{{- $spec := include "jobhandlers.role.spec" . | fromJson }}
{{- $p := ($spec.scaleIn | default dict).preferIdle | default dict }}
{{- $path := $p.busyPath | default "busy" }}
{{- if not (hasPrefix "/" $path) }}{{ $path = printf "%s/%s" $root.Values.heartbeat.dir $path }}{{ end }}
{{- toJson (dict
  "busyPath" $path
  "busyCommand" ($p.busyCommand | default list)
  "periodSeconds" (int64 ($p.periodSeconds | default 5))
  "busyCost" (int64 (ternary $lc.busyCost $p.busyCost (kindIs "invalid" $p.busyCost)))
  "idleCost" (int64 (ternary $lc.idleCost $p.idleCost (kindIs "invalid" $p.idleCost)))
  "image" ($p.image | default (include "jobhandlers.image" $root))
  "resources" ($p.resources | default dict)) }}
{{- end }}

{{/* "true" when the role's pods run with a ServiceAccount of the role's own: it launches, or
sets its deletion cost. Call with (list $ "role"). */}}
{{- define "jobhandlers.role.ownServiceAccount" -}}
{{- if or (include "jobhandlers.launcher.enabled" .) (include "jobhandlers.scaleIn.enabled" .) }}true{{ end }}
{{- end }}

{{/* "true" when the deletion-cost container's token is a projected volume (from 1.21). */}}
{{- define "jobhandlers.scaleIn.projectedToken" -}}
{{- $root := index . 0 }}
{{- if and (include "jobhandlers.scaleIn.enabled" .) (include "jobhandlers.gate" (list $root "projectedServiceAccountToken")) }}true{{ end }}
{{- end }}

{{/* "true" when the role's ValidatingAdmissionPolicy is rendered (preferIdle, >= 1.30). */}}
{{- define "jobhandlers.scaleIn.policy" -}}
{{- $root := index . 0 }}
{{- if and (include "jobhandlers.scaleIn.enabled" .) (include "jobhandlers.gate" (list $root "podDeletionCostPolicy")) }}true{{ end }}
{{- end }}

{{/* A shell word: the string in single quotes. */}}
{{- define "jobhandlers.scaleIn.shellWord" -}}
{{- printf "'%s'" (replace "'" "'\\''" .) }}
{{- end }}

{{/* The deletion-cost container's script. Call with (list $ "role"). */}}
{{- define "jobhandlers.scaleIn.script" -}}
{{- $root := index . 0 }}
{{- include "jobhandlers.lifecycle.load" $root }}
{{- $lc := $root.jobhandlersLifecycle }}
{{- $s := include "jobhandlers.scaleIn.settings" . | fromJson }}
{{- $words := list }}
{{- range $s.busyCommand }}{{ $words = append $words (include "jobhandlers.scaleIn.shellWord" .) }}{{ end -}}
# the pod's controller.kubernetes.io/pod-deletion-cost from the busy signal (README: Autoscaling)
d={{ $lc.launcher.tokenPath }}
h=${KUBERNETES_SERVICE_HOST:-}; case $h in *:*) h="[$h]";; esac
url="https://$h:${KUBERNETES_SERVICE_PORT:-443}/api/v1/namespaces/$POD_NAMESPACE/pods/$POD_NAME"
py='import ssl, sys, urllib.request as u
d, url, body = sys.argv[1:4]
req = u.Request(url, data=body.encode(), method="PATCH", headers={"Content-Type": "application/merge-patch+json", "Authorization": "Bearer " + open(d + "/token").read().strip()})
u.urlopen(req, context=ssl.create_default_context(cafile=d + "/ca.crt"), timeout=10).read()'
client=
if command -v curl >/dev/null 2>&1; then client=curl
elif command -v python3 >/dev/null 2>&1; then client=python3
else echo "deletion-cost: this image has neither curl nor python3, so the pod's deletion cost stays unset: set handlers.{{ index . 1 }}.scaleIn.preferIdle.image to one that has either" >&2
fi
patch() {
  body="{\"metadata\":{\"annotations\":{\"{{ $lc.scaleIn.annotation }}\":\"$1\"}}}"
  if [ "$client" = curl ]; then
    curl -fsS -o /dev/null --max-time 10 --cacert "$d/ca.crt" -X PATCH -H "Authorization: Bearer $(cat "$d/token")" -H 'Content-Type: application/merge-patch+json' --data "$body" "$url"
  else
    python3 -c "$py" "$d" "$url" "$body"
  fi
}
busy() {
{{- if $words }}
  {{ join " " $words }} >/dev/null 2>&1
{{- else }}
  for f in {{ $s.busyPath }}; do [ -e "$f" ] && return 0; done; return 1
{{- end }}
}
trap 'exit 0' TERM INT
last=
while :; do
  if busy; then want={{ $s.busyCost }}; state=busy; else want={{ $s.idleCost }}; state=idle; fi
  if [ -n "$client" ] && [ "$want" != "$last" ]; then
    if out=$(patch "$want" 2>&1); then echo "deletion-cost: $state, pod-deletion-cost $want"; last=$want
    else echo "deletion-cost: $state, patching pod-deletion-cost $want failed (next try in {{ $s.periodSeconds }} s): $out" >&2
    fi
  fi
  sleep {{ $s.periodSeconds }} & wait $!
done
{{- end }}

{{/* The deletion-cost container (YAML list item). Call with (list $ "role"). */}}
{{- define "jobhandlers.scaleIn.container" -}}
{{- if include "jobhandlers.scaleIn.enabled" . }}
{{- $root := index . 0 }}
{{- include "jobhandlers.lifecycle.load" $root }}
{{- $lc := $root.jobhandlersLifecycle }}
{{- $s := include "jobhandlers.scaleIn.settings" . | fromJson }}
- name: {{ $lc.scaleIn.container }}
  image: {{ $s.image | quote }}
  imagePullPolicy: {{ $root.Values.image.pullPolicy }}
  command:
    - sh
    - -c
    - {{ include "jobhandlers.scaleIn.script" . | toYaml | indent 6 | trim }}
  env:
    - name: POD_NAME
      valueFrom:
        fieldRef:
          fieldPath: metadata.name
    - name: POD_NAMESPACE
      valueFrom:
        fieldRef:
          fieldPath: metadata.namespace
  securityContext:
    {{- include "jobhandlers.containerSecurityContext" . | nindent 4 }}
  {{- with include "jobhandlers.resources" (list $root $s.resources) }}
  resources:
    {{- . | nindent 4 }}
  {{- end }}
  volumeMounts:
    - name: state
      mountPath: {{ $root.Values.heartbeat.dir }}
      readOnly: true
    {{- if include "jobhandlers.scaleIn.projectedToken" . }}
    - name: deletion-cost-token
      mountPath: {{ $lc.launcher.tokenPath }}
      readOnly: true
    {{- end }}
{{- end }}
{{- end }}

{{/* The deletion-cost container's token volume (from 1.21). Call with (list $ "role"). */}}
{{- define "jobhandlers.scaleIn.tokenVolume" -}}
{{- if include "jobhandlers.scaleIn.projectedToken" . }}
{{- include "jobhandlers.lifecycle.load" (index . 0) }}
- name: deletion-cost-token
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
