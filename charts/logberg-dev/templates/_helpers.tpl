{{- define "logberg-dev.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "logberg-dev.fullname" -}}
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

{{- define "logberg-dev.selectorLabels" -}}
app.kubernetes.io/name: {{ include "logberg-dev.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "logberg-dev.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "logberg-dev.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: logberg
{{- end }}

{{- define "logberg-dev.s3Endpoint" -}}
{{- printf "http://%s-s3.%s.svc:%v" (include "logberg-dev.fullname" .) .Release.Namespace .Values.s3.port }}
{{- end }}

{{- define "logberg-dev.containerSecurityContext" -}}
allowPrivilegeEscalation: false
privileged: false
readOnlyRootFilesystem: true
runAsNonRoot: true
capabilities:
  drop: [ALL]
seccompProfile:
  type: RuntimeDefault
{{- end }}

{{- define "logberg-dev.checkovSkips" -}}
{{- /* checkov skips, each with its reason (rendered as checkov.io/skipN annotations). */}}
checkov.io/skip1: CKV_K8S_43=images are pinned by immutable version tags from versions.toml; kind loads locally built images that have no registry digest (set image.tag to a digest-pinned tag in registries that support it)
checkov.io/skip2: CKV_K8S_15=version-pinned tags make IfNotPresent safe, and kind-loaded images need Never; pullPolicy is a value
checkov.io/skip3: CKV_K8S_35=the credentials are injected as env from a Secret (secretKeyRef), the interface the entrypoints and AWS SDKs read; they are never in the manifest, a ConfigMap or an image
checkov.io/skip4: CKV_K8S_40=runs as the dev image's own non-root user (runAsNonRoot); its files are owned by that uid, so a different high uid would break the image
{{- end }}

{{- define "logberg-dev.checkovSkipsTestPod" -}}
checkov.io/skip5: CKV_K8S_8=one-shot pod (helm test / job); a liveness probe has nothing to watch
checkov.io/skip6: CKV_K8S_9=one-shot pod (helm test / job); nothing connects to it, so no readiness probe
{{- end }}

{{/* The Kafka broker's StatefulSet and Service name, and the name its clients reach it by. */}}
{{- define "logberg-dev.kafkaName" -}}
{{- printf "%s-kafka" (include "logberg-dev.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "logberg-dev.kafkaHost" -}}
{{- printf "%s.%s.svc" (include "logberg-dev.kafkaName" .) .Release.Namespace }}
{{- end }}

{{- define "logberg-dev.kafkaBootstrap" -}}
{{- printf "%s:%v" (include "logberg-dev.kafkaHost" .) .Values.kafka.port }}
{{- end }}
