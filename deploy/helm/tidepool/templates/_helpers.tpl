{{/* Names, labels and the AutoscalerConfig shared by the templates. */}}

{{- define "tidepool.name" -}}
{{- .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The release's full name: the release name, or release-chart when they differ. */}}
{{- define "tidepool.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "tidepool.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "tidepool.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "tidepool.selectorLabels" -}}
app.kubernetes.io/name: {{ include "tidepool.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "tidepool.labels" -}}
{{ include "tidepool.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/component: autoscaler
app.kubernetes.io/part-of: tidepool
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{/* The port of the --listen address (":8085" -> 8085). */}}
{{- define "tidepool.listenPort" -}}
{{- $port := .Values.listen | toString | splitList ":" | last -}}
{{- if not (regexMatch "^[0-9]+$" $port) -}}
{{- fail (printf "listen %q: expected [host]:port, such as :8085" .Values.listen) -}}
{{- end -}}
{{- $port -}}
{{- end -}}

{{/* Where the service principal secret is mounted, and the file tidepool reads it from. */}}
{{- define "tidepool.azureSecretDir" -}}/var/run/secrets/tidepool/azure{{- end -}}

{{- define "tidepool.azureSecretName" -}}
{{- if .Values.azure.clientSecret.existingSecret -}}
{{- .Values.azure.clientSecret.existingSecret -}}
{{- else -}}
{{- printf "%s-azure" (include "tidepool.fullname" .) -}}
{{- end -}}
{{- end -}}

{{/*
The AutoscalerConfig file: apiVersion and kind, `provider` from .Values.provider (its auth
section replaced when azure.workloadIdentity or azure.clientSecret is enabled), then
.Values.config. Keys come out sorted; the loader does not care about order.
*/}}
{{- define "tidepool.config" -}}
{{- $provider := deepCopy .Values.provider -}}
{{- $wi := .Values.azure.workloadIdentity -}}
{{- $sp := .Values.azure.clientSecret -}}
{{- if and $wi.enabled $sp.enabled -}}
{{- fail "azure.workloadIdentity and azure.clientSecret are mutually exclusive" -}}
{{- end -}}
{{- if and (eq (toString $provider.type) "kwok") (or $wi.enabled $sp.enabled) -}}
{{- fail "azure credentials are set but provider.type is kwok" -}}
{{- end -}}
{{- if $wi.enabled -}}
{{- $_ := set $provider "auth" (dict "type" "workloadIdentity") -}}
{{- else if $sp.enabled -}}
{{- $file := printf "%s/%s" (include "tidepool.azureSecretDir" .) $sp.key -}}
{{- $_ := set $provider "auth" (dict "type" "clientSecret" "tenantId" (required "azure.clientSecret.tenantId is required" $sp.tenantId) "clientId" (required "azure.clientSecret.clientId is required" $sp.clientId) "clientSecretFile" $file) -}}
{{- end -}}
{{- $config := deepCopy .Values.config -}}
{{- $_ := set $config "apiVersion" "tidepool.dev/v1alpha1" -}}
{{- $_ := set $config "kind" "AutoscalerConfig" -}}
{{- $_ := set $config "provider" $provider -}}
{{- toYaml $config -}}
{{- end -}}
