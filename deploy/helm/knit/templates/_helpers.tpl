{{- define "knit.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "knit.labels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "knit.serviceAccount" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "knit.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* The pod parts the server and the controller share: the data dir (a
cache: records, state and plans live in PostgreSQL), knit.key put there by
an init container with mode 0600, and the store's DSN from the Secret. */}}
{{- define "knit.podSpec" -}}
serviceAccountName: {{ include "knit.serviceAccount" .root }}
initContainers:
  - name: key
    image: {{ .root.Values.keyInit.image }}
    command: ["sh", "-c", "install -m 600 -o {{ .root.Values.runAsUser }} -g {{ .root.Values.runAsUser }} /secret/knit.key /data/knit.key"]
    securityContext:
      runAsUser: 0
    volumeMounts:
      - {name: data, mountPath: /data}
      - {name: secret, mountPath: /secret, readOnly: true}
volumes:
  - name: data
    emptyDir: {}
  - name: secret
    secret:
      secretName: {{ .root.Values.secret.name }}
      defaultMode: 0400
      items:
        - {key: {{ .root.Values.secret.keyKey | quote }}, path: knit.key}
{{- end -}}

{{- define "knit.env" -}}
- name: KNIT_DATA_DIR
  value: /var/lib/knit
- name: KNIT_STORE_DSN
  valueFrom:
    secretKeyRef:
      name: {{ .Values.secret.name }}
      key: {{ .Values.secret.dsnKey | quote }}
{{- end -}}
