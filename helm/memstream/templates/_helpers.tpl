{{/* Names and labels (the Helm starter chart's conventions). */}}
{{- define "memstream.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "memstream.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "memstream.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/name: {{ include "memstream.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/* Selector labels of one component: include "memstream.selector" (list . "api") */}}
{{- define "memstream.selector" -}}
{{- $root := index . 0 -}}
app.kubernetes.io/name: {{ include "memstream.name" $root }}
app.kubernetes.io/instance: {{ $root.Release.Name }}
app.kubernetes.io/component: {{ index . 1 }}
{{- end }}

{{- define "memstream.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "memstream.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "memstream.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end }}

{{- define "memstream.masterKeySecret" -}}
{{- .Values.encryption.existingSecret | default (printf "%s-master-key" (include "memstream.fullname" .)) }}
{{- end }}

{{- define "memstream.credentialsSecret" -}}
{{- .Values.credentials.existingSecret | default (printf "%s-credentials" (include "memstream.fullname" .)) }}
{{- end }}

{{- define "memstream.apiKeysSecret" -}}
{{- .Values.apiKeys.existingSecret | default (printf "%s-api-keys" (include "memstream.fullname" .)) }}
{{- end }}

{{/* Settings from the ConfigMap, then credentials and the master key (they win). */}}
{{- define "memstream.envFrom" -}}
- configMapRef:
    name: {{ include "memstream.fullname" . }}-settings
{{- if or .Values.credentials.existingSecret .Values.credentials.values }}
- secretRef:
    name: {{ include "memstream.credentialsSecret" . }}
{{- end }}
- secretRef:
    name: {{ include "memstream.masterKeySecret" . }}
{{- end }}

{{/* The volumes every memstream pod has: /tmp, and the TLS material of the stores. */}}
{{- define "memstream.commonVolumes" -}}
- name: tmp
  emptyDir: {}
{{- range $store := list "kafka" "clickhouse" "redis" }}
{{- with (index $.Values $store).tls.secretName }}
- name: tls-{{ $store }}
  secret:
    secretName: {{ . }}
{{- end }}
{{- end }}
{{- end }}

{{- define "memstream.commonMounts" -}}
- name: tmp
  mountPath: /tmp
{{- range $store := list "kafka" "clickhouse" "redis" }}
{{- if (index $.Values $store).tls.secretName }}
- name: tls-{{ $store }}
  mountPath: /etc/memstream/tls/{{ $store }}
  readOnly: true
{{- end }}
{{- end }}
{{- end }}

{{/* A pod's scheduling fields; the argument is a component's values. */}}
{{- define "memstream.scheduling" -}}
{{- with .nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}
