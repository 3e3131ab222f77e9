{{/*
The five services, in start-up order, and the console when console.enabled.
Templates range over this list and read each service's block of values with
`index $.Values $name`.
*/}}
{{- define "doclib.serviceNames" -}}
{{- if .Values.console.enabled -}}
["taxonomy","media","catalog","webhook","gateway","console"]
{{- else -}}
["taxonomy","media","catalog","webhook","gateway"]
{{- end }}
{{- end }}

{{- define "doclib.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Fully qualified app name, truncated so that "<fullname>-<service>" stays
within the 63 characters of a DNS label.
*/}}
{{- define "doclib.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 50 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 50 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 50 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "doclib.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Labels of every object. */}}
{{- define "doclib.labels" -}}
helm.sh/chart: {{ include "doclib.chart" . }}
app.kubernetes.io/name: {{ include "doclib.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: doclib
{{- end }}

{{/*
Per-service helpers take a dict: (dict "root" $ "name" "catalog").
*/}}
{{- define "doclib.componentName" -}}
{{- printf "%s-%s" (include "doclib.fullname" .root) .name }}
{{- end }}

{{- define "doclib.componentLabels" -}}
{{ include "doclib.labels" .root }}
app.kubernetes.io/component: {{ .name }}
{{- end }}

{{- define "doclib.selectorLabels" -}}
app.kubernetes.io/name: {{ include "doclib.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .name }}
{{- end }}

{{- define "doclib.serviceAccountName" -}}
{{- if .root.Values.serviceAccount.create }}
{{- include "doclib.componentName" . }}
{{- else -}}
default
{{- end }}
{{- end }}

{{- define "doclib.image" -}}
{{- $img := (index .root.Values .name).image }}
{{- printf "%s:%s" $img.repository (default .root.Chart.AppVersion $img.tag) }}
{{- end }}

{{/* Base URL of a service inside the cluster. */}}
{{- define "doclib.url" -}}
{{- printf "http://%s:%v" (include "doclib.componentName" .) (index .root.Values .name).port }}
{{- end }}

{{/* The autoscaler owns the replica count when it is enabled. */}}
{{- define "doclib.pdbWanted" -}}
{{- $svc := index .root.Values .name }}
{{- if or $svc.autoscaling.enabled (gt (int $svc.replicaCount) 1) }}true{{ end }}
{{- end }}

{{/* Secrets made by the chart (only when no existing Secret is named). */}}
{{- define "doclib.secretName.bo" -}}
{{- .Values.bo.existingSecret | default (printf "%s-bo" (include "doclib.fullname" .)) }}
{{- end }}
{{- define "doclib.secretName.consoleSession" -}}
{{- .Values.console.session.existingSecret | default (printf "%s-console-session" (include "doclib.fullname" .)) }}
{{- end }}

{{- define "doclib.secretName.consoleOIDC" -}}
{{- .Values.console.oidc.existingSecret | default (printf "%s-console-oidc" (include "doclib.fullname" .)) }}
{{- end }}
{{- define "doclib.secretName.mongodb" -}}
{{- .Values.mongodb.existingSecret | default (printf "%s-mongodb" (include "doclib.fullname" .)) }}
{{- end }}
{{- define "doclib.secretName.s3" -}}
{{- .Values.s3.existingSecret | default (printf "%s-s3" (include "doclib.fullname" .)) }}
{{- end }}
{{- define "doclib.secretName.identity" -}}
{{- .Values.identity.existingSecret | default (printf "%s-identity" (include "doclib.fullname" .)) }}
{{- end }}
{{- define "doclib.secretKey.identity" -}}
{{- if .Values.identity.existingSecret }}{{ .Values.identity.existingSecretKey }}{{ else }}identity-signing-key{{ end }}
{{- end }}
{{- define "doclib.secretName.webhookSecretKey" -}}
{{- .Values.webhookSecretKey.existingSecret | default (printf "%s-webhook-secret-key" (include "doclib.fullname" .)) }}
{{- end }}
{{- define "doclib.secretKey.webhookSecretKey" -}}
{{- if .Values.webhookSecretKey.existingSecret }}{{ .Values.webhookSecretKey.existingSecretKey }}{{ else }}webhook-secret-key{{ end }}
{{- end }}
{{- define "doclib.secretKey.webhookDecryptionKeys" -}}
{{- if .Values.webhookSecretKey.existingSecret }}{{ .Values.webhookSecretKey.existingSecretDecryptionKeysKey }}{{ else }}webhook-secret-decryption-keys{{ end }}
{{- end }}
{{- define "doclib.secretKey.bo" -}}
{{- if .Values.bo.existingSecret }}{{ .Values.bo.existingSecretKey }}{{ else }}bo-api-tokens{{ end }}
{{- end }}
{{- define "doclib.secretKey.mongodb" -}}
{{- if .Values.mongodb.existingSecret }}{{ .Values.mongodb.existingSecretKey }}{{ else }}mongodb-uri{{ end }}
{{- end }}
{{- define "doclib.secretKey.s3.access" -}}
{{- if .Values.s3.existingSecret }}{{ .Values.s3.existingSecretAccessKeyKey }}{{ else }}access-key{{ end }}
{{- end }}
{{- define "doclib.secretKey.s3.secret" -}}
{{- if .Values.s3.existingSecret }}{{ .Values.s3.existingSecretSecretKeyKey }}{{ else }}secret-key{{ end }}
{{- end }}

{{/*
Checks across values that the schema cannot express. Included by every
template that needs them, so that `helm template -s` fails the same way.
*/}}
{{- define "doclib.validate" -}}
{{- $bo := .Values.bo }}
{{- if not (or $bo.tokens $bo.existingSecret $bo.oidc.issuerUrl) }}
{{- fail "\n\nbo: the back-office API (/bo) needs credentials and there is no default token.\nSet one of:\n  --set-json 'bo.tokens=[{\"name\":\"alice\",\"role\":\"editor\",\"token\":\"<32+ random characters>\"}]'\n  --set bo.existingSecret=<Secret with key bo-api-tokens: NAME:ROLE:TOKEN lines>\n  --set bo.oidc.issuerUrl=https://id.example.com --set bo.oidc.audience=doclib\n" }}
{{- end }}
{{- if and $bo.oidc.issuerUrl (not $bo.oidc.audience) }}
{{- fail "bo.oidc.audience is required when bo.oidc.issuerUrl is set" }}
{{- end }}
{{- if not .Values.moderatorEmail }}
{{- fail "moderatorEmail is required: the address the app shows (GET /public/config) until an editor sets one" }}
{{- end }}
{{- if not (or .Values.mongodb.existingSecret .Values.mongodb.uri) }}
{{- fail "mongodb: set mongodb.uri or mongodb.existingSecret" }}
{{- end }}
{{- if not (or .Values.s3.existingSecret (and .Values.s3.accessKey .Values.s3.secretKey)) }}
{{- fail "s3: set s3.existingSecret (a Secret with the access and secret keys) or both s3.accessKey and s3.secretKey" }}
{{- end }}
{{- if and .Values.console.enabled .Values.console.oidc.clientId (not .Values.bo.oidc.issuerUrl) }}
{{- fail "console.oidc.clientId needs bo.oidc.issuerUrl: the console signs people in at the issuer the gateway trusts" }}
{{- end }}
{{- if and .Values.console.enabled (eq (include "doclib.consoleTokenSignIn" .) "false") (not .Values.console.oidc.clientId) }}
{{- fail "console: no sign-in; set console.oidc.clientId (with bo.oidc.issuerUrl), or, knowing what it exposes, console.tokenSignIn=true (the chart's README, Console)" }}
{{- end }}
{{- if and .Values.console.enabled (not .Values.console.origin) }}
{{- fail "console.origin is required when console.enabled: where browsers reach the console, e.g. https://admin.library.example.com (CONSOLE_ORIGIN; form posts from elsewhere are refused)" }}
{{- end }}
{{- if eq (int .Values.gateway.port) (int .Values.gateway.adminPort) }}
{{- fail "gateway.port and gateway.adminPort must differ: /bo is served on the admin listener only" }}
{{- end }}
{{- $gw := .Values.gateway }}
{{- /* Both limits count per client IP: behind an ingress, without
TRUSTED_PROXIES, every client is the controller's pod. */}}
{{- $publicLimit := and .Values.ingress.enabled (ne (toString (dig "PUBLIC_RATE_LIMIT" "100" $gw.env)) "0") }}
{{- $authLimit := and .Values.adminIngress.enabled (ne (toString (dig "BO_AUTH_FAILURE_LIMIT" "60" $gw.env)) "0") }}
{{- if and (or $publicLimit $authLimit) (not $gw.trustedProxies) (not (dig "TRUSTED_PROXIES" "" $gw.env)) }}
{{- fail (printf "\n\ngateway.trustedProxies: %s per client IP.\nWithout TRUSTED_PROXIES the gateway sees one client, the ingress controller's pod: every mobile\nuser shares one rate-limit bucket, and one back-office client's bad tokens lock every back-office\nuser out (429). Set the ingress controllers' pod addresses (usually the pod CIDR):\n  --set-json 'gateway.trustedProxies=[\"10.244.0.0/16\"]'\nor turn the limits off (e.g. when the ingresses limit per client):\n  --set-string gateway.env.PUBLIC_RATE_LIMIT=0 --set-string gateway.env.BO_AUTH_FAILURE_LIMIT=0\n" (ternary "the public ingress is on with its rate limit" "the admin ingress is on with its limit of failed authentications" $publicLimit)) }}
{{- end }}
{{- if and .Values.ingress.enabled .Values.adminIngress.enabled (eq .Values.ingress.host .Values.adminIngress.host) }}
{{- fail "ingress.host and adminIngress.host must differ: the back-office is served on its own host" }}
{{- end }}
{{- range $name := include "doclib.serviceNames" . | fromJsonArray }}
{{- $svc := index $.Values $name }}
{{- if and $svc.autoscaling.enabled (not (dig "requests" "cpu" "" $svc.resources)) }}
{{- fail (printf "%s.autoscaling needs %s.resources.requests.cpu (the HPA scales on CPU utilisation of the request)" $name $name) }}
{{- end }}
{{- if not (dig "requests" "memory" "" $svc.resources) }}
{{- fail (printf "%s.resources.requests (cpu and memory) must be set" $name) }}
{{- end }}
{{- end }}
{{- end }}

{{/*
The container's environment. Plain values are gathered in one map so that a
service's `env` can override a chart default without duplicate names;
secrets and the downward API come after, then extraEnv.
*/}}
{{- define "doclib.env" -}}
{{- $root := .root }}
{{- $name := .name }}
{{- $svc := index $root.Values $name }}
{{- $v := $root.Values }}
{{- $plain := dict
  "LOG_LEVEL" $v.logLevel
  "SHUTDOWN_DRAIN_DELAY" (printf "%vs" $v.shutdown.drainDelaySeconds)
  "SHUTDOWN_TIMEOUT" (printf "%vs" $v.shutdown.timeoutSeconds)
}}
{{- if $v.otel.endpoint }}
{{- $_ := set $plain "OTEL_EXPORTER_OTLP_ENDPOINT" $v.otel.endpoint }}
{{- $_ := set $plain "OTEL_EXPORTER_OTLP_PROTOCOL" "http/protobuf" }}
{{- $attrs := list "k8s.namespace.name=$(POD_NAMESPACE)" "k8s.pod.name=$(POD_NAME)" }}
{{- if $v.otel.resourceAttributes }}{{ $attrs = append $attrs $v.otel.resourceAttributes }}{{ end }}
{{- $_ := set $plain "OTEL_RESOURCE_ATTRIBUTES" (join "," $attrs) }}
{{- end }}
{{- if eq $name "gateway" }}
{{- $_ := set $plain "PUBLIC_ADDR" (printf ":%v" $svc.port) }}
{{- $_ := set $plain "ADMIN_ADDR" (printf ":%v" $svc.adminPort) }}
{{- else }}
{{- $_ := set $plain "HTTP_ADDR" (printf ":%v" $svc.port) }}
{{- end }}
{{- if has $name (list "taxonomy" "catalog" "media" "webhook") }}
{{- $_ := set $plain "MONGODB_DATABASE" (index $v.mongodb.databases $name) }}
{{- end }}
{{- if has $name (list "taxonomy" "catalog" "media" "webhook" "gateway") }}
{{- $_ := set $plain "NATS_URL" $v.nats.url }}
{{- end }}
{{- if eq $name "taxonomy" }}
{{- $_ := set $plain "MODERATOR_EMAIL" $v.moderatorEmail }}
{{- end }}
{{- if eq $name "catalog" }}
{{- $_ := set $plain "TAXONOMY_URL" (include "doclib.url" (dict "root" $root "name" "taxonomy")) }}
{{- $_ := set $plain "MEDIA_URL" (include "doclib.url" (dict "root" $root "name" "media")) }}
{{- end }}
{{- if eq $name "media" }}
{{- $_ := set $plain "CATALOG_URL" (include "doclib.url" (dict "root" $root "name" "catalog")) }}
{{- $_ := set $plain "S3_ENDPOINT" $v.s3.endpoint }}
{{- $_ := set $plain "S3_BUCKET" $v.s3.bucket }}
{{- $_ := set $plain "S3_REGION" $v.s3.region }}
{{- $_ := set $plain "S3_USE_TLS" (ternary "true" "false" $v.s3.useTLS) }}
{{- $_ := set $plain "MEDIA_MAX_UPLOAD_SIZE" (printf "%d" (int64 $v.maxUploadSize)) }}
{{- end }}
{{- if eq $name "webhook" }}
{{- $_ := set $plain "WEBHOOK_ALLOW_HTTP" (ternary "true" "false" $svc.allowHttp) }}
{{- with $svc.allowedNetworks }}
{{- $_ := set $plain "WEBHOOK_ALLOWED_NETWORKS" (join "," .) }}
{{- end }}
{{- end }}
{{- if eq $name "gateway" }}
{{- $_ := set $plain "TAXONOMY_URL" (include "doclib.url" (dict "root" $root "name" "taxonomy")) }}
{{- $_ := set $plain "CATALOG_URL" (include "doclib.url" (dict "root" $root "name" "catalog")) }}
{{- $_ := set $plain "MEDIA_URL" (include "doclib.url" (dict "root" $root "name" "media")) }}
{{- $_ := set $plain "WEBHOOK_URL" (include "doclib.url" (dict "root" $root "name" "webhook")) }}
{{- if $v.console.enabled }}
{{- $_ := set $plain "CONSOLE_URL" (include "doclib.url" (dict "root" $root "name" "console")) }}
{{- end }}
{{- $_ := set $plain "MEDIA_MAX_UPLOAD_SIZE" (printf "%d" (int64 $v.maxUploadSize)) }}
{{- if $v.bo.oidc.issuerUrl }}
{{- $_ := set $plain "OIDC_ISSUER_URL" $v.bo.oidc.issuerUrl }}
{{- $_ := set $plain "OIDC_AUDIENCE" $v.bo.oidc.audience }}
{{- $_ := set $plain "OIDC_ROLE_CLAIM" $v.bo.oidc.roleClaim }}
{{- end }}
{{- with $svc.trustedProxies }}
{{- $_ := set $plain "TRUSTED_PROXIES" (join "," .) }}
{{- end }}
{{- end }}
{{- if eq $name "console" }}
{{- $_ := set $plain "CONSOLE_API_URL" (printf "http://%s:%v" (include "doclib.componentName" (dict "root" $root "name" "gateway")) $v.gateway.adminPort) }}
{{- $_ := set $plain "CONSOLE_ORIGIN" $svc.origin }}
{{- $_ := set $plain "CONSOLE_SESSION_TTL" $svc.sessionTTL }}
{{- $_ := set $plain "CONSOLE_TOKEN_SIGNIN" (include "doclib.consoleTokenSignIn" $root) }}
{{- if $svc.oidc.clientId }}
{{- /* The issuer the gateway trusts: the role is decided by the gateway. */}}
{{- $_ := set $plain "CONSOLE_OIDC_ISSUER_URL" $v.bo.oidc.issuerUrl }}
{{- $_ := set $plain "CONSOLE_OIDC_CLIENT_ID" $svc.oidc.clientId }}
{{- end }}
{{- $_ := set $plain "MEDIA_MAX_UPLOAD_SIZE" (printf "%d" (int64 $v.maxUploadSize)) }}
{{- end }}
{{- range $k, $val := $svc.env }}
{{- $_ := set $plain $k $val }}
{{- end }}
{{- if $v.otel.endpoint }}
- name: POD_NAME
  valueFrom:
    fieldRef:
      fieldPath: metadata.name
- name: POD_NAMESPACE
  valueFrom:
    fieldRef:
      fieldPath: metadata.namespace
{{- end }}
{{- if dig "limits" "memory" "" $svc.resources }}
# A soft memory limit for the Go GC: it collects harder near the container's limit.
- name: GOMEMLIMIT
  valueFrom:
    resourceFieldRef:
      resource: limits.memory
{{- end }}
{{- range $k, $val := $plain }}
- name: {{ $k }}
  value: {{ $val | toString | quote }}
{{- end }}
{{- if ne $name "console" }}
- name: IDENTITY_SIGNING_KEY
  valueFrom:
    secretKeyRef:
      name: {{ include "doclib.secretName.identity" $root }}
      key: {{ include "doclib.secretKey.identity" $root }}
{{- end }}
{{- if has $name (list "taxonomy" "catalog" "media" "webhook") }}
- name: MONGODB_URI
  valueFrom:
    secretKeyRef:
      name: {{ include "doclib.secretName.mongodb" $root }}
      key: {{ include "doclib.secretKey.mongodb" $root }}
{{- end }}
{{- if eq $name "webhook" }}
- name: WEBHOOK_SECRET_KEY
  valueFrom:
    secretKeyRef:
      name: {{ include "doclib.secretName.webhookSecretKey" $root }}
      key: {{ include "doclib.secretKey.webhookSecretKey" $root }}
- name: WEBHOOK_SECRET_DECRYPTION_KEYS
  valueFrom:
    secretKeyRef:
      name: {{ include "doclib.secretName.webhookSecretKey" $root }}
      key: {{ include "doclib.secretKey.webhookDecryptionKeys" $root }}
      optional: true
{{- end }}
{{- if eq $name "media" }}
- name: S3_ACCESS_KEY
  valueFrom:
    secretKeyRef:
      name: {{ include "doclib.secretName.s3" $root }}
      key: {{ include "doclib.secretKey.s3.access" $root }}
- name: S3_SECRET_KEY
  valueFrom:
    secretKeyRef:
      name: {{ include "doclib.secretName.s3" $root }}
      key: {{ include "doclib.secretKey.s3.secret" $root }}
{{- end }}
{{- if and (eq $name "gateway") (or $v.bo.tokens $v.bo.existingSecret) }}
- name: BO_API_TOKENS
  valueFrom:
    secretKeyRef:
      name: {{ include "doclib.secretName.bo" $root }}
      key: {{ include "doclib.secretKey.bo" $root }}
{{- end }}
{{- if eq $name "console" }}
- name: CONSOLE_SESSION_KEY
  valueFrom:
    secretKeyRef:
      name: {{ include "doclib.secretName.consoleSession" $root }}
      key: {{ $svc.session.existingSecretKey }}
{{- end }}
{{- if and (eq $name "console") (or $svc.oidc.clientSecret $svc.oidc.existingSecret) }}
- name: CONSOLE_OIDC_CLIENT_SECRET
  valueFrom:
    secretKeyRef:
      name: {{ include "doclib.secretName.consoleOIDC" $root }}
      key: {{ $svc.oidc.existingSecretKey }}
{{- end }}
{{- with $svc.extraEnv }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/*
The ports of what an egress destination's endpoint names, as a JSON list:
the port written in s3.endpoint, in each server of nats.url, in
otel.endpoint or in bo.oidc.issuerUrl, else its scheme's (S3: 443 with TLS,
80 without; NATS: 4222). The NetworkPolicies open them beside
networkPolicy.egress.<dest>.ports, so that an endpoint outside the cluster
needs no second setting; behind an in-cluster Service a policy sees the
pods' port instead, which .ports lists. (dict "root" $ "dest" "s3")
*/}}
{{- define "doclib.endpointPorts" -}}
{{- $v := .root.Values }}
{{- $ports := list }}
{{- if eq .dest "s3" }}
{{- $ports = append $ports (include "doclib.hostPort" (dict "host" $v.s3.endpoint "default" (ternary 443 80 $v.s3.useTLS))) }}
{{- else if eq .dest "nats" }}
{{- range splitList "," $v.nats.url }}
{{- $u := trim . }}
{{- if not (contains "://" $u) }}{{ $u = printf "nats://%s" $u }}{{ end }}
{{- $ports = append $ports (include "doclib.hostPort" (dict "host" (urlParse $u).host "default" 4222)) }}
{{- end }}
{{- else if has .dest (list "otlp" "oidc") }}
{{- $u := urlParse (ternary $v.otel.endpoint $v.bo.oidc.issuerUrl (eq .dest "otlp")) }}
{{- $ports = append $ports (include "doclib.hostPort" (dict "host" $u.host "default" (ternary 443 80 (eq $u.scheme "https")))) }}
{{- end }}
{{- $ports | toJson }}
{{- end }}

{{/* The port of host[:port] (IPv6 in brackets), else .default. */}}
{{- define "doclib.hostPort" -}}
{{- regexFind ":[0-9]+$" .host | trimPrefix ":" | default .default }}
{{- end }}

{{/* The Service port /metrics is served on: the gateway's admin listener, a service's own port. */}}
{{- define "doclib.metricsPort" -}}
{{- if eq .name "gateway" }}admin{{ else }}http{{ end }}
{{- end }}

{{/* A PromQL selector of this release's series. */}}
{{- define "doclib.promSelector" -}}
namespace="{{ .Release.Namespace }}", job=~"{{ include "doclib.fullname" . }}-(gateway|taxonomy|catalog|media|webhook)"
{{- end }}

{{/*
Whether the console offers the sign-in with a back-office API token: only
when console.tokenSignIn is true (never by default: the chart's README says
what it exposes).
*/}}
{{- define "doclib.consoleTokenSignIn" -}}
{{- ternary "true" "false" (eq .Values.console.tokenSignIn true) -}}
{{- end }}

{{/*
What the Secrets made by the chart hold from values, for one service ("root",
"name"), as JSON: the pod template's checksum/secrets, so that its pods roll
when a value they read through a Secret changes, and only then. A key the
chart generates (the identity and webhook keys, the console's session key) is
not in it: made at install and kept at every upgrade, it never changes, and a
second rendering of secret.yaml would make it anew (lookup finds nothing at
install), so every pod would restart at the first upgrade. A Secret named by
existingSecret is the platform's to roll out.
*/}}
{{- define "doclib.secretValues" -}}
{{- $name := .name }}
{{- $v := .root.Values }}
{{- $in := dict }}
{{- if and (ne $name "console") (not $v.identity.existingSecret) }}
{{- $_ := set $in "identity" $v.identity.key }}
{{- end }}
{{- if and (has $name (list "taxonomy" "catalog" "media" "webhook")) (not $v.mongodb.existingSecret) }}
{{- $_ := set $in "mongodb" $v.mongodb.uri }}
{{- end }}
{{- if and (eq $name "webhook") (not $v.webhookSecretKey.existingSecret) }}
{{- $_ := set $in "webhookSecretKey" (pick $v.webhookSecretKey "key" "decryptionKeys") }}
{{- end }}
{{- if and (eq $name "media") (not $v.s3.existingSecret) }}
{{- $_ := set $in "s3" (pick $v.s3 "accessKey" "secretKey") }}
{{- end }}
{{- if and (eq $name "gateway") (not $v.bo.existingSecret) }}
{{- $_ := set $in "bo" $v.bo.tokens }}
{{- end }}
{{- if and (eq $name "console") (not $v.console.oidc.existingSecret) }}
{{- $_ := set $in "consoleOIDC" $v.console.oidc.clientSecret }}
{{- end }}
{{- toJson $in }}
{{- end }}
