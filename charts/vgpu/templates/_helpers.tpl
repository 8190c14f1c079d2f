{{/*
Names. HAMi's rule, so that a release named as before keeps every object's name: the release name when
it contains the chart's base name ("hami" unless nameOverride), else "<release>-<name>".
*/}}
{{- define "vgpu.name" -}}
{{- default "hami" .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "vgpu.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := include "vgpu.name" . -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "vgpu.namespace" -}}
{{- default .Release.Namespace .Values.namespaceOverride -}}
{{- end -}}

{{- define "vgpu.scheduler" -}}{{ include "vgpu.fullname" . }}-scheduler{{- end -}}
{{- define "vgpu.devicePlugin" -}}{{ include "vgpu.fullname" . }}-device-plugin{{- end -}}
{{- define "vgpu.webhook" -}}{{ include "vgpu.fullname" . }}-webhook{{- end -}}
{{- define "vgpu.tlsSecret" -}}{{ include "vgpu.scheduler" . }}-tls{{- end -}}
{{- define "vgpu.deviceConfig" -}}{{ include "vgpu.scheduler" . }}-device{{- end -}}
{{- define "vgpu.grantKeySecret" -}}{{ include "vgpu.scheduler" . }}-grant-key{{- end -}}
{{- define "vgpu.schedulerHost" -}}{{ include "vgpu.scheduler" . }}.{{ include "vgpu.namespace" . }}.svc{{- end -}}

{{- define "vgpu.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/name: {{ include "vgpu.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- with .Values.global.labels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* Selector labels of a component ("scheduler", "device-plugin"). */}}
{{- define "vgpu.selector" -}}
app.kubernetes.io/name: {{ include "vgpu.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{/* vgpu's image: global.imageRegistry replaces image.registry (HAMi's meaning: a mirror for every image). */}}
{{- define "vgpu.image" -}}
{{- $registry := default .Values.image.registry .Values.global.imageRegistry -}}
{{- $tag := default .Chart.AppVersion .Values.image.tag -}}
{{- if $registry -}}{{ $registry }}/{{- end -}}{{ .Values.image.repository }}:{{ $tag }}
{{- end -}}

{{/* The cluster's version as x.y.z: "+k3s1" and other suffixes make no image tag (HAMi#621). */}}
{{- define "vgpu.kubeVersion" -}}
{{- regexFind "^v?[0-9]+\\.[0-9]+\\.[0-9]+" .Capabilities.KubeVersion.Version | trimPrefix "v" -}}
{{- end -}}

{{- define "vgpu.kubeSchedulerImage" -}}
{{- $image := .Values.scheduler.kubeScheduler.image -}}
{{- $registry := default $image.registry .Values.global.imageRegistry -}}
{{- $tag := default (printf "v%s" (include "vgpu.kubeVersion" .)) $image.tag -}}
{{- if $registry -}}{{ $registry }}/{{- end -}}{{ $image.repository }}:{{ $tag }}
{{- end -}}

{{/* imagePullSecrets from a list of names (or {name: ...} maps), without repeats. */}}
{{- define "vgpu.pullSecrets" -}}
{{- $names := list -}}
{{- range . -}}
{{- $names = append $names (kindIs "map" . | ternary (get (kindIs "map" . | ternary . dict) "name") .) -}}
{{- end -}}
{{- with (uniq $names) }}
imagePullSecrets:
{{- range . }}
  - name: {{ . }}
{{- end }}
{{- end }}
{{- end -}}

{{/*
Where the serving certificate comes from: "cert-manager" or "self". auto picks cert-manager when
HAMi's scheduler.certManager.enabled is set or the cluster serves cert-manager.io/v1.
*/}}
{{- define "vgpu.certificateSource" -}}
{{- $source := .Values.vgpu.certificates.source -}}
{{- if eq $source "auto" -}}
{{- if or .Values.scheduler.certManager.enabled (.Capabilities.APIVersions.Has "cert-manager.io/v1") -}}cert-manager{{- else -}}self{{- end -}}
{{- else -}}
{{- $source -}}
{{- end -}}
{{- end -}}

{{/* The resource names this scheduler manages, in HAMi's order. */}}
{{- define "vgpu.resourceNames" -}}
{{- $names := list .Values.resourceName .Values.resourceMem .Values.resourceCores .Values.resourceMemPercentage .Values.resourcePriority -}}
{{- toJson (compact $names) -}}
{{- end -}}

{{/* The port of a host:port or :port bind address. */}}
{{- define "vgpu.port" -}}
{{- regexFind "[0-9]+$" . -}}
{{- end -}}

{{/* The node agent's node selector: HAMi's nvidiaNodeSelector, or the name it had before v2.8. */}}
{{- define "vgpu.nvidiaNodeSelector" -}}
{{- if hasKey .Values.devicePlugin "nvidianodeSelector" -}}
{{- toYaml .Values.devicePlugin.nvidianodeSelector -}}
{{- else -}}
{{- toYaml .Values.devicePlugin.nvidiaNodeSelector -}}
{{- end -}}
{{- end -}}

{{/* vgpu as the isolation layer under KAI Scheduler (vgpu.kai.enabled): no extender, no kube-scheduler. */}}
{{- define "vgpu.kai" -}}
{{- if .Values.vgpu.kai.enabled -}}true{{- end -}}
{{- end -}}

{{/* vgpu schedules KAI Scheduler's pod dialect itself (vgpu.kaiDialect.enabled): queues, gangs, KAI's fractions. */}}
{{- define "vgpu.kaiDialect" -}}
{{- if and .Values.vgpu.kaiDialect.enabled (not .Values.vgpu.kai.enabled) -}}true{{- end -}}
{{- end -}}

{{/* kube-scheduler runs in the scheduler pod (never under KAI, which schedules itself). */}}
{{- define "vgpu.kubeSchedulerSidecar" -}}
{{- if and .Values.scheduler.kubeScheduler.enabled (not .Values.vgpu.kai.enabled) -}}true{{- end -}}
{{- end -}}

{{/* The extender runs in the scheduler pod beside kube-scheduler, on loopback. */}}
{{- define "vgpu.extenderOnLoopback" -}}
{{- include "vgpu.kubeSchedulerSidecar" . -}}
{{- end -}}

{{/* Whether kube-scheduler's client certificate is required by the extender. */}}
{{- define "vgpu.extenderClientCA" -}}
{{- if and .Values.vgpu.extender.requireClientCertificate (not .Values.vgpu.kai.enabled) -}}
{{- if .Values.scheduler.kubeScheduler.enabled -}}pod{{- else if .Values.vgpu.extender.clientCASecret -}}secret{{- end -}}
{{- end -}}
{{- end -}}

{{/* The ServiceAccount users of the scheduler (shared with kube-scheduler in its pod) and of the node agent. */}}
{{- define "vgpu.schedulerUser" -}}system:serviceaccount:{{ include "vgpu.namespace" . }}:{{ include "vgpu.scheduler" . }}{{- end -}}
{{- define "vgpu.nodeAgentUser" -}}system:serviceaccount:{{ include "vgpu.namespace" . }}:{{ include "vgpu.devicePlugin" . }}{{- end -}}

{{/*
The pod annotations only vgpu writes, as a JSON list (also a CEL list): the scheduler's decision and
bind phase (io.vgpu.k8s.admission.AdmissionMutator.SCHEDULER_OWNED) and the signature of the grant
(io.vgpu.k8s.grant.GrantSignature.ANNOTATION). The label hami.io/vgpu-node is vgpu's too.
*/}}
{{- define "vgpu.schedulerOwnedAnnotations" -}}
{{- toJson (list "hami.io/vgpu-node" "hami.io/vgpu-time" "hami.io/vgpu-devices-to-allocate" "hami.io/vgpu-devices-allocated" "hami.io/bind-phase" "hami.io/bind-time" "vgpu.io/grant-signature") -}}
{{- end -}}
