#!/usr/bin/env bash
# PostgreSQL, Redis and a single-node Kafka (KRaft) on loopback for `make up` and the tests.
#
#   deploy/local/infra.sh up       start what is not running, then write $GW_STATE_DIR/infra.env
#   deploy/local/infra.sh down     stop what this state directory started, nothing else
#   deploy/local/infra.sh status   one line per component; exit code 3 when one is not running
#   deploy/local/infra.sh tools    install what the tests use besides the servers (openssl, chromium); start nothing
#
# A server already listening on a component's port is reused and never stopped. What this script
# starts itself is recorded in $GW_STATE_DIR/run/<component>.pid; `down` stops only those.
#
# Environment (defaults):
#   GW_STATE_DIR      <repo>/.local               data, logs, pid files, infra.env
#   GW_PG_PORT        5432
#   GW_REDIS_PORT     6379
#   GW_KAFKA_PORT     9092                        clients: TLS + SCRAM-SHA-512; the KRaft controller listens on
#                                                 the next port, the broker's own plaintext listener on the one after
#   GW_CACHE_DIR      $HOME/.cache/inference-gateway   Kafka's jars from Maven Central; the local Kafka CA and
#                                                 SCRAM password, shared by every state directory of the machine
#   GW_PG_DATABASES   gateway                     space-separated; the first is DATABASE_URL's
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
readonly REPO_ROOT
readonly PG_PORT="${GW_PG_PORT:-5432}"
readonly REDIS_PORT="${GW_REDIS_PORT:-6379}"
readonly KAFKA_PORT="${GW_KAFKA_PORT:-9092}"
readonly CACHE_DIR="${GW_CACHE_DIR:-$HOME/.cache/inference-gateway}"
read -r -a PG_DATABASES <<<"${GW_PG_DATABASES:-gateway}"
readonly PG_DATABASES

readonly PG_BIN=/usr/lib/postgresql/15/bin
readonly PG_ROLE=gateway
readonly PG_PASSWORD=gateway
readonly KAFKA_VERSION=3.9.1
readonly KAFKA_POM="$REPO_ROOT/deploy/local/kafka/pom.xml"
readonly KAFKA_HOME="$CACHE_DIR/kafka-$KAFKA_VERSION"
readonly KAFKA_LIB="$KAFKA_HOME/lib"
readonly ENSURE_TOPICS_CLI="$REPO_ROOT/packages/kafka/dist/ensure-topics-cli.js"
# The clients' listener: TLS with a local CA, SCRAM-SHA-512 as one user. In the cache directory, not the state
# directory, so that a broker started for one state directory can be reused by another (the tests reuse `make up`'s).
readonly KAFKA_SECURITY_DIR="$CACHE_DIR/kafka-local-security"
readonly KAFKA_SCRAM_USER=gateway

# Upper bounds of every wait, in seconds.
readonly LOCK_WAIT=900
readonly START_WAIT=60
readonly KAFKA_START_WAIT=120
readonly STOP_WAIT=60

log() { printf 'infra: %s\n' "$*" >&2; }
die() {
  log "error: $*"
  exit 1
}

