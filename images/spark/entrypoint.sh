#!/bin/bash
# The Spark image's entrypoint (under tini). Spark's Kubernetes backend starts its pods with
# one of two first arguments; anything else is a plain command:
#
#   driver ARGS...   the driver of a cluster-mode application: spark-submit in client mode
#                    with ARGS (--properties-file, --class, the application and its args)
#   executor         an executor; everything it needs comes in SPARK_* variables
#   COMMAND ARGS...  exec'd as is, e.g. `logberg ingest ...` or `spark-sql`
#
# It writes nothing and prints no variable values (the environment may carry credentials).
set -euo pipefail

spark_home="${SPARK_HOME:-/opt/spark}"

need() {
  if [ -z "${!1:-}" ]; then
    echo "entrypoint: $1 is not set; Spark's Kubernetes backend sets it for the $2 pod" >&2
    exit 2
  fi
}

# The class path of a JVM started here: extra entries Spark passes, the mounted Spark and
# Hadoop configuration, then Spark's jars.
class_path() {
  local cp="${SPARK_CLASSPATH:-}"
  local dir
  for dir in "${SPARK_CONF_DIR:-$spark_home/conf}" "${HADOOP_CONF_DIR:-}"; do
    if [ -n "$dir" ] && [ -d "$dir" ]; then
      cp="${cp:+$cp:}$dir"
    fi
  done
  printf '%s' "${cp:+$cp:}$spark_home/jars/*"
}

case "${1:-}" in
  driver)
    shift
    need SPARK_DRIVER_BIND_ADDRESS driver
    exec "$spark_home/bin/spark-submit" \
      --deploy-mode client \
      --conf "spark.driver.bindAddress=$SPARK_DRIVER_BIND_ADDRESS" \
      --conf "spark.executorEnv.SPARK_DRIVER_POD_IP=$SPARK_DRIVER_BIND_ADDRESS" \
      "$@"
    ;;
  executor)
    shift
    for name in SPARK_DRIVER_URL SPARK_EXECUTOR_ID SPARK_EXECUTOR_CORES SPARK_EXECUTOR_MEMORY \
      SPARK_APPLICATION_ID SPARK_EXECUTOR_POD_IP; do
      need "$name" executor
    done
    # Executor JVM options arrive as SPARK_JAVA_OPT_0, SPARK_JAVA_OPT_1, ... in that order.
    java_opts=()
    while IFS= read -r name; do
      java_opts+=("${!name}")
    done < <(compgen -e | grep -E '^SPARK_JAVA_OPT_[0-9]+$' | sort -t_ -k4 -n || true)
    if [ -n "${SPARK_EXECUTOR_LIBRARY_PATH:-}" ]; then
      export LD_LIBRARY_PATH="$SPARK_EXECUTOR_LIBRARY_PATH${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    fi
    exec "${JAVA_HOME:-/opt/java}/bin/java" \
      "-Xms$SPARK_EXECUTOR_MEMORY" "-Xmx$SPARK_EXECUTOR_MEMORY" \
      "${java_opts[@]}" \
      -cp "$(class_path)" \
      org.apache.spark.scheduler.cluster.k8s.KubernetesExecutorBackend \
      --driver-url "$SPARK_DRIVER_URL" \
      --executor-id "$SPARK_EXECUTOR_ID" \
      --cores "$SPARK_EXECUTOR_CORES" \
      --app-id "$SPARK_APPLICATION_ID" \
      --hostname "$SPARK_EXECUTOR_POD_IP" \
      --resourceProfileId "${SPARK_RESOURCE_PROFILE_ID:-0}" \
      --podName "${SPARK_EXECUTOR_POD_NAME:-$(hostname)}"
    ;;
  "")
    echo "usage: driver ARGS... | executor | COMMAND ARGS..." >&2
    exit 2
    ;;
  *)
    exec "$@"
    ;;
esac
