{{/*
One dataflow as a StatefulSet: `memstream dataflow FLOW` in each pod, a Bytewax cluster of
`processes` pods (-i from the pod's index, -a every pod's stable name under the headless
Service), recovery partitions on each pod's own volume. Argument: dict root, flow, v
(the flow's values), processes.
*/}}
{{- define "memstream.dataflow" -}}
{{- $root := .root -}}
{{- $v := .v -}}
{{- $full := include "memstream.fullname" $root -}}
{{- $name := printf "%s-%s" $full .flow -}}
{{- $port := int ($v.clusterPort | default 2101) -}}
{{- $metrics := int ($v.metricsPort | default 9108) -}}
{{- $partitions := int ($v.recoveryPartitions | default (mul .processes $v.workersPerProcess)) -}}
apiVersion: v1
kind: Service
metadata:
  name: {{ $name }}
  labels:
    {{- include "memstream.labels" $root | nindent 4 }}
    app.kubernetes.io/component: {{ .flow }}
spec:
  clusterIP: None
  # the cluster's processes find each other before any is ready (they have no probe)
  publishNotReadyAddresses: true
  selector:
    {{- include "memstream.selector" (list $root .flow) | nindent 4 }}
  ports:
    - name: cluster
      port: {{ $port }}
      targetPort: cluster
      protocol: TCP
    - name: metrics
      port: {{ $metrics }}
      targetPort: metrics
      protocol: TCP
---
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: {{ $name }}
  labels:
    {{- include "memstream.labels" $root | nindent 4 }}
    app.kubernetes.io/component: {{ .flow }}
spec:
  serviceName: {{ $name }}
  replicas: {{ .processes }}
  # a Bytewax cluster needs every process up: start them together, not one by one
  podManagementPolicy: Parallel
  selector:
    matchLabels:
      {{- include "memstream.selector" (list $root .flow) | nindent 6 }}
  template:
    metadata:
      labels:
        {{- include "memstream.labels" $root | nindent 8 }}
        app.kubernetes.io/component: {{ .flow }}
      annotations:
        checksum/settings: {{ include (print $root.Template.BasePath "/configmap.yaml") $root | sha256sum }}
        {{- with $v.podAnnotations }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
    spec:
      serviceAccountName: {{ include "memstream.serviceAccountName" $root }}
      automountServiceAccountToken: false
      terminationGracePeriodSeconds: {{ $v.terminationGracePeriodSeconds }}
      {{- with $root.Values.imagePullSecrets }}
      imagePullSecrets:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      securityContext:
        {{- toYaml $root.Values.podSecurityContext | nindent 8 }}
      containers:
        - name: {{ .flow }}
          image: {{ include "memstream.image" $root }}
          imagePullPolicy: {{ $root.Values.image.pullPolicy }}
          # SIGTERM ends the flow after the batch in flight; a failure exits and the pod
          # restarts, resuming from the last snapshot (deterministic ids make the replay
          # harmless).
          args:
            - dataflow
            - {{ .flow }}
            - --workers-per-process={{ $v.workersPerProcess }}
            - --recovery-directory=/var/lib/memstream/recovery/{{ .flow }}
            - --recovery-partitions={{ $partitions }}
            - --snapshot-interval={{ $v.snapshotIntervalS }}
            - --backup-interval={{ $v.backupIntervalS }}
            - --metrics-port={{ $metrics }}
            - --metrics-host=0.0.0.0  # scraped from the pod network
            {{- if gt (int .processes) 1 }}
            - --process-id=$(POD_INDEX)
            {{- $addrs := list }}
            {{- range $i := until (int .processes) }}
            {{- $addrs = append $addrs (printf "%s-%d.%s.%s.svc:%d" $name $i $name $root.Release.Namespace $port) }}
            {{- end }}
            - --addresses={{ join ";" $addrs }}
            {{- end }}
          ports:
            - name: cluster
              containerPort: {{ $port }}
              protocol: TCP
            - name: metrics
              containerPort: {{ $metrics }}
              protocol: TCP
          envFrom:
            {{- include "memstream.envFrom" $root | nindent 12 }}
          env:
            - name: POD_INDEX  # the StatefulSet ordinal (Kubernetes >= 1.28)
              valueFrom:
                fieldRef:
                  fieldPath: metadata.labels['apps.kubernetes.io/pod-index']
            - name: MEMSTREAM_EMBEDDING_THREADS
              value: {{ $v.embeddingThreads | quote }}
          resources:
            {{- toYaml $v.resources | nindent 12 }}
          securityContext:
            {{- toYaml $root.Values.securityContext | nindent 12 }}
          volumeMounts:
            {{- include "memstream.commonMounts" $root | nindent 12 }}
            - name: recovery
              mountPath: /var/lib/memstream
      volumes:
        {{- include "memstream.commonVolumes" $root | nindent 8 }}
      {{- with include "memstream.scheduling" $v | trim }}
      {{- . | nindent 6 }}
      {{- end }}
  volumeClaimTemplates:
    - metadata:
        name: recovery
        labels:
          {{- include "memstream.selector" (list $root .flow) | nindent 10 }}
      spec:
        accessModes: [ReadWriteOnce]
        {{- with $v.persistence.storageClassName }}
        storageClassName: {{ . }}
        {{- end }}
        resources:
          requests:
            storage: {{ $v.persistence.size }}
{{- end }}
