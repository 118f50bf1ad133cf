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
app.kubernetes.io/component: {{ .service }}
{{ include "gateway.selectorLabels" . }}
{{- with .root.Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* Labels of a component's pods: the object labels and the component's podLabels. */}}
{{- define "gateway.podLabels" -}}
{{ include "gateway.labels" . }}
{{- with (index .root.Values .service).podLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{- define "gateway.selectorLabels" -}}
app.kubernetes.io/name: {{ .service }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
{{- end }}

{{- define "gateway.serviceName" -}}
{{ include "gateway.fullname" .root }}-{{ .service }}
{{- end }}

{{/* An image by digest when one is given, else by tag; global.imageRegistry (an umbrella chart's) wins. */}}
{{- define "gateway.image" -}}
{{- $registry := .root.Values.imageRegistry }}
{{- with .root.Values.global }}{{ with .imageRegistry }}{{ $registry = . }}{{ end }}{{ end }}
{{- if .image.digest }}
{{- printf "%s%s@%s" $registry .image.repository .image.digest }}
{{- else }}
{{- printf "%s%s:%s" $registry .image.repository (.image.tag | default .root.Chart.AppVersion) }}
{{- end }}
{{- end }}

{{/* imagePullSecrets and global.imagePullSecrets, once each; takes the root context. */}}
{{- define "gateway.imagePullSecrets" -}}
{{- $names := .Values.imagePullSecrets }}
{{- with .Values.global }}{{ with .imagePullSecrets }}{{ $names = concat $names . }}{{ end }}{{ end }}
{{- with uniq $names -}}
imagePullSecrets:
  {{- range . }}
  - name: {{ . }}
  {{- end }}
{{- end }}
{{- end }}

{{/* A component's ServiceAccount: its own when created or named, else the namespace's default. */}}
{{- define "gateway.serviceAccountName" -}}
{{- $account := (index .root.Values .service).serviceAccount }}
{{- if $account.create }}
{{- $account.name | default (include "gateway.serviceName" .) }}
{{- else }}
{{- $account.name | default "default" }}
{{- end }}
{{- end }}

{{/* Checks run once per render: what the schema cannot say. */}}
{{- define "gateway.validate" -}}
{{- if and (eq (int .Values.ingress.service.port) 443) (not .Values.ingress.service.tlsTerminatedByLoadBalancer) }}
{{- fail "ingress.service.port 443 would put plaintext HTTP behind the port clients take for TLS: expose the API with publicApi.ingress or publicApi.httpRoute (TLS in front), or end TLS at the load balancer and set ingress.service.tlsTerminatedByLoadBalancer" }}
{{- end }}
{{- with .Values.publicApi.ingress }}
{{- if and .enabled (or (not .hosts) (not .tlsSecretName)) }}
{{- fail "publicApi.ingress needs hosts and tlsSecretName: the public API is served with TLS only" }}
{{- end }}
{{- end }}
{{- with .Values.publicApi.httpRoute }}
{{- if and .enabled (or (not .parentRefs) (not .hostnames)) }}
{{- fail "publicApi.httpRoute needs parentRefs (an HTTPS listener of a Gateway) and hostnames" }}
{{- end }}
{{- end }}
{{- if and .Values.monitoring.prometheusRule.enabled (not .Values.monitoring.prometheusRule.runbookBaseUrl) }}
{{- fail "monitoring.prometheusRule.runbookBaseUrl: the URL where docs/runbooks/ is published (ending in /), so that every alert links its runbook" }}
{{- end }}
{{- with .Values.kafka.sasl }}
{{- if and .mechanism (not $.Values.kafka.tls.enabled) }}
{{- fail "kafka.sasl.mechanism needs kafka.tls.enabled: true (a password or token never travels in plaintext)" }}
{{- end }}
{{- if and (eq .mechanism "aws-msk-iam") (not .awsRegion) }}
{{- fail "kafka.sasl.awsRegion: name the AWS region of the MSK cluster" }}
{{- end }}
{{- end }}
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
Kafka connection of every process that talks to Kafka (ingress, metering, hook Jobs): the brokers from the
Secret, then TLS and SASL; takes (dict "root" $). Pair with gateway.kafkaVolumeMounts and gateway.kafkaVolumes.
*/}}
{{- define "gateway.kafkaEnv" -}}
{{- $root := .root }}
{{- $kafka := .root.Values.kafka }}
{{- include "gateway.secretEnv" (dict "root" .root "name" "KAFKA_BROKERS" "key" "kafkaBrokers") }}
- name: USAGE_TOPIC
  value: {{ $kafka.usageTopic | quote }}
{{- if $kafka.tls.enabled }}
- name: KAFKA_TLS
  value: "true"
{{- if $kafka.tls.caSecret }}
- name: KAFKA_TLS_CA
  value: /etc/gateway/kafka-ca/{{ $kafka.tls.caKey }}
{{- end }}
{{- with $kafka.tls.serverName }}
- name: KAFKA_TLS_SERVER_NAME
  value: {{ . | quote }}
{{- end }}
{{- end }}
{{- with $kafka.sasl.mechanism }}
- name: KAFKA_SASL_MECHANISM
  value: {{ . | quote }}
{{- if eq . "aws-msk-iam" }}
- name: KAFKA_AWS_REGION
  value: {{ $kafka.sasl.awsRegion | quote }}
{{- else }}
{{- $secret := $kafka.sasl.existingSecret | default $root.Values.secrets.existingSecret }}
- name: KAFKA_SASL_USERNAME
  valueFrom:
    secretKeyRef:
      name: {{ $secret }}
      key: {{ $kafka.sasl.usernameKey }}
