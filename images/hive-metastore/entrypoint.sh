#!/bin/bash
# logberg-metastore: the Hive Metastore image's entrypoint (under tini).
#
#   logberg-metastore all        create or upgrade the schema, then run the metastore (default)
#   logberg-metastore schema     create or upgrade the schema, then exit (the chart's hook Job)
#   logberg-metastore metastore  run the metastore; the schema must already be current
#   logberg-metastore render     only write the configuration (debugging)
#
# Settings (environment):
#   METASTORE_SITE_TEMPLATE     metastore-site.xml without credentials (a ConfigMap);
#                               default /etc/hive-metastore/metastore-site.xml
#   HIVE_CONF_DIR               where the rendered configuration goes (an emptyDir);
#                               default /tmp/hive-conf
#   METASTORE_DB_TYPE           postgres (default) or derby
#   METASTORE_DB_USER_FILE      file holding the database user (a mounted Secret key)
#   METASTORE_DB_PASSWORD_FILE  file holding the database password (a mounted Secret key)
#   METASTORE_DB_USER, METASTORE_DB_PASSWORD
#                               the same as variables, for `docker run`; read once
#   METASTORE_CREDENTIALS_POLL_SECONDS  how often the *_FILE files are compared with what
#                               the metastore runs with (default 10; 0: never)
#   METASTORE_STOP_TIMEOUT_SECONDS  how long a stop waits for the JVM before killing it
#                               (default 30)
#   METASTORE_PORT              thrift port (default 9083)
#   HADOOP_HEAPSIZE             JVM heap in MiB (default 1024)
#   METASTORE_EXTRA_JAVA_OPTS   extra JVM options, split on white space
#
# Credential rotation: when the files behind METASTORE_DB_*_FILE change (a rotated Secret),
# the new credentials are tried with `schematool -info`; if the database takes them the
# configuration is rendered again and the metastore JVM is restarted in place (graceful
# stop, bounded wait). If it does not yet, the running metastore is kept and the files are
# tried again at the next poll. Nothing here prints a credential.
set -euo pipefail

mode="${1:-all}"
template="${METASTORE_SITE_TEMPLATE:-/etc/hive-metastore/metastore-site.xml}"
conf_dir="${HIVE_CONF_DIR:-/tmp/hive-conf}"
db_type="${METASTORE_DB_TYPE:-postgres}"
port="${METASTORE_PORT:-9083}"
heap="${HADOOP_HEAPSIZE:-1024}"
poll="${METASTORE_CREDENTIALS_POLL_SECONDS:-10}"
stop_timeout="${METASTORE_STOP_TIMEOUT_SECONDS:-30}"
hive_home="${METASTORE_HOME:-/opt/hive}"
java="${JAVA_HOME:-/opt/java}/bin/java"
export METASTORE_HOME="$hive_home" # schematool finds its SQL scripts there

log() { printf '%s logberg-metastore: %s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$*" >&2; }
die() {
  local code=$1
  shift
  log "error: $*"
  exit "$code"
}

# ------------------------------------------------------------------------- the settings
number() { # NAME VALUE: VALUE must be a whole number
  [[ "$2" =~ ^[0-9]+$ ]] || die 2 "$1=$2: expected a whole number"
}
number METASTORE_CREDENTIALS_POLL_SECONDS "$poll"
number METASTORE_STOP_TIMEOUT_SECONDS "$stop_timeout"
number METASTORE_PORT "$port"
number HADOOP_HEAPSIZE "$heap"
case "$mode" in
  all | schema | metastore | render) ;;
  *) die 2 "unknown mode '$mode': expected all, schema, metastore or render" ;;
esac
case "$db_type" in
  postgres | derby) ;;
  *) die 2 "METASTORE_DB_TYPE=$db_type: expected postgres or derby" ;;
esac
if [ ! -r "$template" ]; then
  die 2 "METASTORE_SITE_TEMPLATE=$template: no such readable file"
