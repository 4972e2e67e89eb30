#!/bin/bash
# The dev Kafka broker's entrypoint (under tini): one KRaft node, broker and controller.
# It writes server.properties to $KAFKA_CONF_DIR (/tmp: the root filesystem is read-only),
# formats the storage under $KAFKA_DATA once (a cluster id drawn on the first start and kept
# beside it), then runs the broker in the foreground, logging to stdout.
#
# Settings (environment):
#   KAFKA_ADVERTISED_HOST  the name clients reach this broker by (in the chart: the
#                          Service's DNS name); default: this host's first address
#   KAFKA_PORT             the clients' listener (default 9092)
#   KAFKA_CONTROLLER_PORT  the controller's listener, on localhost only (default 9093)
#   KAFKA_HEAP             the JVM's heap (default 512m)
set -euo pipefail

data="${KAFKA_DATA:-/var/lib/kafka}"
conf_dir="${KAFKA_CONF_DIR:-/tmp/kafka-conf}"
port="${KAFKA_PORT:-9092}"
controller="${KAFKA_CONTROLLER_PORT:-9093}"
host="${KAFKA_ADVERTISED_HOST:-$(hostname -i | cut -d" " -f1)}"
heap="${KAFKA_HEAP:-512m}"
libs=/opt/kafka/libs

check_port() {
  if ! [[ "$2" =~ ^[0-9]+$ ]]; then
    echo "dev-kafka: $1='$2' is not a port number" >&2
    exit 2
  fi
}
check_port KAFKA_PORT "$port"
check_port KAFKA_CONTROLLER_PORT "$controller"
if [ ! -w "$data" ]; then
  echo "dev-kafka: KAFKA_DATA=$data is not a writable folder (the chart mounts a volume there)" >&2
  exit 2
fi

mkdir -p "$conf_dir" "$data/logs"
cat >"$conf_dir/server.properties" <<PROPS
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$controller
listeners=PLAINTEXT://0.0.0.0:$port,CONTROLLER://127.0.0.1:$controller
advertised.listeners=PLAINTEXT://$host:$port
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
log.dirs=$data/logs
num.partitions=1
auto.create.topics.enable=false
message.max.bytes=16777216
replica.fetch.max.bytes=16777216
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
PROPS
cat >"$conf_dir/log4j2.properties" <<'LOG'
status = WARN
appender.console.type = Console
appender.console.name = console
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{ISO8601} %-5p [%t] %c{2}: %m%n
rootLogger.level = INFO
rootLogger.appenderRef.console.ref = console
logger.request.name = kafka.request.logger
logger.request.level = WARN
logger.state.name = state.change.logger
logger.state.level = WARN
LOG

java=("$JAVA_HOME/bin/java" "-Xms$heap" "-Xmx$heap" -XX:+UseG1GC -Djava.net.preferIPv4Stack=true
  "-Dlog4j2.configurationFile=$conf_dir/log4j2.properties" "-Dkafka.logs.dir=$conf_dir"
  -cp "$libs/*")

if [ ! -f "$data/logs/meta.properties" ]; then
  if [ ! -s "$data/cluster.id" ]; then
    # Kafka's form: 16 random bytes, URL-safe base64 without padding; never a leading '-'.
    id=-
    while [ "${id:0:1}" = - ]; do
      id="$(head -c 16 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=')"
    done
    printf '%s\n' "$id" >"$data/cluster.id"
  fi
  echo "dev-kafka: formatting the KRaft storage under $data/logs" >&2
  "${java[@]}" kafka.tools.StorageTool format "--cluster-id=$(cat "$data/cluster.id")" \
    -c "$conf_dir/server.properties"
fi

echo "dev-kafka: broker on :$port, advertised as $host:$port" >&2
exec "${java[@]}" kafka.Kafka "$conf_dir/server.properties"
