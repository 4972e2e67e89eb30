{{/* Chart name, truncated to 63 characters. */}}
{{- define "logberg.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Full name: release name + chart name, unless the release name already contains it. */}}
{{- define "logberg.fullname" -}}
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

{{- define "logberg.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "logberg.selectorLabels" -}}
app.kubernetes.io/name: {{ include "logberg.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "logberg.labels" -}}
helm.sh/chart: {{ include "logberg.chart" . }}
{{ include "logberg.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: logberg
{{- end }}

{{- define "logberg.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "logberg.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "logberg.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag | toString) }}
{{- end }}

{{/* Spark conf equivalent to logberg.lakehouse.session.catalog_conf: the Iceberg catalog `logberg`
     (type=hive) as default catalog, spark_catalog wrapped by SparkSessionCatalog, S3A, what
     Spark redacts (lakehouse.session.REDACTION: the Kafka options' secrets);
     plus logberg.lakehouse.session.JIT_OPTIONS (the ingest's generated code is over HotSpot's
     8000-bytecode JIT limit; C2 only for the per-row loops; the parallel collector), then
     spark.javaOptions. */}}
{{- define "logberg.sparkConfDict" -}}
{{- $uri := .Values.metastore.uri }}
{{- $wh := .Values.warehouse.uri }}
{{- $jvm := "-XX:+UseParallelGC -XX:-DontCompileHugeMethods -XX:Tier4InvocationThreshold=50000 -XX:Tier4MinInvocationThreshold=6000 -XX:Tier4CompileThreshold=150000 -XX:Tier4BackEdgeThreshold=400000" }}
{{- with .Values.spark.javaOptions }}
{{- $jvm = printf "%s %s" $jvm . }}
{{- end }}
{{- $conf := dict
  "spark.sql.extensions" "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions"
  "spark.sql.catalog.logberg" "org.apache.iceberg.spark.SparkCatalog"
  "spark.sql.catalog.logberg.type" "hive"
  "spark.sql.catalog.logberg.uri" $uri
  "spark.sql.catalog.logberg.warehouse" $wh
  "spark.sql.catalog.logberg.cache-enabled" "false"
  "spark.sql.catalog.logberg.clients" "8"
  "spark.sql.defaultCatalog" "logberg"
  "spark.sql.catalog.spark_catalog" "org.apache.iceberg.spark.SparkSessionCatalog"
  "spark.sql.catalog.spark_catalog.type" "hive"
  "spark.sql.catalog.spark_catalog.uri" $uri
  "spark.sql.catalog.spark_catalog.warehouse" $wh
  "spark.sql.catalog.spark_catalog.clients" "8"
  "spark.sql.catalogImplementation" "hive"
  "spark.hadoop.hive.metastore.uris" $uri
  "spark.sql.warehouse.dir" $wh
  "spark.hadoop.fs.s3.impl" "org.apache.hadoop.fs.s3a.S3AFileSystem"
  "spark.hadoop.fs.s3a.aws.credentials.provider" .Values.s3.credentialsProvider
  "spark.sql.session.timeZone" "UTC"
  "spark.sql.sources.partitionOverwriteMode" "dynamic"
  "spark.sql.codegen.aggregate.map.twolevel.enabled" "false"
  "spark.hadoop.iceberg.hive.lock-check-min-wait-ms" "20"
  "spark.hadoop.iceberg.hive.lock-check-max-wait-ms" "500"
  "spark.redaction.regex" "(?i)secret|passw(or)?d|token|access[.]?key|jaas"
  "spark.sql.redaction.options.regex" "(?i)url|passw(or)?d|secret|token|jaas|ssl[.]keystore[.]key|ssl[.]key[.]pem|sasl[.]oauthbearer[.]config"
  "spark.driver.extraJavaOptions" $jvm
  "spark.executor.extraJavaOptions" $jvm
}}
{{- with .Values.s3.endpoint }}
{{- $_ := set $conf "spark.hadoop.fs.s3a.endpoint" . }}
{{- $_ := set $conf "spark.hadoop.fs.s3a.path.style.access" (toString $.Values.s3.pathStyleAccess) }}
{{- $_ := set $conf "spark.hadoop.fs.s3a.connection.ssl.enabled" (ternary "false" "true" (hasPrefix "http://" .)) }}
{{- end }}
{{- with .Values.s3.region }}
{{- $_ := set $conf "spark.hadoop.fs.s3a.endpoint.region" . }}
{{- end }}
{{- if .Values.eventLog.enabled }}
{{- $_ := set $conf "spark.eventLog.enabled" "true" }}
{{- $_ := set $conf "spark.eventLog.dir" (include "logberg.eventLogDir" .) }}
{{- $_ := set $conf "spark.eventLog.compress" "true" }}
{{- $_ := set $conf "spark.eventLog.compression.codec" "zstd" }}
{{- $_ := set $conf "spark.eventLog.rolling.enabled" "true" }}
{{- $_ := set $conf "spark.eventLog.rolling.maxFileSize" .Values.eventLog.rollSize }}
{{- end }}
{{- range $k, $v := .Values.spark.conf }}
{{- $_ := set $conf $k (toString $v) }}
{{- end }}
{{- toYaml $conf }}
{{- end }}

{{/* Where event logs go: eventLog.dir, else spark-events/ in the warehouse's bucket. */}}
{{- define "logberg.eventLogDir" -}}
{{- if .Values.eventLog.dir }}
{{- .Values.eventLog.dir | trimSuffix "/" }}
{{- else }}
{{- $u := urlParse (regexReplaceAll "^s3://" .Values.warehouse.uri "s3a://") }}
{{- if not (eq (get $u "scheme") "s3a") }}
{{- fail (printf "eventLog.dir: set it (warehouse.uri %s is not on S3, so there is no default)" .Values.warehouse.uri) }}
{{- end }}
{{- printf "s3a://%s/spark-events" (get $u "host") }}
{{- end }}
{{- end }}

{{- define "logberg.historyName" -}}
{{- printf "%s-history" (include "logberg.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "logberg.historyServiceAccountName" -}}
{{- if .Values.historyServer.serviceAccount.create }}
{{- default (include "logberg.historyName" .) .Values.historyServer.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.historyServer.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* Metrics conf (PrometheusServlet on the driver UI). */}}
{{- define "logberg.metricsConfDict" -}}
{{- if .Values.spark.metrics.enabled }}
spark.ui.prometheus.enabled: "true"
spark.metrics.conf.*.sink.prometheusServlet.class: org.apache.spark.metrics.sink.PrometheusServlet
spark.metrics.conf.*.sink.prometheusServlet.path: /metrics/prometheus
spark.metrics.conf.master.sink.prometheusServlet.path: /metrics/master/prometheus
spark.metrics.conf.applications.sink.prometheusServlet.path: /metrics/applications/prometheus
spark.ui.port: {{ .Values.spark.metrics.port | quote }}
{{- else }}
{}
{{- end }}
{{- end }}

{{/* The ConfigMap of the metrics settings (monitoring.pushgatewayUrl): the SparkApplications
     and the toolbox take it whole and optionally (envFrom), so the examples rendered from the
     chart push wherever the installed release says, and a later `helm upgrade` that sets or
     clears the URL reaches the next run without editing an application. */}}
{{- define "logberg.monitoringName" -}}
{{ include "logberg.fullname" . }}-monitoring
{{- end }}

{{- define "logberg.envFrom" -}}
- configMapRef:
    name: {{ include "logberg.monitoringName" . }}
    optional: true
{{- end }}

{{/* Environment of every logberg container: what logberg.lakehouse.session.LakehouseConfig reads
     (LOGBERG_PROFILE=cluster and the same metastore/warehouse/S3 settings as the conf). */}}
{{- define "logberg.env" -}}
- name: LOGBERG_PROFILE
  value: cluster
- name: LOGBERG_METASTORE_URI
  value: {{ .Values.metastore.uri | quote }}
- name: LOGBERG_WAREHOUSE
  value: {{ .Values.warehouse.uri | quote }}
- name: LOGBERG_S3_PATH_STYLE
  value: {{ .Values.s3.pathStyleAccess | toString | quote }}
{{- with .Values.s3.endpoint }}
- name: LOGBERG_S3_ENDPOINT
  value: {{ . | quote }}
- name: AWS_ENDPOINT_URL_S3
  value: {{ . | quote }}
{{- end }}
{{- with .Values.kafka.bootstrap }}
- name: LOGBERG_KAFKA_BOOTSTRAP
  value: {{ . | quote }}
- name: LOGBERG_KAFKA_TOPIC
  value: {{ $.Values.kafka.topic | quote }}
{{- end }}
{{- with .Values.s3.region }}
- name: AWS_REGION
  value: {{ . | quote }}
{{- end }}
{{- if .Values.s3.existingSecret }}
- name: AWS_ACCESS_KEY_ID
  valueFrom:
    secretKeyRef:
      name: {{ .Values.s3.existingSecret }}
      key: {{ .Values.s3.accessKeyIdKey }}
- name: AWS_SECRET_ACCESS_KEY
  valueFrom:
    secretKeyRef:
      name: {{ .Values.s3.existingSecret }}
      key: {{ .Values.s3.secretAccessKeyKey }}
{{- end }}
- name: PYTHONDONTWRITEBYTECODE
  value: "1"
- name: HOME
  value: /tmp
{{- with .Values.spark.env }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* Container securityContext of Spark pods. */}}
{{- define "logberg.sparkSecurityContext" -}}
{{- $sc := deepCopy .Values.securityContext }}
{{- $_ := set $sc "readOnlyRootFilesystem" .Values.spark.readOnlyRootFilesystem }}
{{- toYaml $sc }}
{{- end }}

{{/* Pod fields shared by driver and executor (SparkPodSpec). $role: driver|executor; with
     `kafka` true, both carry kafka.clientLabels (an application that reads a topic). */}}
{{- define "logberg.sparkPod" -}}
{{- $root := .root }}
{{- $p := index $root.Values.spark .role }}
cores: {{ $p.cores }}
{{- with $p.coreRequest }}
coreRequest: {{ . | quote }}
{{- end }}
coreLimit: {{ $p.coreLimit | quote }}
memory: {{ $p.memory | quote }}
{{- with $p.memoryOverhead }}
memoryOverhead: {{ . | quote }}
{{- end }}
serviceAccount: {{ include "logberg.serviceAccountName" $root }}
labels:
  {{- include "logberg.selectorLabels" $root | nindent 2 }}
  app.kubernetes.io/component: {{ .component }}
  {{- toYaml $root.Values.metastoreClientLabels | nindent 2 }}
  {{- toYaml $root.Values.s3ClientLabels | nindent 2 }}
  {{- if .kafka }}
  {{- toYaml $root.Values.kafka.clientLabels | nindent 2 }}
  {{- end }}
  {{- with $p.labels }}
  {{- toYaml . | nindent 2 }}
  {{- end }}
{{- $ann := deepCopy ($p.annotations | default dict) }}
{{- if and $root.Values.spark.metrics.enabled (eq .role "driver") }}
{{- $_ := set $ann "prometheus.io/scrape" "true" }}
{{- $_ := set $ann "prometheus.io/port" (toString $root.Values.spark.metrics.port) }}
{{- $_ := set $ann "prometheus.io/path" "/metrics/prometheus/" }}
{{- end }}
{{- with $ann }}
annotations:
  {{- toYaml . | nindent 2 }}
{{- end }}
env:
  {{- include "logberg.env" $root | nindent 2 }}
  {{- if .kafka }}
  {{- include "logberg.kafkaOptionsEnv" $root | nindent 2 }}
  {{- end }}
envFrom:
  {{- include "logberg.envFrom" $root | nindent 2 }}
{{- with $p.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $p.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
podSecurityContext:
  {{- toYaml $root.Values.spark.podSecurityContext | nindent 2 }}
securityContext:
  {{- include "logberg.sparkSecurityContext" $root | nindent 2 }}
volumeMounts:
  - name: tmp
    mountPath: /tmp
  - name: work-dir
    mountPath: /opt/spark/work-dir
  {{- if .kafka }}
  {{- include "logberg.kafkaOptionsMount" $root | nindent 2 }}
  {{- end }}
{{- if and (eq .role "driver") $root.Values.waitFor.enabled }}
{{- $ctx := $root }}
{{- if .kafka }}
{{- $ctx = merge (dict "kafka" true) $root }}
{{- end }}
initContainers:
  {{- include "logberg.waitReady" $ctx | nindent 2 }}
{{- end }}
{{- end }}

{{/* The init container that waits until the metastore answers and the warehouse and
     landing buckets exist (`logberg wait-ready`), so no job races the platform it needs.
     With `noMetastore` in the context: the buckets only (pods that may not reach it); with
     `kafka`: the Kafka brokers too (a pod that reads or writes a topic, whose first
     connections a new pod's NetworkPolicy may not admit yet). */}}
{{- define "logberg.waitReady" -}}
- name: wait-ready
  image: {{ include "logberg.image" . }}
  imagePullPolicy: {{ .Values.image.pullPolicy }}
  command:
    - logberg
    - wait-ready
    - --input
    - {{ .Values.landing.uri | quote }}
    - --timeout
    - {{ .Values.waitFor.timeoutSeconds | quote }}
    {{- if .noMetastore }}
    - --no-metastore
    {{- end }}
    {{- if .kafka }}
    - --kafka
    {{- end }}
    {{- if .Values.eventLog.enabled }}
    - --event-log-dir
    - {{ include "logberg.eventLogDir" . | quote }}
    - --create-event-log-dir
    {{- end }}
  env:
    {{- include "logberg.env" . | nindent 4 }}
    {{- if .kafka }}
    {{- include "logberg.kafkaOptionsEnv" . | nindent 4 }}
    {{- end }}
  resources:
    {{- toYaml .Values.waitFor.resources | nindent 4 }}
  securityContext:
    {{- toYaml .Values.securityContext | nindent 4 }}
  volumeMounts:
    - name: tmp
      mountPath: /tmp
    {{- if .kafka }}
    {{- include "logberg.kafkaOptionsMount" . | nindent 4 }}
    {{- end }}
{{- end }}

{{/* The Kafka clients' options file (kafka.optionsSecret): in every pod that talks to Kafka
     (a stream's or lag probe's driver and executors, the generator, their wait-ready), the
     Secret's key mounted read-only and LOGBERG_KAFKA_OPTIONS_FILE naming it. The Secret's
     contents never pass through the chart. Each renders nothing without a Secret. */}}
{{- define "logberg.kafkaOptionsFile" -}}
{{- $o := .Values.kafka.optionsSecret }}
{{- printf "%s/%s" ($o.mountPath | trimSuffix "/") $o.key }}
{{- end }}

{{- define "logberg.kafkaOptionsEnv" -}}
{{- if .Values.kafka.optionsSecret.existingSecret }}
- name: LOGBERG_KAFKA_OPTIONS_FILE
  value: {{ include "logberg.kafkaOptionsFile" . | quote }}
{{- end }}
{{- end }}

{{- define "logberg.kafkaOptionsMount" -}}
{{- if .Values.kafka.optionsSecret.existingSecret }}
- name: kafka-options
  mountPath: {{ .Values.kafka.optionsSecret.mountPath | trimSuffix "/" | quote }}
  readOnly: true
{{- end }}
{{- end }}

{{- define "logberg.kafkaOptionsVolume" -}}
{{- with .Values.kafka.optionsSecret }}
{{- if .existingSecret }}
- name: kafka-options
  secret:
    secretName: {{ .existingSecret | quote }}
    items:
      - key: {{ .key | quote }}
        path: {{ .key | quote }}
    defaultMode: 288 {{- /* 0440: the owner and the pod's fsGroup read it, nobody writes */}}
{{- end }}
{{- end }}
{{- end }}

{{/* A SparkApplicationSpec (sparkoperator.k8s.io/v1beta2).
     Args: root, component, arguments, restartPolicy (dict), oneOff (bool). */}}
{{- define "logberg.appSpec" -}}
{{- $root := .root }}
{{- $v := $root.Values }}
type: Python
pythonVersion: "3"
mode: cluster
image: {{ include "logberg.image" $root }}
imagePullPolicy: {{ $v.image.pullPolicy }}
{{- with $v.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
mainApplicationFile: {{ $v.spark.mainApplicationFile }}
arguments:
  {{- toYaml .arguments | nindent 2 }}
sparkVersion: {{ $v.spark.version | quote }}
sparkConf:
  {{- $conf := merge (fromYaml (include "logberg.metricsConfDict" $root)) (fromYaml (include "logberg.sparkConfDict" $root)) }}
  {{- toYaml $conf | nindent 2 }}
restartPolicy:
  {{- toYaml .restartPolicy | nindent 2 }}
{{- if and .oneOff $v.spark.timeToLiveSeconds }}
timeToLiveSeconds: {{ $v.spark.timeToLiveSeconds }}
{{- end }}
{{- if $v.spark.dynamicAllocation.enabled }}
dynamicAllocation:
  enabled: true
  initialExecutors: {{ $v.spark.dynamicAllocation.initialExecutors }}
  minExecutors: {{ $v.spark.dynamicAllocation.minExecutors }}
  maxExecutors: {{ $v.spark.dynamicAllocation.maxExecutors }}
{{- end }}
volumes:
  - name: tmp
    emptyDir:
      sizeLimit: 4Gi
  - name: work-dir
    emptyDir:
      sizeLimit: 1Gi
  {{- if .kafka }}
  {{- include "logberg.kafkaOptionsVolume" $root | nindent 2 }}
  {{- end }}
driver:
  {{- include "logberg.sparkPod" (dict "root" $root "role" "driver" "component" .component "kafka" .kafka) | trim | nindent 2 }}
executor:
  {{- include "logberg.sparkPod" (dict "root" $root "role" "executor" "component" .component "kafka" .kafka) | trim | nindent 2 }}
  instances: {{ $v.spark.executor.instances }}
{{- end }}

{{/* restartPolicy of batch applications. */}}
{{- /* How ingest reads the landing's lines (`logs.*`): its arguments, as a JSON list. */}}
{{- define "logberg.readingArgs" -}}
{{- $args := list "--log-format" .Values.logs.format "--client-ip" .Values.logs.clientIp }}
{{- if .Values.logs.trustedProxies }}
{{- $args = concat $args (list "--trusted-proxies" (join "," .Values.logs.trustedProxies)) }}
{{- end }}
{{- toJson $args }}
{{- end }}

{{- define "logberg.batchRestartPolicy" -}}
{{- $r := .Values.spark.restartPolicy }}
type: {{ $r.type }}
{{- if ne $r.type "Never" }}
onFailureRetries: {{ $r.onFailureRetries }}
onFailureRetryInterval: {{ $r.onFailureRetryInterval }}
onSubmissionFailureRetries: {{ $r.onSubmissionFailureRetries }}
onSubmissionFailureRetryInterval: {{ $r.onSubmissionFailureRetryInterval }}
{{- end }}
{{- end }}

{{- define "logberg.checkovSkips" -}}
{{- /* checkov skips, each with its reason (rendered as checkov.io/skipN annotations). */}}
checkov.io/skip1: CKV_K8S_43=images are pinned by immutable version tags from versions.toml; kind loads locally built images that have no registry digest (set image.tag to a digest-pinned tag in registries that support it)
checkov.io/skip2: CKV_K8S_15=version-pinned tags make IfNotPresent safe, and kind-loaded images need Never; pullPolicy is a value
checkov.io/skip3: CKV_K8S_35=the credentials are injected as env from a Secret (secretKeyRef), the interface the entrypoints and AWS SDKs read; they are never in the manifest, a ConfigMap or an image
checkov.io/skip4: CKV_K8S_40=runs as the official image's own non-root user (runAsNonRoot); its files are owned by that uid, so a different high uid would break the image
{{- end }}

{{- define "logberg.checkovSkipsTestPod" -}}
checkov.io/skip5: CKV_K8S_8=one-shot pod (helm test / job); a liveness probe has nothing to watch
checkov.io/skip6: CKV_K8S_9=one-shot pod (helm test / job); nothing connects to it, so no readiness probe
{{- end }}

{{/* The Spark Connect server's names (connect.enabled): the SparkConnect resource (the
     operator names its pod and Service `<this>-server`), its Spark conf ConfigMap and the
     Secret holding the clients' token. */}}
{{- define "logberg.connectName" -}}
{{- printf "%s-connect" (include "logberg.fullname" .) | trunc 56 | trimSuffix "-" }}
{{- end }}

{{- define "logberg.connectSecretName" -}}
{{- default (printf "%s-token" (include "logberg.connectName" .)) .Values.connect.auth.existingSecret }}
{{- end }}

{{/* The egress rules every restricted pod has: the cluster's DNS and `networkPolicy.egress.to`. */}}
{{- define "logberg.egressCommon" -}}
- to:
    {{- toYaml .Values.networkPolicy.egress.dnsPeers | nindent 4 }}
  ports:
    - port: 53
      protocol: UDP
    - port: 53
      protocol: TCP
{{- with .Values.networkPolicy.egress.to }}
{{ toYaml . }}
{{- end }}
{{- end }}