fi
if ! grep -q 'javax.jdo.option.ConnectionURL' "$template"; then
  die 2 "METASTORE_SITE_TEMPLATE=$template sets no javax.jdo.option.ConnectionURL"
fi

# ---------------------------------------------------------------------- the credentials
db_user=""
db_password=""

# read_setting NAME: the value of NAME_FILE's file, else of NAME, into REPLY. Returns 1,
# with a message that names the setting, when it cannot be read.
read_setting() {
  local name=$1 file_var="${1}_FILE"
  local file="${!file_var:-}"
  REPLY="${!name:-}"
  if [ -z "$file" ]; then
    return 0
  fi
  if [ -n "$REPLY" ]; then
    log "error: both $file_var and $name are set: set only one"
    return 1
  fi
  if [ ! -f "$file" ] || [ ! -r "$file" ]; then
    log "error: $file_var=$file: no such readable file"
    return 1
  fi
  REPLY="$(cat -- "$file")"
  if [ -z "$REPLY" ]; then
    log "error: $file_var=$file is empty"
    return 1
  fi
}

# Where the password comes from, for messages.
password_setting() {
  if [ -n "${METASTORE_DB_PASSWORD_FILE:-}" ]; then
    echo "METASTORE_DB_PASSWORD_FILE=$METASTORE_DB_PASSWORD_FILE"
  else
    echo "METASTORE_DB_PASSWORD"
  fi
}

load_credentials() {
  [ "$db_type" = postgres ] || return 0
  local user password
  read_setting METASTORE_DB_USER || return 1
  user=$REPLY
  read_setting METASTORE_DB_PASSWORD || return 1
  password=$REPLY
  if [ -z "$user" ]; then
    log "error: no database user: set METASTORE_DB_USER_FILE (a mounted Secret) or METASTORE_DB_USER"
    return 1
  fi
  if [ -z "$password" ]; then
    log "error: no database password: set METASTORE_DB_PASSWORD_FILE (a mounted Secret) or METASTORE_DB_PASSWORD"
    return 1
  fi
  db_user=$user
  db_password=$password
}

watched_files() {
  local var
  for var in METASTORE_DB_USER_FILE METASTORE_DB_PASSWORD_FILE; do
    if [ -n "${!var:-}" ]; then
      printf '%s\n' "${!var}"
    fi
  done
}

# A checksum of the watched files' contents (kubelet replaces a Secret's files by swapping
# a symlink; reading through the name sees the new content).
fingerprint() {
  local files
  mapfile -t files < <(watched_files)
  { cat -- "${files[@]}" 2>/dev/null || echo "unreadable"; } | cksum
}

# --------------------------------------------------------------------- the configuration
xml_escape() {
  printf '%s' "$1" | sed -e 's/&/\&amp;/g' -e 's/</\&lt;/g' -e 's/>/\&gt;/g' \
    -e 's/"/\&quot;/g' -e "s/'/\&apos;/g"
}

property() {
  printf '  <property><name>%s</name><value>%s</value></property>\n' "$1" "$(xml_escape "$2")"
}

# render DIR: metastore-site.xml (the template plus the credentials; private to this user)
# and the log4j2 configuration (console, so `kubectl logs` shows the metastore's log).
render() {
  local dir=$1
  (
    umask 077
    mkdir -p "$dir"
    {
      sed '/<\/configuration>/d' "$template"
      if [ "$db_type" = postgres ]; then
        property javax.jdo.option.ConnectionUserName "$db_user"
        property javax.jdo.option.ConnectionPassword "$db_password"
      fi
      printf '</configuration>\n'
    } >"$dir/metastore-site.xml.tmp"
    mv "$dir/metastore-site.xml.tmp" "$dir/metastore-site.xml"
    cat >"$dir/metastore-log4j2.properties" <<'PROPS'
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
  )
}