usage() {
  sed -n '2,20p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

[[ $# -eq 1 ]] || usage
readonly COMMAND="$1"
case "$COMMAND" in up | down | status | tools) ;; *) usage ;; esac

for port in "$PG_PORT" "$REDIS_PORT" "$KAFKA_PORT"; do
  if [[ ! $port =~ ^[1-9][0-9]{0,4}$ ]] || ((port > 65535)); then die "invalid port: $port"; fi
done
((KAFKA_PORT < 65534)) || die "GW_KAFKA_PORT must leave room for the controller and the broker's own listener"
readonly KAFKA_CONTROLLER_PORT="$((KAFKA_PORT + 1))"
readonly KAFKA_INTERNAL_PORT="$((KAFKA_PORT + 2))"
for database in "${PG_DATABASES[@]}"; do
  [[ $database =~ ^[a-z_][a-z0-9_]*$ ]] || die "invalid database name in GW_PG_DATABASES: $database"
done
((${#PG_DATABASES[@]} > 0)) || die "GW_PG_DATABASES names no database"

# Absolute, so that process working directories can be compared with it.
mkdir -p "${GW_STATE_DIR:-$REPO_ROOT/.local}"
STATE_DIR="$(cd "${GW_STATE_DIR:-$REPO_ROOT/.local}" && pwd)"
readonly STATE_DIR
readonly RUN_DIR="$STATE_DIR/run"
readonly LOG_DIR="$STATE_DIR/logs"
readonly PG_DIR="$STATE_DIR/postgres"
readonly PG_DATA="$PG_DIR/data"
readonly PG_SOCKET_DIR="$PG_DIR/socket"
readonly REDIS_DIR="$STATE_DIR/redis"
readonly KAFKA_DIR="$STATE_DIR/kafka"
mkdir -p "$RUN_DIR" "$LOG_DIR"

# ---------------------------------------------------------------------------------------------
# Helpers

# Runs "$@" every half second until it succeeds or the given number of seconds has passed.
wait_until() {
  local deadline=$((SECONDS + $1))
  shift
  until "$@"; do
    ((SECONDS < deadline)) || return 1
    sleep 0.5
  done
}

port_open() {
  timeout 2 bash -c "exec 3<>/dev/tcp/127.0.0.1/$1" 2>/dev/null
}

port_closed() { ! port_open "$1"; }

# The directory a component's processes run in: each of ours is started with its working directory
# there (postgres: its data directory), which is how a pid is recognised as ours and how `down`
# checks that no process is left.
component_dir() {
  case "$1" in
    postgres) echo "$PG_DATA" ;;
    redis) echo "$REDIS_DIR" ;;
    kafka) echo "$KAFKA_DIR" ;;
  esac
}

# Prints the pid recorded for a component when that process is alive and is ours.
owned_pid() {
  local pid_file="$RUN_DIR/$1.pid" pid
  [[ -r $pid_file ]] || return 1
  pid="$(head -n 1 "$pid_file")"
  [[ $pid =~ ^[0-9]+$ ]] || return 1
  [[ "$(readlink "/proc/$pid/cwd" 2>/dev/null)" == "$(component_dir "$1")" ]] || return 1
  echo "$pid"
}

# Pids of every process whose working directory is the given directory.
processes_in() {
  local cwd pid
  for cwd in /proc/[0-9]*/cwd; do
    [[ "$(readlink "$cwd" 2>/dev/null)" == "$1" ]] || continue
    pid="${cwd#/proc/}"
    echo "${pid%/cwd}"
  done
}

no_process_in() { [[ -z "$(processes_in "$1")" ]]; }

process_gone() { [[ ! -e /proc/$1 ]]; }

APT_UPDATED=
ADDED_POLICY_RC_D=
cleanup() {
  # Undo the service-start block installed for apt-get, if this run installed it.
  if [[ -n $ADDED_POLICY_RC_D ]]; then rm -f /usr/sbin/policy-rc.d; fi
}
trap cleanup EXIT

apt_install() {
  ((EUID == 0)) || die "$* must be installed (apt-get install $*), and installing needs root"
  # Debian's maintainer scripts would start the packaged service (and take our port); the standard
  # policy-rc.d answer 101 tells them not to.
  if [[ ! -e /usr/sbin/policy-rc.d ]]; then
    printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
    chmod 755 /usr/sbin/policy-rc.d
    ADDED_POLICY_RC_D=1
  fi
  if [[ -z $APT_UPDATED ]]; then
    log "apt-get update"
    DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2 || die "apt-get update failed"
    APT_UPDATED=1
  fi
  log "apt-get install $*"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >&2 ||
    die "apt-get install $* failed"
  cleanup
  ADDED_POLICY_RC_D=
}

# Stops a process of ours: the given stop command first, SIGKILL if it outlives the bound, then
# waits until no process is left in the component's directory.
stop_component() {
  local name="$1" pid="$2" dir
  shift 2
  dir="$(component_dir "$name")"
  log "$name: stopping pid $pid"
  "$@" >/dev/null || true
  if ! wait_until "$STOP_WAIT" process_gone "$pid"; then
    log "$name: pid $pid did not stop within ${STOP_WAIT}s; killing it"
    kill -KILL "$pid" 2>/dev/null || true
  fi
  if ! wait_until "$STOP_WAIT" no_process_in "$dir"; then
    die "$name: processes still running in $dir: $(processes_in "$dir" | tr '\n' ' ')"
  fi
  rm -f "$RUN_DIR/$name.pid"
  log "$name: stopped"
}

# ---------------------------------------------------------------------------------------------
# PostgreSQL

as_postgres() {
  # From a directory the postgres user may enter, so its tools do not warn about ours.
  (cd "$PG_DIR" 2>/dev/null || cd /; runuser -u postgres -- "$@")
}

postgres_ready() {
  if command -v pg_isready >/dev/null; then
    pg_isready -q -h 127.0.0.1 -p "$PG_PORT" -t 2
  else
    port_open "$PG_PORT"
  fi
}

start_postgres() {
  [[ -x $PG_BIN/postgres ]] || apt_install postgresql-15
  mkdir -p "$PG_DIR" "$PG_SOCKET_DIR"
  chown postgres:postgres "$PG_DIR" "$PG_SOCKET_DIR"
  as_postgres test -w "$PG_DIR" ||
    die "the postgres user cannot write $PG_DIR (is a parent directory closed to other users?); set GW_STATE_DIR elsewhere"
  if [[ ! -s $PG_DATA/PG_VERSION ]]; then
    log "postgres: initdb $PG_DATA"
    as_postgres "$PG_BIN/initdb" -D "$PG_DATA" --username=postgres --encoding=UTF8 --locale=C.UTF-8 \
      --auth-local=peer --auth-host=scram-sha-256 >>"$LOG_DIR/postgres-initdb.log" 2>&1 ||
      die "initdb failed; see $LOG_DIR/postgres-initdb.log"
  fi
  touch "$LOG_DIR/postgres.log"
  chown postgres:postgres "$LOG_DIR/postgres.log"
  log "postgres: starting on 127.0.0.1:$PG_PORT"
  as_postgres "$PG_BIN/pg_ctl" start -D "$PG_DATA" -w -t "$START_WAIT" -l "$LOG_DIR/postgres.log" \
    -o "-c listen_addresses=127.0.0.1 -p $PG_PORT -k '$PG_SOCKET_DIR' -c max_connections=200" >/dev/null 9>&- ||
    die "postgres did not start within ${START_WAIT}s; see $LOG_DIR/postgres.log"
  head -n 1 "$PG_DATA/postmaster.pid" >"$RUN_DIR/postgres.pid"
}

# Creates the gateway role and databases as the postgres superuser, connected through the first
# socket directory (or loopback) where that works. Safe to run again.
postgres_provision_as_superuser() {
  local host database
  for host in "$PG_SOCKET_DIR" /var/run/postgresql 127.0.0.1; do
    [[ $host == 127.0.0.1 || -S $host/.s.PGSQL.$PG_PORT ]] || continue
    if as_postgres env PGCONNECT_TIMEOUT=5 psql -X -w -q -h "$host" -p "$PG_PORT" -d postgres -tAc 'SELECT 1' \
      >/dev/null 2>&1; then
      {
        printf "SELECT 'CREATE ROLE %s' WHERE NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '%s')\\\\gexec\n" \
          "$PG_ROLE" "$PG_ROLE"
        printf "ALTER ROLE %s WITH LOGIN CREATEDB PASSWORD '%s';\n" "$PG_ROLE" "$PG_PASSWORD"
        for database in "${PG_DATABASES[@]}"; do
          printf "SELECT 'CREATE DATABASE %s OWNER %s' WHERE NOT EXISTS (SELECT FROM pg_database WHERE datname = '%s')\\\\gexec\n" \
            "$database" "$PG_ROLE" "$database"
        done
      } | as_postgres psql -X -w -q -v ON_ERROR_STOP=1 -h "$host" -p "$PG_PORT" -d postgres >/dev/null ||
        die "postgres: could not create the role $PG_ROLE or the databases ${PG_DATABASES[*]}"
      return 0
    fi
  done
  return 1
}

# Fallback for a reused server whose superuser we cannot reach: the gateway role may already exist.
postgres_provision_as_gateway() {
  local database gateway_psql=(env PGPASSWORD="$PG_PASSWORD" PGCONNECT_TIMEOUT=5 psql -X -w -q -h 127.0.0.1 -p "$PG_PORT"
    -U "$PG_ROLE")
  "${gateway_psql[@]}" -d postgres -tAc 'SELECT 1' >/dev/null 2>&1 || return 1
  for database in "${PG_DATABASES[@]}"; do
    if [[ -z "$("${gateway_psql[@]}" -d postgres -tAc "SELECT 1 FROM pg_database WHERE datname = '$database'")" ]]; then
      "${gateway_psql[@]}" -d postgres -c "CREATE DATABASE $database" >/dev/null ||
        die "postgres: the $PG_ROLE role could not create the database $database"
    fi
  done
}

postgres_up() {
  local pid
  if pid="$(owned_pid postgres)"; then
    wait_until "$START_WAIT" postgres_ready ||
      die "postgres: ours (pid $pid) does not answer on 127.0.0.1:$PG_PORT; run \`$0 down\` and retry"
    log "postgres: running (ours, pid $pid)"
  elif port_open "$PG_PORT"; then
    rm -f "$RUN_DIR/postgres.pid"
    log "postgres: reusing the server already on 127.0.0.1:$PG_PORT"
  else
    start_postgres
  fi
  command -v psql >/dev/null || apt_install postgresql-client-15
  postgres_provision_as_superuser || postgres_provision_as_gateway ||
    die "postgres: on 127.0.0.1:$PG_PORT neither the postgres superuser (peer, via /var/run/postgresql) nor the role $PG_ROLE/$PG_PASSWORD can connect"
}

postgres_down() {
  local pid
  if pid="$(owned_pid postgres)"; then
    stop_component postgres "$pid" as_postgres "$PG_BIN/pg_ctl" stop -D "$PG_DATA" -m fast -w -t "$STOP_WAIT"
  else
    rm -f "$RUN_DIR/postgres.pid"
    log "postgres: nothing of ours to stop"
  fi
}

# ---------------------------------------------------------------------------------------------
# Redis

redis_answers() {
  local reply
  reply="$(timeout 2 bash -c "exec 3<>/dev/tcp/127.0.0.1/$REDIS_PORT && printf 'PING\r\n' >&3 && head -c 5 <&3" 2>/dev/null)" &&
    [[ $reply == "+PONG" ]]
}

redis_up() {
  local pid
  if pid="$(owned_pid redis)"; then
    wait_until "$START_WAIT" redis_answers ||
      die "redis: ours (pid $pid) does not answer on 127.0.0.1:$REDIS_PORT; run \`$0 down\` and retry"
    log "redis: running (ours, pid $pid)"
  elif port_open "$REDIS_PORT"; then
    rm -f "$RUN_DIR/redis.pid"
    log "redis: reusing the server already on 127.0.0.1:$REDIS_PORT"
  else
    command -v redis-server >/dev/null || apt_install redis-server
    mkdir -p "$REDIS_DIR"
    log "redis: starting on 127.0.0.1:$REDIS_PORT"
    rm -f "$RUN_DIR/redis.pid"
    (cd "$REDIS_DIR" && redis-server --bind 127.0.0.1 --port "$REDIS_PORT" --dir "$REDIS_DIR" --daemonize yes \
      --pidfile "$RUN_DIR/redis.pid" --logfile "$LOG_DIR/redis.log" --appendonly no 9>&-) ||
      die "redis-server failed to start; see $LOG_DIR/redis.log"
    if ! wait_until "$START_WAIT" redis_answers || ! wait_until "$START_WAIT" owned_pid redis >/dev/null; then
      die "redis did not answer on 127.0.0.1:$REDIS_PORT within ${START_WAIT}s; see $LOG_DIR/redis.log"
    fi
  fi
}

redis_down() {
  local pid
  if pid="$(owned_pid redis)"; then
    stop_component redis "$pid" kill -TERM "$pid"
  else
    rm -f "$RUN_DIR/redis.pid"
    log "redis: nothing of ours to stop"
  fi
}

# ---------------------------------------------------------------------------------------------
# Kafka

# An ApiVersions v0 request (api key 18, correlation id 1, empty client id) in plaintext, by default to the
# broker's own listener: the broker answers it only once it processes requests, which a plain port check
# cannot tell.
kafka_answers() {
  local reply bytes
  reply="$(timeout 3 bash -c "exec 3<>/dev/tcp/127.0.0.1/${1:-$KAFKA_INTERNAL_PORT} &&
    printf '\x00\x00\x00\x0a\x00\x12\x00\x00\x00\x00\x00\x01\x00\x00' >&3 &&
    head -c 8 <&3 | od -An -tx1" 2>/dev/null)" || return 1
  # Bytes 5 to 8 of the reply are the correlation id.
  read -r -a bytes <<<"$reply"
  [[ "${bytes[*]:4:4}" == "00 00 00 01" ]]
}

# Kafka's jars, resolved from Maven Central once per pom.xml content.
kafka_resolve_jars() {
  local marker="$KAFKA_HOME/.complete" pom_sha
  pom_sha="$(sha256sum "$KAFKA_POM" | cut -d' ' -f1)"
  if [[ -f $marker && "$(<"$marker")" == "$pom_sha" ]]; then return 0; fi
  command -v mvn >/dev/null || apt_install maven
  log "kafka: resolving Kafka $KAFKA_VERSION from Maven Central into $KAFKA_LIB (once)"
  rm -rf "$KAFKA_LIB" "$marker"
  mkdir -p "$KAFKA_HOME"
  mvn -B -f "$KAFKA_POM" -Dmaven.repo.local="$CACHE_DIR/maven-repository" \
    dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$KAFKA_LIB" >"$LOG_DIR/maven.log" 2>&1 ||
    die "kafka: Maven could not resolve $KAFKA_POM; see $LOG_DIR/maven.log"
  printf '%s\n' "$pom_sha" >"$marker"
}

# The local CA, the broker's certificate (127.0.0.1 and localhost) and the SCRAM password, made once with
# openssl and made again when the CA has less than a day left.
kafka_security_material() {
  local dir="$KAFKA_SECURITY_DIR"
  [[ -n $dir && $dir == */kafka-local-security ]] || die "kafka: unexpected security directory '$dir'"
  if [[ -s $dir/password && -s $dir/broker.pem ]] &&
    openssl x509 -checkend 86400 -noout -in "$dir/ca.crt" >/dev/null 2>&1; then
    return 0
  fi
  command -v openssl >/dev/null || apt_install openssl
  log "kafka: making the local CA, the broker's certificate and the SCRAM password in $dir"
  rm -rf "$dir" && mkdir -p "$dir" && chmod 700 "$dir"
  printf '%s\n' '[authority]' 'basicConstraints = critical, CA:TRUE' 'keyUsage = critical, keyCertSign, cRLSign' \
    '[broker]' 'basicConstraints = critical, CA:FALSE' 'keyUsage = critical, digitalSignature, keyEncipherment' \
    'extendedKeyUsage = serverAuth' 'subjectAltName = IP:127.0.0.1, DNS:localhost' >"$dir/extensions.cnf"
  {
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -noenc -days 365 \
      -subj "/CN=gateway local Kafka CA" -keyout "$dir/ca.key" -out "$dir/ca.crt" \
      -config "$dir/extensions.cnf" -extensions authority &&
      openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -noenc -subj "/CN=localhost" \
        -keyout "$dir/broker.key" -out "$dir/broker.csr" &&
      openssl x509 -req -in "$dir/broker.csr" -CA "$dir/ca.crt" -CAkey "$dir/ca.key" -CAcreateserial -days 365 \
        -extfile "$dir/extensions.cnf" -extensions broker -out "$dir/broker.crt"
  } >>"$LOG_DIR/kafka.log" 2>&1 || die "kafka: openssl could not make the certificates; see $LOG_DIR/kafka.log"
  # Kafka's PEM key store: the unencrypted PKCS#8 key, then the certificate.
  cat "$dir/broker.key" "$dir/broker.crt" >"$dir/broker.pem"
  head -c 24 /dev/urandom | base64 | tr '+/' '-_' >"$dir/password"
  chmod 600 "$dir/password" "$dir/ca.key" "$dir/broker.key" "$dir/broker.pem"
}

# Gives the SCRAM user its password, over the broker's own listener. The broker keeps it in its metadata log, so
# it is set once per data directory and password (a marker records which), not at every restart.
kafka_scram_user() {
  local marker="$KAFKA_DIR/scram-user" stamp
  stamp="$(sha256sum "$KAFKA_SECURITY_DIR/password" | cut -d' ' -f1)"
  if [[ -f $marker && "$(<"$marker")" == "$stamp" ]]; then return 0; fi
  local java_opts=(-Dlog4j.configuration="file:$KAFKA_DIR/log4j.properties" -Djava.awt.headless=true)
  (cd "$KAFKA_DIR" && java "${java_opts[@]}" -cp "$KAFKA_LIB/*" kafka.admin.ConfigCommand \
    --bootstrap-server "127.0.0.1:$KAFKA_INTERNAL_PORT" --alter --entity-type users \
    --entity-name "$KAFKA_SCRAM_USER" --add-config "SCRAM-SHA-512=[password=$(<"$KAFKA_SECURITY_DIR/password")]" \
    >>"$LOG_DIR/kafka.log" 2>&1) || die "kafka: could not set the SCRAM user's password; see $LOG_DIR/kafka.log"
  printf '%s\n' "$stamp" >"$marker"
}

kafka_write_config() {
  mkdir -p "$KAFKA_DIR/data"
  cat >"$KAFKA_DIR/server.properties" <<EOF
# Written by deploy/local/infra.sh on every start; edits are lost.
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$KAFKA_CONTROLLER_PORT
# Clients: TLS and SCRAM. The broker's own traffic and the setup tools: plaintext on loopback.
listeners=SASL_SSL://127.0.0.1:$KAFKA_PORT,CONTROLLER://127.0.0.1:$KAFKA_CONTROLLER_PORT,INTERNAL://127.0.0.1:$KAFKA_INTERNAL_PORT
advertised.listeners=SASL_SSL://127.0.0.1:$KAFKA_PORT,INTERNAL://127.0.0.1:$KAFKA_INTERNAL_PORT
controller.listener.names=CONTROLLER
inter.broker.listener.name=INTERNAL
listener.security.protocol.map=CONTROLLER:PLAINTEXT,INTERNAL:PLAINTEXT,SASL_SSL:SASL_SSL
sasl.enabled.mechanisms=SCRAM-SHA-512
listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;
ssl.keystore.type=PEM
ssl.keystore.location=$KAFKA_SECURITY_DIR/broker.pem
ssl.client.auth=none
log.dirs=$KAFKA_DIR/data
num.partitions=1
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
group.initial.rebalance.delay.ms=0
EOF
  cat >"$KAFKA_DIR/log4j.properties" <<EOF
# Written by deploy/local/infra.sh: warnings and errors only, to a file in the state directory.
log4j.rootLogger=WARN, file
log4j.appender.file=org.apache.log4j.RollingFileAppender
log4j.appender.file.File=$LOG_DIR/kafka-server.log
log4j.appender.file.MaxFileSize=10MB
log4j.appender.file.MaxBackupIndex=2
log4j.appender.file.layout=org.apache.log4j.PatternLayout
log4j.appender.file.layout.ConversionPattern=[%d] %p %m (%c)%n
EOF
}

# A Kafka Uuid: 16 random bytes in unpadded URL-safe base64 (22 characters). Like Kafka's own
# generator, never one starting with "-", which the storage tool would read as an option.
readonly KAFKA_CLUSTER_ID_PATTERN='^[A-Za-z0-9_][A-Za-z0-9_-]{21}$'

kafka_cluster_id() {
  local file="$KAFKA_DIR/cluster-id" id
  if [[ -s $file && "$(<"$file")" =~ $KAFKA_CLUSTER_ID_PATTERN ]]; then
    cat "$file"
    return 0
  fi
  until [[ ${id:-} =~ $KAFKA_CLUSTER_ID_PATTERN ]]; do
    id="$(head -c 16 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=\n')"
  done
  printf '%s' "$id" >"$file"
  echo "$id"
}

# Ours answers on its own listener; a reused one of an earlier version on the clients' port.
kafka_answers_anywhere() { kafka_answers || kafka_answers "$KAFKA_PORT"; }

kafka_started_or_exited() {
  kafka_answers || process_gone "$1"
}

start_kafka() {
  command -v java >/dev/null || apt_install openjdk-17-jre-headless
  kafka_resolve_jars
  port_closed "$KAFKA_CONTROLLER_PORT" ||
    die "kafka: the controller port 127.0.0.1:$KAFKA_CONTROLLER_PORT (GW_KAFKA_PORT + 1) is taken by another process"
  port_closed "$KAFKA_INTERNAL_PORT" ||
    die "kafka: the broker's own port 127.0.0.1:$KAFKA_INTERNAL_PORT (GW_KAFKA_PORT + 2) is taken by another process"
  kafka_security_material
  kafka_write_config
  local java_opts=(-Dlog4j.configuration="file:$KAFKA_DIR/log4j.properties" -Djava.awt.headless=true)
  # A new data directory gets the SCRAM user with its format, which saves starting a JVM for it once the
  # broker runs; one formatted before keeps its user (kafka_scram_user changes it only if the password did).
  local scram=()
  if [[ ! -f $KAFKA_DIR/data/meta.properties ]]; then
    scram=(--add-scram "SCRAM-SHA-512=[name=$KAFKA_SCRAM_USER,password=$(<"$KAFKA_SECURITY_DIR/password")]")
  fi
  (cd "$KAFKA_DIR" && java "${java_opts[@]}" -cp "$KAFKA_LIB/*" kafka.tools.StorageTool format \
    -t "$(kafka_cluster_id)" -c "$KAFKA_DIR/server.properties" --ignore-formatted "${scram[@]}" \
    >>"$LOG_DIR/kafka.log" 2>&1) || die "kafka: formatting $KAFKA_DIR/data failed; see $LOG_DIR/kafka.log"
  if [[ ${#scram[@]} -gt 0 ]]; then
    sha256sum "$KAFKA_SECURITY_DIR/password" | cut -d' ' -f1 >"$KAFKA_DIR/scram-user"
  fi

  log "kafka: starting on 127.0.0.1:$KAFKA_PORT, TLS and SCRAM (controller on $KAFKA_CONTROLLER_PORT, own listener on $KAFKA_INTERNAL_PORT)"
  # setsid: the broker outlives this script and is not hit by a Ctrl-C meant for it.
  (cd "$KAFKA_DIR" && exec setsid nohup java -Xms256m -Xmx512m -XX:+ExitOnOutOfMemoryError "${java_opts[@]}" \
    -cp "$KAFKA_LIB/*" kafka.Kafka "$KAFKA_DIR/server.properties" >>"$LOG_DIR/kafka.log" 2>&1 </dev/null 9>&-) &
  local pid=$!
  echo "$pid" >"$RUN_DIR/kafka.pid"

  wait_until "$KAFKA_START_WAIT" kafka_started_or_exited "$pid" ||
    die "kafka: no answer on 127.0.0.1:$KAFKA_INTERNAL_PORT within ${KAFKA_START_WAIT}s (pid $pid is still starting; \`$0 down\` stops it); see $LOG_DIR/kafka.log and $LOG_DIR/kafka-server.log"
  if process_gone "$pid"; then
    rm -f "$RUN_DIR/kafka.pid"
    die "kafka: the broker exited during start; see $LOG_DIR/kafka.log and $LOG_DIR/kafka-server.log"
  fi
  kafka_scram_user
}

# The clients' settings as the services read them (KAFKA_TLS*, KAFKA_SASL_*), one per line; empty for a
# reused plaintext broker.
KAFKA_CLIENT_ENV=""

kafka_client_env() {
  KAFKA_CLIENT_ENV="KAFKA_TLS=true
KAFKA_TLS_CA=$KAFKA_SECURITY_DIR/ca.crt
KAFKA_TLS_SERVER_NAME=localhost
KAFKA_SASL_MECHANISM=scram-sha-512
KAFKA_SASL_USERNAME=$KAFKA_SCRAM_USER
KAFKA_SASL_PASSWORD=$(<"$KAFKA_SECURITY_DIR/password")"
}

kafka_ensure_topics() {
  local settings=()
  [[ -z $KAFKA_CLIENT_ENV ]] || mapfile -t settings <<<"$KAFKA_CLIENT_ENV"
  env KAFKA_BROKERS="127.0.0.1:$KAFKA_PORT" "${settings[@]}" node "$ENSURE_TOPICS_CLI" >&2 ||
    die "kafka: could not create the gateway's topics on 127.0.0.1:$KAFKA_PORT"
}

kafka_up() {
  local pid
  if pid="$(owned_pid kafka)"; then
    wait_until "$KAFKA_START_WAIT" kafka_answers ||
      die "kafka: ours (pid $pid) does not answer on 127.0.0.1:$KAFKA_INTERNAL_PORT; see $LOG_DIR/kafka-server.log, or run \`$0 down\` and retry"
    log "kafka: running (ours, pid $pid)"
    kafka_client_env
  elif port_open "$KAFKA_PORT"; then
    rm -f "$RUN_DIR/kafka.pid"
    if kafka_answers "$KAFKA_PORT"; then
      # A broker started by an earlier version of this script: plaintext only, until it is restarted.
      log "kafka: reusing the PLAINTEXT broker already on 127.0.0.1:$KAFKA_PORT (restart it for TLS and SCRAM)"
    else
      [[ -s $KAFKA_SECURITY_DIR/password ]] ||
        die "kafka: the broker on 127.0.0.1:$KAFKA_PORT speaks no plaintext and $KAFKA_SECURITY_DIR holds no local CA and password: stop it or choose another GW_KAFKA_PORT"
      log "kafka: reusing the TLS and SCRAM broker already on 127.0.0.1:$KAFKA_PORT"
      kafka_client_env
    fi
  else
    start_kafka
    kafka_client_env
  fi
  kafka_ensure_topics
}

kafka_down() {
  local pid
  if pid="$(owned_pid kafka)"; then
    stop_component kafka "$pid" kill -TERM "$pid"
  else
    rm -f "$RUN_DIR/kafka.pid"
    log "kafka: nothing of ours to stop"
  fi
}

# ---------------------------------------------------------------------------------------------
# Commands

# fd 9 holds the lock; every server started under it gets `9>&-`, or it would hold the lock forever.
take_lock() {
  exec 9>"$RUN_DIR/infra.lock"
  flock -w "$LOCK_WAIT" 9 || die "another infra.sh up/down on $STATE_DIR did not finish within ${LOCK_WAIT}s"
}

cmd_up() {
  # Checked first so that nothing is started for nothing.
  [[ -f $ENSURE_TOPICS_CLI ]] || die "$ENSURE_TOPICS_CLI is missing: run \`make build\` first"
  command -v node >/dev/null || die "node is not on PATH (Node 20 creates the Kafka topics)"
  take_lock
  postgres_up
  redis_up
  kafka_up
  local env_file="$STATE_DIR/infra.env"
  cat >"$env_file.tmp" <<EOF
DATABASE_URL=postgres://$PG_ROLE:$PG_PASSWORD@127.0.0.1:$PG_PORT/${PG_DATABASES[0]}
REDIS_URL=redis://127.0.0.1:$REDIS_PORT
KAFKA_BROKERS=127.0.0.1:$KAFKA_PORT
EOF
  [[ -z $KAFKA_CLIENT_ENV ]] || printf '%s\n' "$KAFKA_CLIENT_ENV" >>"$env_file.tmp"
  # It holds the SCRAM password.
  chmod 600 "$env_file.tmp"
  mv "$env_file.tmp" "$env_file"
  cat "$env_file"
}

# The tests issue throw-away certificates with openssl for mutual TLS between the services, and drive
# the dashboard in Debian's headless Chromium (npm's playwright-core downloads no browser).
cmd_tools() {
  command -v openssl >/dev/null || apt_install openssl
  [[ -x /usr/bin/chromium ]] || apt_install chromium
}

cmd_down() {
  take_lock
  # Reverse order of `up`.
  kafka_down
  redis_down
  postgres_down
}

status_line() {
  local name="$1" port="$2" answers="$3" pid
  if pid="$(owned_pid "$name")"; then
    if "$answers"; then
      printf '%-9s running   ours (pid %s)   127.0.0.1:%s\n' "$name" "$pid" "$port"
    else
      printf '%-9s starting  ours (pid %s)   127.0.0.1:%s (not answering)\n' "$name" "$pid" "$port"
      return 1
    fi
  elif port_open "$port"; then
    printf '%-9s running   reused          127.0.0.1:%s\n' "$name" "$port"
  else
    printf '%-9s stopped                   127.0.0.1:%s\n' "$name" "$port"
    return 1
  fi
}

cmd_status() {
  local all_running=0
  status_line postgres "$PG_PORT" postgres_ready || all_running=3
  status_line redis "$REDIS_PORT" redis_answers || all_running=3
  status_line kafka "$KAFKA_PORT" kafka_answers_anywhere || all_running=3
  return "$all_running"
}

"cmd_$COMMAND"
