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

# The class archive the image build dumped (images/spark/cds_warmup.py): Spark's, Iceberg's
# and Hadoop's classes, parsed and verified once, mapped by each JVM instead of loaded
# (5-10 s of CPU less per start). JDK 17 maps it only when the class path starts as it did
# at the dump, with an empty folder ($cds_conf) and then Spark's jars: a folder on that
# part of the path must be empty. So a JVM gets the archive when Spark's conf folder holds
# nothing its class path needs: nothing, or only the spark.properties Kubernetes mounts
# (spark-submit reads it by --properties-file). That folder then goes after the jars.
# With anything else there (log4j2.properties, spark-defaults.conf...) the JVM starts as
# Spark's scripts start it, conf folder first, without the archive.
# shellcheck source=images/spark/cds.env
. /opt/logberg/cds.env
cds_options="-XX:SharedArchiveFile=$cds_archive $cds_quiet"

conf_dir="${SPARK_CONF_DIR:-$spark_home/conf}"

# True when the conf folder holds nothing but spark.properties (a ConfigMap volume also
# holds its ..data link and ..<timestamp> folder) and the image has its archive.
archive_fits_here() {
  local entry
  [ -f "$cds_archive" ] || return 1
  [ -d "$conf_dir" ] || return 0
  for entry in "$conf_dir"/* "$conf_dir"/.[!.]*; do
    [ -e "$entry" ] || [ -L "$entry" ] || continue
    [ "$(basename "$entry")" = spark.properties ] || return 1
  done
  return 0
}
# Looked at once; the conf folder does not change while this script runs.
if archive_fits_here; then archive_fits=yes; else archive_fits=no; fi

# Run spark-submit (and so PySpark's JVM) on the archive: the empty folder stands in for
# the conf folder, which follows the jars (SPARK_DIST_CLASSPATH comes after them).
use_archive_for_spark_submit() {
  if [ "$archive_fits" = yes ]; then
    if [ -d "$conf_dir" ]; then
      export SPARK_DIST_CLASSPATH="$conf_dir${SPARK_DIST_CLASSPATH:+:$SPARK_DIST_CLASSPATH}"
    fi
    export SPARK_CONF_DIR="$cds_conf"
    export SPARK_SUBMIT_OPTS="$cds_options${SPARK_SUBMIT_OPTS:+ $SPARK_SUBMIT_OPTS}"
    return 0
  fi
  return 1
}

# One line in a driver's or executor's log: whether its JVM got the archive (names only).
say_archive() {
  if [ "$1" = yes ]; then
    echo "entrypoint: the JVM maps the image's class archive ($cds_archive)" >&2
  else
    echo "entrypoint: the JVM starts without the image's class archive (none in the image," \
      "or $conf_dir holds more than spark.properties)" >&2
  fi
}

# The class path of an executor, in the order Spark's launcher gives a driver: extra entries
# Spark passes, the mounted Spark conf (after the jars when the archive fits: see above),
# Spark's jars, the Hadoop conf.
class_path() {
  local cp="${SPARK_CLASSPATH:-}"
  local dirs=("$conf_dir" "${HADOOP_CONF_DIR:-}")
  local dir
  if [ "$archive_fits" = yes ]; then
    # As Spark's launcher writes it: the folder with a trailing /, slf4j's API jar first.
    local slf4j
    slf4j="$(printf '%s:' "$spark_home"/jars/slf4j-api-*.jar)"
    cp="${cp:+$cp:}$cds_conf/:$slf4j$spark_home/jars/*"
  else
    cp="${cp:+$cp:}${dirs[0]}:$spark_home/jars/*"
    dirs=("${HADOOP_CONF_DIR:-}")
  fi
  for dir in "${dirs[@]}"; do
    if [ -n "$dir" ] && [ -d "$dir" ]; then
      cp="$cp:$dir"
    fi
  done
  printf '%s' "$cp"
}

case "${1:-}" in
  driver)
    shift
    need SPARK_DRIVER_BIND_ADDRESS driver
    if use_archive_for_spark_submit; then say_archive yes; else say_archive no; fi
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
    archive=()
    if [ "$archive_fits" = yes ]; then
      read -r -a archive <<<"$cds_options"
    fi
    say_archive "$archive_fits"
    exec "${JAVA_HOME:-/opt/java}/bin/java" \
      "${archive[@]}" \
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
    use_archive_for_spark_submit || true
    exec "$@"
    ;;
esac
