#!/bin/bash
# logberg's own start-connect-server.sh (the pip pyspark tarball has no sbin/). The Spark
# Operator's SparkConnect controller starts its server pod with
#   bash -c '${SPARK_HOME}/sbin/start-connect-server.sh --master k8s://... --conf k=v ...'
# and SPARK_NO_DAEMONIZE=true: this runs Spark's Connect server in the foreground, as the
# container's process, with those spark-submit options. The rest of its conf comes from
# $SPARK_CONF_DIR/spark-defaults.conf (the chart's ConfigMap), the client token from the
# environment (SPARK_CONNECT_AUTHENTICATE_TOKEN, from a Secret): neither is printed here.
set -euo pipefail

if [ "${SPARK_NO_DAEMONIZE:-}" != "true" ]; then
  echo "start-connect-server.sh: runs only in the foreground; set SPARK_NO_DAEMONIZE=true" >&2
  exit 2
fi
if [ -z "${SPARK_CONNECT_AUTHENTICATE_TOKEN:-}" ]; then
  echo "start-connect-server.sh: SPARK_CONNECT_AUTHENTICATE_TOKEN is not set; the server" \
    "would admit any client (the chart sets it from the Secret connect.auth names)" >&2
  exit 2
fi

exec "${SPARK_HOME:-/opt/spark}/bin/spark-submit" \
  --class org.apache.spark.sql.connect.service.SparkConnectServer \
  --name "${SPARK_CONNECT_APP_NAME:-logberg-connect}" \
  "$@" \
  spark-internal
