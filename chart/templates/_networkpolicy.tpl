{{/*
NetworkPolicies (networkPolicy.enabled, opt-in): one per enabled role, one for the migration
pods (migration and downgrade Jobs) and one for the helm test pod. Each selects its pods and
lists both policy types, so what is not allowed here is denied:
- ingress: a role's ports (port, extraPorts) from the release's own pods (allowRelease) and the
  user's peers; never a rule without `from` (that would admit every source). The migration and
  test pods get no ingress.
- egress: the database (networkPolicy.database.to on database.port), DNS (port 53 UDP/TCP), the
  release's own pods (allowRelease) and the user's extra rules.
The migration policy is a regular resource: in hook mode it does not exist yet when the first
install's migration runs (no policy: nothing is denied) and exists for every later upgrade,
where it lets the Job reach the database and DNS. kubelet probes come from the node, which
NetworkPolicy implementations admit.
*/}}

{{/* The peer that selects every pod of this release (its roles, migration, test). */}}
{{- define "jobhandlers.networkPolicy.releasePeer" -}}
- podSelector:
    matchLabels:
      app.kubernetes.io/name: {{ include "jobhandlers.name" . | quote }}
      app.kubernetes.io/instance: {{ .Release.Name | quote }}
{{- end }}

{{/* The DNS peers: networkPolicy.dns.to, else the kube-dns pods of kube-system. The namespace's
kubernetes.io/metadata.name label exists from Kubernetes 1.21 (NamespaceDefaultLabelName,
KEP-2161, GA 1.22); below, the kube-dns pods of any namespace. */}}
{{- define "jobhandlers.networkPolicy.dnsPeers" -}}
{{- $np := .Values.networkPolicy }}
{{- if not (kindIs "invalid" $np.dns.to) }}
{{- toYaml $np.dns.to }}
{{- else }}
- podSelector:
    matchLabels:
      k8s-app: kube-dns
  {{- if include "jobhandlers.gate" (list . "namespaceNameLabel") }}
  namespaceSelector:
    matchLabels:
      kubernetes.io/metadata.name: kube-system
  {{- else }}
  namespaceSelector: {}
  {{- end }}
{{- end }}
{{- end }}

{{/* The egress rules every chart pod gets: database, DNS, the release, extraEgress, then the
given extra rules. Call with (list $ extraRules). */}}
{{- define "jobhandlers.networkPolicy.egress" -}}
{{- $root := index . 0 }}
{{- $np := $root.Values.networkPolicy }}
{{- with $np.database.to }}
- to:
    {{- toYaml . | nindent 4 }}
  ports:
    - protocol: TCP
      port: {{ int64 $root.Values.database.port }}
{{- end }}
{{- if $np.dns.enabled }}
{{- with include "jobhandlers.networkPolicy.dnsPeers" $root | trim }}
- to:
    {{- . | nindent 4 }}
  ports:
    - protocol: UDP
      port: 53
    - protocol: TCP
      port: 53
{{- end }}
{{- end }}
{{- if $np.allowRelease }}
- to:
    {{- include "jobhandlers.networkPolicy.releasePeer" $root | nindent 4 }}
{{- end }}
{{- with concat ($np.extraEgress | default list) (index . 1) }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* A role's ingress rules: its ports from the release and the user's peers, then extraIngress
(chart-wide, then the role's). Call with (list $ "role"). */}}
{{- define "jobhandlers.networkPolicy.roleIngress" -}}
{{- $root := index . 0 }}
{{- $np := $root.Values.networkPolicy }}
{{- $spec := include "jobhandlers.role.spec" . | fromJson }}
{{- $own := $spec.networkPolicy | default dict }}
{{- $ports := list }}
{{- if not (kindIs "invalid" $spec.port) }}
{{- $ports = append $ports (dict "protocol" "TCP" "port" (int64 $spec.port)) }}
{{- end }}
{{- range $spec.extraPorts }}
{{- $ports = append $ports (dict "protocol" (.protocol | default "TCP") "port" (int64 .containerPort)) }}
{{- end }}
{{- $from := concat (($np.ingress | default dict).from | default list) (($own.ingress | default dict).from | default list) }}
{{- if and $ports (or $np.allowRelease $from) }}
- from:
    {{- if $np.allowRelease }}
    {{- include "jobhandlers.networkPolicy.releasePeer" $root | nindent 4 }}
    {{- end }}
    {{- with $from }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  ports:
    {{- toYaml $ports | nindent 4 }}
{{- end }}
{{- with concat ($np.extraIngress | default list) ($own.extraIngress | default list) }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* One NetworkPolicy, named <fullname>-<name>, for the pods of one component. Call with
(list $ "name" "component" ingressRules egressRules); empty rules render as [] (deny all of
that direction). */}}
{{- define "jobhandlers.networkPolicy" -}}
{{- $root := index . 0 }}
{{- $name := index . 1 }}
{{- $component := index . 2 }}
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata:
  name: {{ include "jobhandlers.componentName" (list $root $name) }}
  namespace: {{ $root.Release.Namespace | quote }}
  labels:
    {{- include "jobhandlers.labels" (list $root $component) | nindent 4 }}
spec:
  podSelector:
    matchLabels:
      {{- include "jobhandlers.selectorLabels" (list $root $component) | nindent 6 }}
  policyTypes: [Ingress, Egress]
  {{- with index . 3 | trim }}
  ingress:
    {{- . | nindent 4 }}
  {{- else }}
  ingress: []
  {{- end }}
  {{- with index . 4 | trim }}
  egress:
    {{- . | nindent 4 }}
  {{- else }}
  egress: []
  {{- end }}
{{- end }}
