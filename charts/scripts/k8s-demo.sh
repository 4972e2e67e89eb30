#!/usr/bin/env bash
# The demo on a deployed cluster (`make k8s-demo`): wait for the chart's generator Job, then
# `kubectl apply` the ingest and analytics examples one after the other (each deleted first,
# so it runs anew) and wait for each, then the top tables through spark-sql (sql-k8s.sh).
# SOURCE kafka: the generator Job example produces to the dev broker's topic (once: a Job
# that completed is left alone), the stream example reads it and refreshes the analytics
# after each micro-batch, and the demo waits until the stream has caught up; the stream
# goes on after the demo (`kubectl delete -f charts/logberg/examples/kafka/streaming.yaml`).
#
#   KC="<kubectl with context and namespace>" K8S="<logberg k8s with its options>" \
#     k8s-demo.sh WAIT_SECONDS [files|kafka]
#
# KC and K8S are charts/k8s.mk's $(KC) and $(K8S) command lines ([VAR=value ...] command args).
set -euo pipefail

: "${KC:?set KC to the kubectl command line (\$(KC) of charts/k8s.mk)}"
: "${K8S:?set K8S to the logberg k8s command line (\$(K8S) of charts/k8s.mk)}"
timeout=${1:?usage: k8s-demo.sh WAIT_SECONDS [files|kafka]}
source=${2:-files}
[[ $timeout =~ ^[0-9]+$ ]] || { echo "error: WAIT_SECONDS must be a number of seconds, got '$timeout'" >&2; exit 2; }
[[ $source == files || $source == kafka ]] || { echo "error: K8S_DEMO_SOURCE must be files or kafka, got '$source'" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
examples=charts/logberg/examples
read -r -a kc <<<"$KC"
read -r -a k8s <<<"$K8S"

# Where the dev S3 server (logberg-dev) keeps its objects in an emptyDir
# (s3.persistence.enabled=false), a restarted server has lost the generator's files while the
# cluster still holds its completed Job: so a Job that completed before that server last
# started is run again (none on EKS: no pods).
generator=app.kubernetes.io/instance=logberg,app.kubernetes.io/component=generator
dev_s3=app.kubernetes.io/instance=logberg-dev,app.kubernetes.io/component=s3
if [[ $source == kafka ]]; then
  # The broker keeps its log (kind: a PVC), so the generator's Job runs once: running it
  # again would add its lines to the topic a second time.
  echo "\$ kubectl apply -f $examples/kafka/generate.yaml"
  "${kc[@]}" apply -f "$examples/kafka/generate.yaml"
  env "${k8s[@]}" wait job logberg-generate-kafka-example --timeout="$timeout"
  echo "\$ kubectl apply -f $examples/kafka/streaming.yaml"
  "${kc[@]}" apply -f "$examples/kafka/streaming.yaml"
  env "${k8s[@]}" wait stream logberg-streaming-kafka-example --timeout="$timeout"
  echo "\$ make sql-k8s < $examples/top.sql"
  "$here/sql-k8s.sh" <"$examples/top.sql"
  echo "the stream goes on: kubectl delete -f $examples/kafka/streaming.yaml stops it"
  exit 0
fi
echo "${K8S} wait job --selector=$generator --rerun-before-pods=$dev_s3 --timeout=$timeout"
env "${k8s[@]}" wait job --selector="$generator" --rerun-before-pods="$dev_s3" --timeout="$timeout"
for app in ingest analytics; do
  echo "\$ kubectl apply -f $examples/$app.yaml"
  "${kc[@]}" delete -f "$examples/$app.yaml" --ignore-not-found --cascade=foreground --wait >/dev/null
  "${kc[@]}" apply -f "$examples/$app.yaml"
  env "${k8s[@]}" wait app "logberg-$app-example" --timeout="$timeout"
done
echo "\$ make sql-k8s < $examples/top.sql"
"$here/sql-k8s.sh" <"$examples/top.sql"
