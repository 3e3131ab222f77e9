{{/* One Ingress to one listener of the gateway: (dict "root" $ "ing" <values> "suffix" "public" "port" "http"). */}}
{{- define "doclib.ingress" -}}
{{- $gw := dict "root" .root "name" "gateway" }}
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: {{ printf "%s-%s" (include "doclib.componentName" $gw) .suffix }}
  labels:
    {{- include "doclib.componentLabels" $gw | nindent 4 }}
  {{- with .ing.annotations }}
  annotations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
spec:
  {{- with .ing.className }}
  ingressClassName: {{ . }}
  {{- end }}
  {{- with .ing.tls }}
  tls:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  rules:
    - host: {{ .ing.host | quote }}
      http:
        paths:
          {{- range .ing.paths }}
          - path: {{ . }}
            pathType: Prefix
            backend:
              service:
                name: {{ include "doclib.componentName" $gw }}
                port:
                  name: {{ $.port }}
          {{- end }}
{{- end }}
