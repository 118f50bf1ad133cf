{{/* The five gRPC services; ingress is templated apart (StatefulSet, HTTP). */}}
{{- define "gateway.grpcServices" -}}
auth policy quota router metering
{{- end }}

{{- define "gateway.fullname" -}}
{{- if contains .Chart.Name .Release.Name }}
{{- .Release.Name | trunc 40 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 40 | trimSuffix "-" }}
{{- end }}
{{- end }}

{{/* Labels of every object; takes (dict "root" $ "service" name). */}}
{{- define "gateway.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .root.Chart.Name .root.Chart.Version }}
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
app.kubernetes.io/part-of: inference-gateway
app.kubernetes.io/version: {{ .root.Chart.AppVersion | quote }}
{{ include "gateway.selectorLabels" . }}
{{- end }}

{{- define "gateway.selectorLabels" -}}
app.kubernetes.io/name: {{ .service }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
{{- end }}

{{- define "gateway.serviceName" -}}
{{ include "gateway.fullname" .root }}-{{ .service }}
{{- end }}

{{- define "gateway.image" -}}
{{ .root.Values.imageRegistry }}{{ .image.repository }}:{{ .image.tag | default .root.Chart.AppVersion }}
{{- end }}

{{/* Checks run once per render: what the schema cannot say. */}}
{{- define "gateway.validate" -}}
{{- if not .Values.grpc.insecure }}
{{- if and (eq .Values.grpc.tls.source "certManager") (not .Values.grpc.tls.certManager.issuerName) }}
{{- fail "grpc.tls.certManager.issuerName: name the cert-manager issuer of the services' certificates, or set grpc.insecure: true" }}
{{- end }}
{{- if and (eq .Values.grpc.tls.source "existingSecret") (not .Values.grpc.tls.existingSecret) }}
{{- fail "grpc.tls.existingSecret: name the Secret with tls.crt, tls.key and ca.crt, or set grpc.insecure: true" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "gateway.tlsSecretName" -}}
{{- if eq .root.Values.grpc.tls.source "existingSecret" }}
{{- .root.Values.grpc.tls.existingSecret }}
{{- else }}
{{- include "gateway.serviceName" . }}-tls
{{- end }}
{{- end }}

{{- define "gateway.secretEnv" -}}
- name: {{ .name }}
  valueFrom:
    secretKeyRef:
      name: {{ .root.Values.secrets.existingSecret }}
      key: {{ index .root.Values.secrets.keys .key }}
{{- end }}

{{/*
Kafka connection of every Kafka client (ingress, metering, the topic Job); takes (dict "root" $).
Settings of the connection itself (brokers, and whatever else reaching Kafka needs) belong here, so that
every client gets them alike.
*/}}
{{- define "gateway.kafkaEnv" -}}
{{ include "gateway.secretEnv" (dict "root" .root "name" "KAFKA_BROKERS" "key" "kafkaBrokers") }}
- name: USAGE_TOPIC
  value: {{ .root.Values.kafka.usageTopic | quote }}
{{- end }}

{{/*
Graceful stop of a pod whose service has `shutdown` values; takes (dict "root" $ "service" name "extraSeconds"
n). Services with long calls (ingress, router) set `graceSeconds`; the others keep Kubernetes's 30 s. The preStop pause comes first: the pod has left its Services' endpoints (a terminating
pod is not ready) and balancers catch up while it still serves. Then SIGTERM: the process answers not ready,
takes no new connection or call, and lets what runs finish for up to `graceSeconds`; `extraSeconds` is
what the process still needs after that (ingress: delivering its usage spool), plus a margin to exit.
*/}}
{{- define "gateway.gracefulStop" -}}
{{- $shutdown := (index .root.Values .service).shutdown }}
{{- if $shutdown.graceSeconds }}
terminationGracePeriodSeconds: {{ add $shutdown.preStopSeconds $shutdown.graceSeconds .extraSeconds 10 }}
{{- end }}
{{- end }}

{{- define "gateway.preStop" -}}
{{- $shutdown := (index .root.Values .service).shutdown }}
{{- if gt (int $shutdown.preStopSeconds) 0 }}
lifecycle:
  preStop:
    sleep:
      seconds: {{ $shutdown.preStopSeconds }}
{{- end }}
{{- end }}

{{/* Environment shared by every service; takes (dict "root" $ "service" name). */}}
{{- define "gateway.commonEnv" -}}
- name: LOG_LEVEL
  value: {{ .root.Values.logLevel | quote }}
- name: METRICS_HOST
  value: 0.0.0.0
- name: METRICS_PORT
  value: {{ (index .root.Values .service).metricsPort | quote }}
- name: GATEWAY_CONFIG
  value: /etc/gateway/config/gateway.yaml
- name: GRPC_MAX_MESSAGE_BYTES
  value: {{ .root.Values.grpc.maxMessageBytes | int64 | quote }}
{{- if .root.Values.grpc.insecure }}
- name: GRPC_INSECURE
  value: "true"
{{- else }}
- name: GRPC_TLS_CERT
  value: /etc/gateway/tls/tls.crt
- name: GRPC_TLS_KEY
  value: /etc/gateway/tls/tls.key
- name: GRPC_TLS_CA
  value: /etc/gateway/tls/ca.crt
{{- end }}
{{- with .root.Values.otel }}
{{- if .endpoint }}
- name: OTEL_EXPORTER_OTLP_ENDPOINT
  value: {{ .endpoint | quote }}
- name: OTEL_EXPORTER_OTLP_PROTOCOL
  value: {{ .protocol | quote }}
- name: OTEL_SERVICE_NAME
  value: {{ printf "gateway-%s" $.service | quote }}
{{- if .resourceAttributes }}
- name: OTEL_RESOURCE_ATTRIBUTES
  value: {{ .resourceAttributes | quote }}
{{- end }}
{{- end }}
{{- end }}
{{- range $name, $value := (index .root.Values .service).extraEnv }}
- name: {{ $name }}
  value: {{ $value | quote }}
{{- end }}
{{- end }}

{{- define "gateway.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: 10001
runAsGroup: 10001
fsGroup: 10001
seccompProfile:
  type: RuntimeDefault
{{- end }}

{{- define "gateway.containerSecurityContext" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
privileged: false
capabilities:
  drop: [ALL]
{{- end }}

{{/*
Pod annotations: with gatewayConfigRollout "restart", the config checksum rolls every pod when the gateway
YAML changes; with "reload" the services take the mounted file as it changes and the pods stay.
*/}}
{{- define "gateway.podAnnotations" -}}
{{- if eq .root.Values.gatewayConfigRollout "restart" }}
checksum/gateway-config: {{ .root.Values.gatewayConfig | sha256sum }}
{{- else }}
gateway/config-rollout: reload
{{- end }}
{{- end }}

{{- define "gateway.volumeMounts" -}}
- name: gateway-config
  mountPath: /etc/gateway/config
  readOnly: true
- name: tmp
  mountPath: /tmp
{{- if not .root.Values.grpc.insecure }}
- name: grpc-tls
  mountPath: /etc/gateway/tls
  readOnly: true
{{- end }}
{{- end }}

{{- define "gateway.volumes" -}}
- name: gateway-config
  configMap:
    name: {{ include "gateway.fullname" .root }}-config
# The root filesystem is read-only; Node and its libraries still want a writable /tmp.
- name: tmp
  emptyDir:
    sizeLimit: 64Mi
{{- if not .root.Values.grpc.insecure }}
- name: grpc-tls
  secret:
    secretName: {{ include "gateway.tlsSecretName" . }}
{{- end }}
{{- end }}

{{- define "gateway.podSpecCommon" -}}
automountServiceAccountToken: false
securityContext:
  {{- include "gateway.podSecurityContext" . | nindent 2 }}
{{- with .root.Values.imagePullSecrets }}
imagePullSecrets:
  {{- range . }}
  - name: {{ . }}
  {{- end }}
{{- end }}
{{- if .root.Values.topologySpread.enabled }}
topologySpreadConstraints:
  {{- range list "topology.kubernetes.io/zone" "kubernetes.io/hostname" }}
  - maxSkew: 1
    topologyKey: {{ . }}
    whenUnsatisfiable: {{ $.root.Values.topologySpread.whenUnsatisfiable }}
    labelSelector:
      matchLabels:
        {{- include "gateway.selectorLabels" $ | nindent 8 }}
  {{- end }}
{{- end }}
{{- end }}

{{/*
The Job the spool sweeper starts for a spool volume no ingress pod serves; takes (dict "root" $ "ctx" ctx).
The sweeper names it and sets the claim of its `usage-spool` volume.
*/}}
{{- define "gateway.spoolDrainJob" -}}
{{- $values := .root.Values.ingress.spoolSweeper }}
apiVersion: batch/v1
kind: Job
metadata:
  labels:
    {{- include "gateway.labels" .ctx | nindent 4 }}
spec:
  backoffLimit: 4
  ttlSecondsAfterFinished: {{ $values.drainJobTtlSeconds }}
  activeDeadlineSeconds: {{ add $values.drainSeconds 300 }}
  template:
    metadata:
      labels:
        {{- include "gateway.labels" .ctx | nindent 8 }}
    spec:
      restartPolicy: Never
      automountServiceAccountToken: false
      securityContext:
        {{- include "gateway.podSecurityContext" .ctx | nindent 8 }}
      {{- with .root.Values.imagePullSecrets }}
      imagePullSecrets:
        {{- range . }}
        - name: {{ . }}
        {{- end }}
      {{- end }}
      containers:
        - name: drain
          image: {{ include "gateway.image" (dict "root" .root "image" .root.Values.ingress.image) }}
          imagePullPolicy: {{ .root.Values.imagePullPolicy }}
          command: [node, dist/drain-spool.js]
          securityContext:
            {{- include "gateway.containerSecurityContext" .ctx | nindent 12 }}
          env:
            - name: LOG_LEVEL
              value: {{ .root.Values.logLevel | quote }}
            {{- include "gateway.kafkaEnv" .ctx | nindent 12 }}
            - name: USAGE_SPOOL_DIR
              value: /var/lib/gateway/spool
            - name: USAGE_SPOOL_DRAIN_MS
              value: {{ mul $values.drainSeconds 1000 | quote }}
          resources:
            {{- toYaml $values.resources | nindent 12 }}
          volumeMounts:
            - name: usage-spool
              mountPath: /var/lib/gateway/spool
            - name: tmp
              mountPath: /tmp
      volumes:
        - name: usage-spool
          persistentVolumeClaim:
            claimName: set-by-the-sweeper
        - name: tmp
          emptyDir:
            sizeLimit: 16Mi
{{- end }}
