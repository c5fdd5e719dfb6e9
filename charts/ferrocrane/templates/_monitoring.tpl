{{/*
Scrape endpoints per component, shared by ServiceMonitor and PodMonitor:
(dict "ctx" $ "component" "ksm") -> YAML list of endpoint specs keyed by port name.
*/}}
{{- define "ferrocrane.scrapeEndpoints" -}}
{{- $ctx := .ctx }}
{{- $m := .monitor }}
{{- if eq .component "ksm" }}
- port: http-metrics
  path: /metrics
  honorLabels: true
  interval: {{ $m.interval }}
  scrapeTimeout: {{ $m.scrapeTimeout }}
- port: telemetry
  path: /metrics
  interval: {{ $m.interval }}
  scrapeTimeout: {{ $m.scrapeTimeout }}
{{- else if eq .component "adapter" }}
{{- $svc := include "ferrocrane.componentName" (dict "ctx" $ctx "component" "adapter") }}
- port: https
  path: /metrics
  scheme: https
  interval: {{ $m.interval }}
  scrapeTimeout: {{ $m.scrapeTimeout }}
  {{- if eq .kind "ServiceMonitor" }}
  {{- /* The adapter authorizes /metrics like any aggregated API server: Prometheus's
  ServiceAccount needs `get` on the nonResourceURL /metrics. */}}
  bearerTokenFile: /var/run/secrets/kubernetes.io/serviceaccount/token
  {{- end }}
  tlsConfig:
    serverName: {{ printf "%s.%s.svc" $svc $ctx.Release.Namespace }}
    ca:
      secret:
        name: {{ include "ferrocrane.adapter.tlsSecretName" $ctx }}
        key: ca.crt
{{- else if eq .component "craned" }}
- port: http-metrics
  path: /metrics
  interval: {{ $m.interval }}
  scrapeTimeout: {{ $m.scrapeTimeout }}
{{- end }}
{{- end }}