# ------------------------------------------------------------------------------- the JVM
# java_args CONF_DIR: the JVM options and class path, into JAVA_ARGS. The standalone
# metastore has no hive-exec: the two -Dmetastore options replace defaults that live there.
java_args() {
  local conf=$1 extra=()
  read -r -a extra <<<"${METASTORE_EXTRA_JAVA_OPTS:-}"
  JAVA_ARGS=(
    "-Xmx${heap}m" -XX:+UseG1GC -Djava.net.preferIPv4Stack=true
    -Dmetastore.expression.proxy=org.apache.hadoop.hive.metastore.DefaultPartitionExpressionProxy
    -Dmetastore.task.threads.always=org.apache.hadoop.hive.metastore.events.EventCleanerTask
    "-Dlog4j.configurationFile=$conf/metastore-log4j2.properties"
    "${extra[@]}"
    -cp "$conf:$hive_home/lib-extra/*:$hive_home/lib/*"
  )
}

schematool() { # CONF_DIR ARGS...
  local conf=$1
  shift
  java_args "$conf"
  "$java" "${JAVA_ARGS[@]}" org.apache.hadoop.hive.metastore.tools.MetastoreSchemaTool \
    -dbType "$db_type" "$@"
}

# schema_state CONF_DIR: asks the database with `schematool -info`; sets STATE to current,
# missing or old (then HAVE/WANT hold the versions). Returns 1 with a message naming the
# setting when the database refuses the credentials or cannot be reached.
schema_state() {
  local out rc
  set +e
  out="$(schematool "$1" -info 2>&1)"
  rc=$?
  set -e
  HAVE="$(sed -n 's/^Metastore schema version:[[:space:]]*//p' <<<"$out" | tail -n 1)"
  WANT="$(sed -n 's/^Hive distribution version:[[:space:]]*//p' <<<"$out" | tail -n 1)"
  if [ "$rc" -eq 0 ] && [ -n "$HAVE" ]; then
    if [ "$HAVE" = "$WANT" ]; then STATE=current; else STATE=old; fi
    return 0
  fi
  if grep -qiE 'password authentication failed|authentication failed for user|no password' <<<"$out"; then
    log "error: PostgreSQL refused user '$db_user' ($(password_setting), METASTORE_DB_USER*): password authentication failed"
    return 1
  fi
  if grep -qiE 'Connection.* refused|UnknownHostException|connection attempt failed|timed out' <<<"$out"; then
    log "error: the database in javax.jdo.option.ConnectionURL (METASTORE_SITE_TEMPLATE=$template) does not answer"
    grep -iE 'refused|UnknownHost|attempt failed|timed out' <<<"$out" | head -n 3 >&2 || true
    return 1
  fi
  if grep -qE 'relation "VERSION" does not exist|Table/View .VERSION. does not exist' <<<"$out"; then
    STATE=missing
    return 0
  fi
  log "error: schematool -info failed (exit $rc); its last lines:"
  tail -n 20 <<<"$out" >&2
  return 1
}

# change_schema -initSchema|-upgradeSchema: schematool echoes every SQL statement; that
# goes to a file beside the configuration, and only its end to the log when it fails.
change_schema() {
  local out="$conf_dir/schematool.log"
  if ! schematool "$conf_dir" "$1" >"$out" 2>&1; then
    log "error: schematool $1 failed; the end of $out:"
    tail -n 30 "$out" >&2
    exit 1
  fi
}

# ensure_schema create|require
ensure_schema() {
  log "checking the metastore schema ($db_type)"
  schema_state "$conf_dir" || exit 2
  case "$STATE" in
    current)
      log "schema $HAVE is current: nothing to do"
      ;;
    old)
      [ "$1" = create ] || die 2 "schema $HAVE is older than $WANT: run 'logberg-metastore schema' (the chart's schema Job) first"
      log "upgrading the schema from $HAVE to $WANT"
      change_schema -upgradeSchema
      log "schema upgraded to $WANT"
      ;;
    missing)
      [ "$1" = create ] || die 2 "the database has no metastore schema: run 'logberg-metastore schema' (the chart's schema Job) first"
      log "no schema in the database: initialising"
      change_schema -initSchema
      log "schema initialised"
      ;;
  esac
}

