{{/*
Autoscaled roles (handlers.<role>.autoscaling; README: Autoscaling): an HPA or a KEDA
ScaledObject (never both, JH055). The workload then renders no replicas, so `helm upgrade`
keeps the autoscaler's count (Deployments and StatefulSets alike).

Scale-down behavior, when the user gives no scaleDown, is derived from the role's lifecycle
(chart/lifecycle.yaml autoscaling):
- at most pdb.maxUnavailable pods (1 when it is a percentage) per period, the period being the
  role's grace capped at 1800 s (the HPA's maximum periodSeconds): a pod is removed only once
  the previous ones had their whole grace, so no more pods drain at once than a node drain
  may take down;
- a stabilization window of max(300 s, one poll of the metrics: 15 s for the HPA, KEDA's
  pollingInterval), at most 3600 s, so one noisy sample never removes a pod.
*/}}

{{/* The role's autoscaler: "hpa", "keda" or "" (none). Call with (list $ "role"). */}}
{{- define "jobhandlers.autoscaling.kind" -}}
{{- $spec := include "jobhandlers.role.spec" . | fromJson }}
{{- $a := $spec.autoscaling | default dict }}
{{- if ($a.hpa | default dict).enabled }}hpa{{ else if ($a.keda | default dict).enabled }}keda{{ end }}
{{- end }}

{{/* The derived scaleDown (JSON). Call with (list $ "role" pollSeconds). */}}
{{- define "jobhandlers.autoscaling.scaleDown" -}}
{{- $root := index . 0 }}
{{- $args := list $root (index . 1) }}
{{- include "jobhandlers.lifecycle.load" $root }}
{{- $lc := $root.jobhandlersLifecycle.autoscaling }}
{{- $spec := include "jobhandlers.role.spec" $args | fromJson }}
{{- $pdb := $spec.pdb | default dict }}
{{- $max := ternary $pdb.maxUnavailable 1 (hasKey $pdb "maxUnavailable") }}
{{- $pods := 1 }}
{{- if and (not (kindIs "string" $max)) (gt (int64 $max) 0) }}{{ $pods = int64 $max }}{{ end }}
{{- $grace := include "jobhandlers.grace.effective" $args | int64 }}
{{- $period := min (max 1 $grace) (int64 $lc.maxPolicyPeriodSeconds) }}
{{- $window := min (max (int64 $lc.minStabilizationWindowSeconds) (int64 (index . 2))) (int64 $lc.maxStabilizationWindowSeconds) }}
{{- toJson (dict "stabilizationWindowSeconds" $window "selectPolicy" "Min" "policies" (list (dict "type" "Pods" "value" $pods "periodSeconds" $period))) }}
{{- end }}

{{/* The HPA behavior: the user's, with the derived scaleDown where none is given (JSON). */}}
{{- define "jobhandlers.autoscaling.hpaBehavior" -}}
{{- $root := index . 0 }}
{{- include "jobhandlers.lifecycle.load" $root }}
{{- $spec := include "jobhandlers.role.spec" . | fromJson }}
{{- $b := deepCopy (($spec.autoscaling | default dict).hpa | default dict).behavior | default dict }}
{{- if not $b.scaleDown }}
{{- $_ := set $b "scaleDown" (include "jobhandlers.autoscaling.scaleDown" (list $root (index . 1) $root.jobhandlersLifecycle.autoscaling.hpaSyncPeriodSeconds) | fromJson) }}
{{- end }}
{{- toJson $b }}
{{- end }}

{{/* KEDA's advanced block with the derived scaleDown where none is given (JSON). */}}
{{- define "jobhandlers.autoscaling.kedaAdvanced" -}}
{{- $spec := include "jobhandlers.role.spec" . | fromJson }}
{{- $k := ($spec.autoscaling | default dict).keda | default dict }}
{{- $adv := deepCopy ($k.advanced | default dict) }}
{{- $hpa := $adv.horizontalPodAutoscalerConfig | default dict }}
{{- $b := $hpa.behavior | default dict }}
{{- if not $b.scaleDown }}
{{- $_ := set $b "scaleDown" (include "jobhandlers.autoscaling.scaleDown" (list (index . 0) (index . 1) (ternary $k.pollingInterval 30 (hasKey $k "pollingInterval"))) | fromJson) }}
{{- end }}
{{- $_ := set $hpa "behavior" $b }}
{{- $_ := set $adv "horizontalPodAutoscalerConfig" $hpa }}
{{- toJson $adv }}
{{- end }}
