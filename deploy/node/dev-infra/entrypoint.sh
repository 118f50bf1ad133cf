#!/bin/sh
# One of the dev infrastructure's servers in the foreground, as pid 1 of its container: postgres, redis
# or kafka. Data goes to /data (a volume). Throwaway credentials: gateway / gateway-dev.
set -eu

as() {
  user=$1
  shift
  exec setpriv --reuid="$user" --regid="$user" --init-groups "$@"
}

case "${1:-}" in
  postgres)
    bin=/usr/lib/postgresql/15/bin
    data=/data/postgres
    mkdir -p "$data" /var/run/postgresql
    chown postgres:postgres "$data" /var/run/postgresql
    if [ ! -s "$data/PG_VERSION" ]; then
      setpriv --reuid=postgres --regid=postgres --init-groups "$bin/initdb" -D "$data" -U postgres --auth=trust >/dev/null
      echo "host all all 0.0.0.0/0 scram-sha-256" >>"$data/pg_hba.conf"
      setpriv --reuid=postgres --regid=postgres --init-groups "$bin/pg_ctl" -D "$data" -w \
        -o "-p 5432 -c listen_addresses=''" start >/dev/null
      setpriv --reuid=postgres --regid=postgres --init-groups "$bin/psql" -h /var/run/postgresql -p 5432 -U postgres \
        -q -c "CREATE ROLE gateway LOGIN PASSWORD 'gateway-dev'" -c "CREATE DATABASE gateway OWNER gateway"
      setpriv --reuid=postgres --regid=postgres --init-groups "$bin/pg_ctl" -D "$data" -w stop >/dev/null
    fi
    as postgres "$bin/postgres" -D "$data" -p 5432 -c listen_addresses='*'
    ;;
  redis)
    as redis redis-server --bind 0.0.0.0 --protected-mode no --port 6379 --save '' --appendonly no
    ;;
  kafka)
    # KRaft, broker and controller in one process; advertised by its Service's name.
    mkdir -p /data/kafka
    cat >/tmp/server.properties <<PROPERTIES
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:9093
listeners=PLAINTEXT://0.0.0.0:9092,CONTROLLER://127.0.0.1:9093
advertised.listeners=PLAINTEXT://${KAFKA_ADVERTISED_HOST}:9092
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT
log.dirs=/data/kafka
num.partitions=1
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
group.initial.rebalance.delay.ms=0
PROPERTIES
    java -cp '/opt/kafka/lib/*' kafka.tools.StorageTool format -t "${KAFKA_CLUSTER_ID}" \
      -c /tmp/server.properties --ignore-formatted >/dev/null
    printf '%s\n' 'log4j.rootLogger=WARN, stdout' 'log4j.appender.stdout=org.apache.log4j.ConsoleAppender' \
      'log4j.appender.stdout.layout=org.apache.log4j.PatternLayout' \
      'log4j.appender.stdout.layout.ConversionPattern=[%d] %p %m (%c)%n' >/tmp/log4j.properties
    exec java -Xms128m -Xmx384m -Dlog4j.configuration=file:/tmp/log4j.properties -cp '/opt/kafka/lib/*' \
      kafka.Kafka /tmp/server.properties
    ;;
  *)
    echo "usage: entrypoint.sh postgres|redis|kafka" >&2
    exit 2
    ;;
esac