jvm_pid=""
timer_pid=""

start_jvm() {
  java_args "$conf_dir"
  log "starting the metastore on port $port"
  "$java" "${JAVA_ARGS[@]}" org.apache.hadoop.hive.metastore.HiveMetaStore -p "$port" &
  jvm_pid=$!
}

# Graceful stop: SIGTERM, then up to METASTORE_STOP_TIMEOUT_SECONDS, then SIGKILL.
stop_jvm() {
  [ -n "$jvm_pid" ] || return 0
  local timer finished=""
  kill -TERM "$jvm_pid" 2>/dev/null || true
  sleep "$stop_timeout" &
  timer=$!
  wait -n -p finished "$jvm_pid" "$timer" || true
  if [ "$finished" = "$jvm_pid" ]; then
    kill "$timer" 2>/dev/null || true
  else
    log "the metastore did not stop within ${stop_timeout}s (METASTORE_STOP_TIMEOUT_SECONDS): killing it"
    kill -KILL "$jvm_pid" 2>/dev/null || true
  fi
  wait "$jvm_pid" 2>/dev/null || true
  wait "$timer" 2>/dev/null || true
  jvm_pid=""
}

shutdown() {
  log "stopping the metastore ($1)"
  [ -z "$timer_pid" ] || kill "$timer_pid" 2>/dev/null || true
  stop_jvm
  exit 0
}

# The credentials changed: render them beside the live configuration, ask the database,
# and restart the metastore only if it takes them.
rotate() {
  local next="$conf_dir/next"
  if ! load_credentials; then
    return 1
  fi
  render "$next"
  if ! schema_state "$next" || [ "$STATE" != current ]; then
    rm -rf "$next"
    return 1
  fi
  mv "$next/metastore-site.xml" "$conf_dir/metastore-site.xml"
  rm -rf "$next"
  log "the database accepts the new credentials: restarting the metastore"
  stop_jvm
  start_jvm
}

supervise() {
  local seen current finished status
  if [ "$poll" -eq 0 ] || [ -z "$(watched_files)" ]; then
    java_args "$conf_dir"
    log "starting the metastore on port $port"
    exec "$java" "${JAVA_ARGS[@]}" org.apache.hadoop.hive.metastore.HiveMetaStore -p "$port"
  fi
  seen="$(fingerprint)"
  trap 'shutdown SIGTERM' TERM
  trap 'shutdown SIGINT' INT
  start_jvm
  log "watching $(watched_files | paste -sd ' ') every ${poll}s (METASTORE_CREDENTIALS_POLL_SECONDS)"
  while true; do
    sleep "$poll" &
    timer_pid=$!
    finished=""
    set +e
    wait -n -p finished "$jvm_pid" "$timer_pid"
    status=$?
    set -e
    if [ "$finished" = "$jvm_pid" ]; then
      kill "$timer_pid" 2>/dev/null || true
      log "the metastore exited with status $status"
      exit "$status"
    fi
    timer_pid=""
    current="$(fingerprint)"
    if [ "$current" != "$seen" ]; then
      log "the database credentials changed: trying them"
      if rotate; then
        seen="$current"
      else
        log "the new credentials do not work yet: the running metastore keeps its connections; trying again in ${poll}s"
      fi
    fi
  done
}

load_credentials || exit 2
render "$conf_dir"
unset METASTORE_DB_PASSWORD # the JVMs read the password from the rendered file only
case "$mode" in
  render) log "configuration written to $conf_dir" ;;
  schema) ensure_schema create ;;
  metastore)
    ensure_schema require
    supervise
    ;;
  all)
    ensure_schema create
    supervise
    ;;
esac