- name: KAFKA_SASL_PASSWORD
  valueFrom:
    secretKeyRef:
      name: {{ $secret }}
      key: {{ $kafka.sasl.passwordKey }}
{{- end }}
{{- end }}
{{- end }}

{{- define "gateway.kafkaVolumeMounts" -}}
{{- if and .root.Values.kafka.tls.enabled .root.Values.kafka.tls.caSecret }}
- name: kafka-ca
  mountPath: /etc/gateway/kafka-ca
  readOnly: true
{{- end }}
{{- end }}

{{- define "gateway.kafkaVolumes" -}}
{{- if and .root.Values.kafka.tls.enabled .root.Values.kafka.tls.caSecret }}
- name: kafka-ca
  secret:
    secretName: {{ .root.Values.kafka.tls.caSecret }}
{{- end }}
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
{{- with (index .root.Values .service).nodeOptions }}
- name: NODE_OPTIONS
  value: {{ . | quote }}
{{- end }}
{{- range $name, $value := (index .root.Values .service).extraEnv }}
- name: {{ $name }}
  value: {{ $value | quote }}
{{- end }}
{{- with (index .root.Values .service).extraEnvVars }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* podSecurityContext and containerSecurityContext as given (a null removes a default key: OpenShift). */}}
{{- define "gateway.podSecurityContext" -}}
{{ toYaml .root.Values.podSecurityContext }}
{{- end }}

{{- define "gateway.containerSecurityContext" -}}
{{ toYaml .root.Values.containerSecurityContext }}
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
{{- with (index .root.Values .service).podAnnotations }}
{{ toYaml . }}
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
{{- with (index .root.Values .service).extraVolumeMounts }}
{{ toYaml . }}
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
{{- with (index .root.Values .service).extraVolumes }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{- define "gateway.podSpecCommon" -}}
{{- $values := index .root.Values .service -}}
serviceAccountName: {{ include "gateway.serviceAccountName" . }}
automountServiceAccountToken: {{ $values.serviceAccount.automountToken }}
securityContext:
  {{- include "gateway.podSecurityContext" . | nindent 2 }}
{{- with include "gateway.imagePullSecrets" .root }}
{{ . }}
{{- end }}
{{- with $values.priorityClassName }}
priorityClassName: {{ . }}
{{- end }}
{{- with $values.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $values.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $values.initContainers }}
initContainers:
  {{- toYaml . | nindent 2 }}
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

{{/* Where the Helm hooks' pods run (`hooks`): PriorityClass, nodeSelector, tolerations, affinity. */}}
{{- define "gateway.hookPlacement" -}}
{{- with .Values.hooks.priorityClassName }}
priorityClassName: {{ . }}
{{- end }}
{{- with .Values.hooks.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.hooks.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.hooks.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}

{{/* The regional providers' credentials for the router: the AWS keys and the Google key file, when their Secrets are named. */}}
{{- define "gateway.regionalProviderEnv" -}}
{{- with .Values.regionalProviders.aws.existingSecret }}
- name: AWS_ACCESS_KEY_ID
  valueFrom:
    secretKeyRef:
      name: {{ . }}
      key: AWS_ACCESS_KEY_ID
- name: AWS_SECRET_ACCESS_KEY
  valueFrom:
    secretKeyRef:
      name: {{ . }}
      key: AWS_SECRET_ACCESS_KEY
- name: AWS_SESSION_TOKEN
  valueFrom:
    secretKeyRef:
      name: {{ . }}
      key: AWS_SESSION_TOKEN
      optional: true
{{- end }}
{{- if .Values.regionalProviders.google.existingSecret }}
- name: GOOGLE_APPLICATION_CREDENTIALS
  value: /etc/gateway/google/key.json
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
      {{- with include "gateway.imagePullSecrets" .root }}
      {{- . | nindent 6 }}
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
            {{- include "gateway.kafkaVolumeMounts" .ctx | nindent 12 }}
      volumes:
        {{- include "gateway.kafkaVolumes" .ctx | nindent 8 }}
        - name: usage-spool
          persistentVolumeClaim:
            claimName: set-by-the-sweeper
        - name: tmp
          emptyDir:
            sizeLimit: 16Mi
{{- end }}

{{- /* Metering's webhook deliveries: the private endpoints allowed, the CA trusted beside the system's, the pace. */}}
{{- define "gateway.webhookEnv" -}}
{{- $webhooks := .Values.webhooks }}
{{- with $webhooks.allowedPrivateTargets }}
- name: WEBHOOK_ALLOWED_PRIVATE_TARGETS
  value: {{ join "," . | quote }}
{{- end }}
{{- if $webhooks.caConfigMap }}
- name: WEBHOOK_CA_FILE
  value: /etc/gateway/webhook-ca/ca.crt
{{- end }}
- name: WEBHOOK_TIMEOUT_MS
  value: {{ mul $webhooks.timeoutSeconds 1000 | quote }}
- name: WEBHOOK_RETRY_WINDOW_MS
  value: {{ mul $webhooks.retryWindowHours 3600000 | quote }}
- name: WEBHOOK_CONCURRENCY
  value: {{ $webhooks.concurrency | quote }}
{{- end }}
