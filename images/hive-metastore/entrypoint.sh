#!/bin/sh
# logberg-metastore: render the metastore configuration, create or upgrade the schema with
# schematool (idempotent), then run the Hive Metastore thrift service.
#
#   logberg-metastore schema     render config + create/upgrade the schema, then exit
#   logberg-metastore metastore  render config + run the metastore (schema must exist)
#   logberg-metastore all        both (default; for Derby and single-replica setups)
#   logberg-metastore render     only render the config (debugging, tests)
#
# Environment:
#   METASTORE_SITE_TEMPLATE  site XML without credentials (mounted from a ConfigMap)
#   HIVE_CONF_DIR            where the rendered hive-site.xml goes (an emptyDir)
#   METASTORE_DB_TYPE        postgres | derby (schematool -dbType)
#   METASTORE_DB_USER        database user     (from a Kubernetes Secret)
#   METASTORE_DB_PASSWORD    database password (from a Kubernetes Secret; never printed)
#   METASTORE_PORT           thrift port (default 9083)
#   METASTORE_EXTRA_JAVA_OPTS extra JVM options (e.g. -D system properties)
set -eu

mode="${1:-all}"
template="${METASTORE_SITE_TEMPLATE:-/etc/hive-metastore/metastore-site.xml}"
conf_dir="${HIVE_CONF_DIR:-/tmp/hive-conf}"
db_type="${METASTORE_DB_TYPE:-postgres}"
port="${METASTORE_PORT:-9083}"
hive_home="${HIVE_HOME:-/opt/hive}"

log() { printf '%s logberg-metastore: %s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$*" >&2; }

xml_escape() {
  printf '%s' "$1" | sed -e 's/&/\&amp;/g' -e 's/</\&lt;/g' -e 's/>/\&gt;/g' \
    -e 's/"/\&quot;/g' -e "s/'/\&apos;/g"
}

property() {
  printf '  <property><name>%s</name><value>%s</value></property>\n' "$1" "$(xml_escape "$2")"
}

render_config() {
  if [ ! -r "$template" ]; then
    log "no site template at $template (METASTORE_SITE_TEMPLATE)"
    exit 2
  fi
  case "$db_type" in
    postgres)
      if [ -z "${METASTORE_DB_USER:-}" ] || [ -z "${METASTORE_DB_PASSWORD:-}" ]; then
        log "METASTORE_DB_USER and METASTORE_DB_PASSWORD must come from the database Secret"
        exit 2
      fi ;;
    derby) ;;
    *) log "METASTORE_DB_TYPE=$db_type: expected postgres or derby"; exit 2 ;;
  esac
  # The rendered file holds the password: private to this user, on an emptyDir.
  umask 077
  mkdir -p "$conf_dir"
  {
    sed '/<\/configuration>/d' "$template"
    if [ -n "${METASTORE_DB_USER:-}" ]; then
      property javax.jdo.option.ConnectionUserName "$METASTORE_DB_USER"
    fi
    if [ -n "${METASTORE_DB_PASSWORD:-}" ]; then
      property javax.jdo.option.ConnectionPassword "$METASTORE_DB_PASSWORD"
    fi
    printf '</configuration>\n'
  } > "$conf_dir/hive-site.xml.tmp"
  mv "$conf_dir/hive-site.xml.tmp" "$conf_dir/hive-site.xml"
  # Console logging, so `kubectl logs` has the metastore's log.
  for name in hive-log4j2.properties metastore-log4j2.properties; do
    cat > "$conf_dir/$name" <<'PROPS'
status = WARN
name = logberg-metastore
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{ISO8601} %-5p [%t] %c{2}: %m%n
rootLogger.level = INFO
rootLogger.appenderRef.console.ref = console
logger.dn.name = DataNucleus
logger.dn.level = WARN
logger.dn2.name = org.datanucleus
logger.dn2.level = WARN
PROPS
  done
  umask 022
  # The JVM needs none of the credentials in its environment once the file is written.
  unset METASTORE_DB_PASSWORD
}

schematool() {
  "$hive_home/bin/schematool" -dbType "$db_type" "$@"
}

ensure_schema() {
  log "checking the metastore schema ($db_type)"
  set +e
  info="$(schematool -info 2>&1)"
  rc=$?
  set -e
  printf '%s\n' "$info" | grep -E 'schema version|distribution version|connection URL|connection User' >&2 || true
  have="$(printf '%s\n' "$info" | sed -n 's/^Metastore schema version:[[:space:]]*//p' | tail -n 1)"
  want="$(printf '%s\n' "$info" | sed -n 's/^Hive distribution version:[[:space:]]*//p' | tail -n 1)"
  if [ "$rc" -eq 0 ] && [ -n "$have" ]; then
    if [ "$have" = "$want" ]; then
      log "schema $have is current"
      return 0
    fi
    log "upgrading the schema from $have to $want"
    schematool -upgradeSchema
    return 0
  fi
  # -info fails when the VERSION table is missing (empty database) but also when the
  # database does not answer; -initSchema then fails too (it never drops anything), so a
  # rerun is always safe.
  log "no schema found: initialising"
  if ! schematool -initSchema; then
    log "schematool -initSchema failed; last -info output follows"
    printf '%s\n' "$info" | tail -n 20 >&2
    exit 1
  fi
  log "schema initialised"
}

run_metastore() {
  export HADOOP_CLIENT_OPTS="${HADOOP_CLIENT_OPTS:-} -Djava.net.preferIPv4Stack=true ${METASTORE_EXTRA_JAVA_OPTS:-}"
  log "starting the metastore on port $port"
  exec "$hive_home/bin/hive" --skiphadoopversion --skiphbasecp --service metastore -p "$port"
}

case "$mode" in
  schema) render_config; ensure_schema ;;
  metastore) render_config; run_metastore ;;
  all) render_config; ensure_schema; run_metastore ;;
  render) render_config ;;
  *) log "usage: logberg-metastore [schema|metastore|all|render]"; exit 2 ;;
esac
