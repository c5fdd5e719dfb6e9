{{/*
Names. Every object is prefixed with the release-derived fullname, so cluster-scoped objects
(ClusterRoles, bindings) of two releases never collide. APIService names are fixed by the API
groups they serve and cannot be prefixed: install the suite's APIServices once per cluster.
*/}}
{{- define "ferrocrane.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "ferrocrane.fullname" -}}
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

{{/* <fullname>-<component>, e.g. ferrocrane-ksm. Call with (dict "ctx" $ "component" "ksm"). */}}
{{- define "ferrocrane.componentName" -}}
{{- printf "%s-%s" (include "ferrocrane.fullname" .ctx | trunc 50 | trimSuffix "-") .component | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "ferrocrane.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Labels on every object: (dict "ctx" $ "component" "ksm"). */}}
{{- define "ferrocrane.labels" -}}
helm.sh/chart: {{ include "ferrocrane.chart" .ctx }}
{{ include "ferrocrane.selectorLabels" . }}
app.kubernetes.io/version: {{ .ctx.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .ctx.Release.Service }}
app.kubernetes.io/part-of: ferrocrane
{{- with .ctx.Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{- define "ferrocrane.selectorLabels" -}}
app.kubernetes.io/name: {{ include "ferrocrane.name" .ctx }}
app.kubernetes.io/instance: {{ .ctx.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{/* ServiceAccount name of a component: (dict "ctx" $ "component" "ksm" "values" .Values.ksm). */}}
{{- define "ferrocrane.serviceAccountName" -}}
{{- if .values.serviceAccount.create }}
{{- default (include "ferrocrane.componentName" .) .values.serviceAccount.name }}
{{- else }}
{{- default "default" .values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* Image reference: (dict "ctx" $ "image" .Values.ksm.image). */}}
{{- define "ferrocrane.image" -}}
{{- $registry := default .ctx.Values.global.imageRegistry .image.registry -}}
{{- $tag := default .ctx.Chart.AppVersion .image.tag -}}
{{- if .image.digest -}}
{{- printf "%s/%s@%s" $registry .image.repository .image.digest -}}
{{- else -}}
{{- printf "%s/%s:%s" $registry .image.repository $tag -}}
{{- end -}}
{{- end }}

{{/* The pod-level securityContext shared by every component unless overridden. */}}
{{- define "ferrocrane.podSecurityContext" -}}
{{- toYaml (default .ctx.Values.global.podSecurityContext .values.podSecurityContext) }}
{{- end }}

{{- define "ferrocrane.containerSecurityContext" -}}
{{- toYaml (default .ctx.Values.global.containerSecurityContext .values.containerSecurityContext) }}
{{- end }}

{{/*
Scheduling fields shared by the three Deployments: (dict "ctx" $ "values" .Values.ksm).
*/}}
{{- define "ferrocrane.podScheduling" -}}
{{- with (concat .ctx.Values.global.imagePullSecrets .values.imagePullSecrets) }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .values.priorityClassName }}
priorityClassName: {{ . }}
{{- end }}
{{- with .values.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .values.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .values.topologySpreadConstraints }}
topologySpreadConstraints:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}

{{/* Adapter serving-certificate Secret name. */}}
{{- define "ferrocrane.adapter.tlsSecretName" -}}
{{- if eq .Values.adapter.tls.mode "secret" }}
{{- required "adapter.tls.secretName is required when adapter.tls.mode is secret" .Values.adapter.tls.secretName }}
{{- else }}
{{- printf "%s-tls" (include "ferrocrane.componentName" (dict "ctx" . "component" "adapter")) }}
{{- end }}
{{- end }}

{{/*
The adapter's serving certificate and CA for tls.mode=helm, generated once per render and
shared by the Secret and the APIServices (helm renders every template in one pass, so the
memoised value is the same in both). An existing Secret is reused so upgrades do not rotate
the CA under running clients; `adapter.tls.helm.rotate: true` forces a new one.
*/}}
{{- define "ferrocrane.adapter.generatedTLS" -}}
{{- $cache := .Values.adapter.tls.helm -}}
{{- if not (hasKey $cache "_generated") -}}
{{- $secretName := include "ferrocrane.adapter.tlsSecretName" . -}}
{{- $existing := lookup "v1" "Secret" .Release.Namespace $secretName -}}
{{- if and $existing $existing.data (hasKey $existing.data "ca.crt") (hasKey $existing.data "tls.crt") (hasKey $existing.data "tls.key") (not .Values.adapter.tls.helm.rotate) -}}
{{- $_ := set $cache "_generated" (dict "ca" (index $existing.data "ca.crt") "crt" (index $existing.data "tls.crt") "key" (index $existing.data "tls.key")) -}}
{{- else -}}
{{- $svc := include "ferrocrane.componentName" (dict "ctx" . "component" "adapter") -}}
{{- $ns := .Release.Namespace -}}
{{- $dns := list $svc (printf "%s.%s" $svc $ns) (printf "%s.%s.svc" $svc $ns) (printf "%s.%s.svc.%s" $svc $ns .Values.clusterDomain) -}}
{{- $ca := genCA (printf "%s-ca" $svc) (int .Values.adapter.tls.helm.validityDays) -}}
{{- $cert := genSignedCert (printf "%s.%s.svc" $svc $ns) nil $dns (int .Values.adapter.tls.helm.validityDays) $ca -}}
{{- $_ := set $cache "_generated" (dict "ca" ($ca.Cert | b64enc) "crt" ($cert.Cert | b64enc) "key" ($cert.Key | b64enc)) -}}
{{- end -}}
{{- end -}}
{{- toJson (get $cache "_generated") -}}
{{- end }}

{{/* caBundle (base64) for the APIServices, or empty when cert-manager injects it. */}}
{{- define "ferrocrane.adapter.caBundle" -}}
{{- if eq .Values.adapter.tls.mode "helm" -}}
{{- (include "ferrocrane.adapter.generatedTLS" . | fromJson).ca -}}
{{- else if eq .Values.adapter.tls.mode "secret" -}}
{{- with .Values.adapter.tls.caBundle }}{{ . | b64enc }}{{ end -}}
{{- end -}}
{{- end }}
