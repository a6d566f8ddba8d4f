#!/usr/bin/env bash
# Runs a single-node Apache Kafka broker (KRaft, broker and controller in one
# JVM, on loopback) for kgen's tests and benchmarks.
#
# Usage: scripts/kafka.sh fetch|start|stop|status|logs
#
#   fetch   download the Kafka jars from Maven Central into the cache (once)
#   start   fetch, format the storage once, start the broker in the background
#           and return when it answers a metadata request
#   stop    stop the broker started by start (by its recorded pid)
#   status  say whether the broker runs and answers; exit 0 if so, 1 if not
#   logs    print the broker's log (KAFKA_LOG_LINES=n: only the last n lines)
#
# Environment:
#   KGEN_CACHE_DIR         cache root (default: .cache at the repository root);
#                          everything lives in its kafka/ folder
#   KAFKA_PORT             broker port (default 9092)
#   KAFKA_CONTROLLER_PORT  controller port (default 9093)
#   KAFKA_HEAP             JVM heap flags (default "-Xms256m -Xmx1g")
#   KAFKA_START_TIMEOUT    seconds to wait for the broker to answer (default 90)
#   KAFKA_DATA_RESET=1     wipe the broker's data before start
#
# Needs Java 17+, Maven (for fetch only) and Go (to build the readiness probe).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
POM="$ROOT/scripts/kafka/pom.xml"
KAFKA_VERSION=$(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' "$POM")
cache_root="${KGEN_CACHE_DIR:-$ROOT/.cache}"
# Maven resolves relative paths against the pom's folder: make it absolute.
case $cache_root in /*) ;; *) cache_root="$PWD/$cache_root" ;; esac
CACHE="$cache_root/kafka"
DIST="$CACHE/$KAFKA_VERSION"
LIBS="$DIST/libs"
STAMP="$DIST/libs.stamp"
DATA="$CACHE/data"
RUN="$CACHE/run"
PIDFILE="$RUN/kafka.pid"
CONFIG="$RUN/server.properties"
LOG4J="$RUN/log4j2.properties"
LOGDIR="$CACHE/logs"
LOGFILE="$LOGDIR/server.log"
PROBE="$CACHE/bin/kafkaready"

KAFKA_PORT="${KAFKA_PORT:-9092}"
KAFKA_CONTROLLER_PORT="${KAFKA_CONTROLLER_PORT:-9093}"
KAFKA_HEAP="${KAFKA_HEAP:--Xms256m -Xmx1g}"
KAFKA_START_TIMEOUT="${KAFKA_START_TIMEOUT:-90}"
ADDR="127.0.0.1:$KAFKA_PORT"

say() { printf 'kafka.sh: %s\n' "$*"; }
die() { printf 'kafka.sh: error: %s\n' "$*" >&2; exit 1; }

# need_java fails unless java 17 or newer is on PATH.
need_java() {
	command -v java >/dev/null 2>&1 ||
		die "java not found: Kafka $KAFKA_VERSION needs Java 17 or newer (Debian/Ubuntu: apt-get install openjdk-17-jre-headless)"
	local v
	v=$(java -XshowSettings:properties -version 2>&1 | sed -n 's/^ *java.specification.version = //p')
	[[ ${v%%.*} =~ ^[0-9]+$ && ${v%%.*} -ge 17 ]] ||
		die "java $v found, Kafka $KAFKA_VERSION needs Java 17 or newer (Debian/Ubuntu: apt-get install openjdk-17-jre-headless)"
}

need_mvn() {
	command -v mvn >/dev/null 2>&1 ||
		die "mvn not found: fetching the Kafka jars needs Maven (Debian/Ubuntu: apt-get install maven)"
}

need_go() {
	command -v go >/dev/null 2>&1 ||
		die "go not found: the readiness probe is built with Go (see go.mod for the version)"
}

# The stamp holds the checksum of the pom the libs were fetched with, so that
# an edited pom (another Kafka version, another jar) fetches again.
pom_sum() {
	if command -v sha256sum >/dev/null 2>&1; then
		sha256sum "$POM" | cut -d' ' -f1
	else
		shasum -a 256 "$POM" | cut -d' ' -f1
	fi
}

cmd_fetch() {
	if [[ -f $STAMP && $(cat "$STAMP") == "$(pom_sum)" ]]; then
		say "Kafka $KAFKA_VERSION jars already in the cache ($(ls "$LIBS" | wc -l) jars)"
		return
	fi
	need_java
	need_mvn
	say "fetching Kafka $KAFKA_VERSION jars from Maven Central"
	local tmp="$DIST/libs.tmp"
	rm -rf "$tmp"
	mkdir -p "$DIST"
	# Maven's output goes to a log, shown only when it fails.
	if ! mvn -B -Dstyle.color=never -f "$POM" dependency:copy-dependencies \
		-DincludeScope=runtime -DoutputDirectory="$tmp" >"$DIST/fetch.log" 2>&1; then
		tail -n 40 "$DIST/fetch.log" >&2
		die "mvn could not fetch the Kafka $KAFKA_VERSION jars (network, or ~/.m2 settings?); its last lines are above, all of them in $DIST/fetch.log"
	fi
	[[ -n $(compgen -G "$tmp/kafka_2.13-$KAFKA_VERSION.jar") ]] ||
		die "mvn finished but kafka_2.13-$KAFKA_VERSION.jar is missing from $tmp"
	rm -rf "$LIBS"
	mv "$tmp" "$LIBS"
	pom_sum >"$STAMP"
	say "fetched $(ls "$LIBS" | wc -l) jars into $LIBS"
}

# build_probe builds internal/tools/kafkaready into the cache when it is
# missing or older than its sources.
build_probe() {
	if [[ -x $PROBE ]] && [[ -z $(find "$ROOT/internal/tools/kafkaready" "$ROOT/internal/kafkatest" \
		"$ROOT/go.mod" "$ROOT/go.sum" -name '*_test.go' -prune -o -newer "$PROBE" -type f -print) ]]; then
		return
	fi
	need_go
	mkdir -p "$(dirname "$PROBE")"
	if ! (cd "$ROOT" && go build -buildvcs=false -o "$PROBE.new" ./internal/tools/kafkaready); then
		# A module mid-edit should not stop the broker: an older probe still works.
		[[ -x $PROBE ]] || die "could not build the readiness probe (go build ./internal/tools/kafkaready)"
		say "warning: could not rebuild the readiness probe; using the one built before"
		return
	fi
	mv -f "$PROBE.new" "$PROBE"
}

# answers reports whether the broker answers a metadata request.
answers() { "$PROBE" -brokers "$ADDR" -timeout "${1:-3s}" 2>/dev/null; }

# listening reports whether something accepts TCP connections on 127.0.0.1:$1.
listening() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# running_pid prints the pid of the broker if its pid file names a live
# kafka.Kafka process, and fails otherwise.
running_pid() {
	[[ -f $PIDFILE ]] || return 1
	local pid
	pid=$(cat "$PIDFILE")
	[[ $pid =~ ^[0-9]+$ ]] || return 1
	kill -0 "$pid" 2>/dev/null || return 1
	# Guard against a reused pid: the process must be our broker.
	local args
	if [[ -r /proc/$pid/cmdline ]]; then
		args=$(tr '\0' ' ' <"/proc/$pid/cmdline")
	else
		args=$(ps -p "$pid" -o args= 2>/dev/null) || return 1
	fi
	[[ $args == *kafka.Kafka* ]] || return 1
	echo "$pid"
}

write_config() {
	mkdir -p "$RUN" "$LOGDIR" "$DATA"
	cat >"$CONFIG" <<EOF
# Written by scripts/kafka.sh: a single-node KRaft broker and controller for tests.
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$KAFKA_CONTROLLER_PORT
listeners=PLAINTEXT://127.0.0.1:$KAFKA_PORT,CONTROLLER://127.0.0.1:$KAFKA_CONTROLLER_PORT
advertised.listeners=PLAINTEXT://127.0.0.1:$KAFKA_PORT
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT
log.dirs=$DATA
num.partitions=1
auto.create.topics.enable=false
offsets.topic.replication.factor=1
offsets.topic.num.partitions=10
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
transaction.state.log.num.partitions=10
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
EOF
	cat >"$LOG4J" <<EOF
# Written by scripts/kafka.sh: broker logs to one file at INFO.
status = warn
appender.file.type = File
appender.file.name = file
appender.file.fileName = $LOGFILE
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = info
rootLogger.appenderRef.file.ref = file
logger.kafka.name = kafka
logger.kafka.level = info
logger.state.name = state.change.logger
logger.state.level = warn
# Every component prints its whole configuration at INFO; once is enough.
logger.config.name = org.apache.kafka.common.config.AbstractConfig
logger.config.level = warn
# Segment and index files come and go with every test topic.
logger.storage.name = org.apache.kafka.storage.internals.log
logger.storage.level = warn
EOF
}

# format_storage formats the KRaft metadata log once, with a random cluster id.
format_storage() {
	[[ -f $DATA/meta.properties ]] && return
	local id
	# A Kafka cluster id is 16 random bytes in URL-safe base64 without padding;
	# Kafka avoids a leading '-' so that the id is not taken for a flag.
	id=$(head -c16 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=')
	while [[ $id == -* ]]; do
		id=$(head -c16 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=')
	done
	say "formatting storage in $DATA (cluster id $id)"
	java -cp "$LIBS/*" -Dlog4j2.configurationFile="$LOG4J" \
		kafka.tools.StorageTool format -t "$id" -c "$CONFIG" >"$LOGDIR/format.log" 2>&1 || {
		cat "$LOGDIR/format.log" >&2
		die "formatting the storage failed (kafka.tools.StorageTool format)"
	}
}

cmd_start() {
	local pid
	if [[ ${KAFKA_DATA_RESET:-} == 1 ]]; then
		if running_pid >/dev/null; then
			say "KAFKA_DATA_RESET=1: stopping the running broker first"
			cmd_stop
		fi
		say "KAFKA_DATA_RESET=1: wiping $DATA"
		rm -rf "$DATA"
	fi
	need_java
	cmd_fetch
	build_probe
	if pid=$(running_pid); then
		if answers; then
			say "already running (pid $pid) at $ADDR"
			return
		fi
		die "a broker runs (pid $pid) but does not answer at $ADDR; see scripts/kafka.sh logs, or scripts/kafka.sh stop"
	fi
	rm -f "$PIDFILE"
	local port
	for port in "$KAFKA_PORT" "$KAFKA_CONTROLLER_PORT"; do
		listening "$port" &&
			die "port $port on 127.0.0.1 is taken by another process; stop it or set KAFKA_PORT / KAFKA_CONTROLLER_PORT"
	done
	write_config
	format_storage
	# Keep the previous run's log aside, so that this one starts empty.
	[[ -f $LOGFILE ]] && mv -f "$LOGFILE" "$LOGFILE.prev"

	say "starting Kafka $KAFKA_VERSION at $ADDR (controller 127.0.0.1:$KAFKA_CONTROLLER_PORT)"
	local began=$SECONDS
	# setsid (where there is one) puts the broker in its own session, so that
	# a Ctrl-C in the terminal that ran start does not reach it.
	local detach=()
	command -v setsid >/dev/null 2>&1 && detach=(setsid)
	# shellcheck disable=SC2086 # KAFKA_HEAP is a list of JVM flags.
	${detach[@]+"${detach[@]}"} java $KAFKA_HEAP -XX:+UseG1GC -Djava.awt.headless=true \
		-Dlog4j2.configurationFile="$LOG4J" -Dkafka.logs.dir="$LOGDIR" \
		-cp "$LIBS/*" kafka.Kafka "$CONFIG" \
		</dev/null >"$LOGDIR/stdout.log" 2>&1 &
	pid=$!
	echo "$pid" >"$PIDFILE"

	# The port check keeps each round short until the broker listens.
	while ! { listening "$KAFKA_PORT" && answers 2s; }; do
		if ! kill -0 "$pid" 2>/dev/null; then
			rm -f "$PIDFILE"
			show_tail
			die "the broker exited during start; the last lines of its logs are above"
		fi
		if ((SECONDS - began >= KAFKA_START_TIMEOUT)); then
			show_tail
			say "the broker did not answer in time; stopping it"
			cmd_stop >/dev/null
			die "the broker (pid $pid) did not answer a metadata request at $ADDR within ${KAFKA_START_TIMEOUT}s (KAFKA_START_TIMEOUT); the last lines of its logs are above"
		fi
		sleep 0.2
	done
	say "ready after $((SECONDS - began))s (pid $pid) at $ADDR"
}

show_tail() {
	local f
	for f in "$LOGDIR/stdout.log" "$LOGFILE"; do
		[[ -s $f ]] || continue
		echo "---- last 40 lines of $f" >&2
		tail -n 40 "$f" >&2
	done
}

cmd_stop() {
	local pid
	if ! pid=$(running_pid); then
		rm -f "$PIDFILE"
		say "not running"
		return
	fi
	say "stopping broker (pid $pid)"
	kill -TERM "$pid" 2>/dev/null || true
	local i
	for ((i = 0; i < 300; i++)); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$pid" 2>/dev/null; then
		say "broker (pid $pid) still running after 30s; sending SIGKILL"
		kill -KILL "$pid" 2>/dev/null || true
		for ((i = 0; i < 50; i++)); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
	fi
	rm -f "$PIDFILE"
	say "stopped"
}

cmd_status() {
	local pid
	if ! pid=$(running_pid); then
		say "not running"
		return 1
	fi
	build_probe
	if answers; then
		say "running (pid $pid) at $ADDR"
		return 0
	fi
	say "started (pid $pid) but not answering at $ADDR"
	return 1
}

cmd_logs() {
	[[ -f $LOGFILE ]] || die "no broker log yet ($LOGFILE)"
	if [[ -n ${KAFKA_LOG_LINES:-} ]]; then
		tail -n "$KAFKA_LOG_LINES" "$LOGFILE"
	else
		cat "$LOGFILE"
	fi
}

case "${1:-}" in
fetch) cmd_fetch ;;
start) cmd_start ;;
stop) cmd_stop ;;
status) cmd_status ;;
logs) cmd_logs ;;
*)
	echo "usage: scripts/kafka.sh fetch|start|stop|status|logs" >&2
	exit 2
	;;
esac
