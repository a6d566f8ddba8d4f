#!/usr/bin/env bash
# Runs kgen's benchmark suite (bench/README.md) against a real Apache Kafka
# broker and prints the results table.
#
# Usage: bench/run.sh [quick|full] [harness flags...]
#
#   quick  1,000,000 records of 100 bytes, 3 runs per workload and contender,
#          at-least-once (the default)
#   full   10,000,000 records of 1,024 bytes, 3 runs, at-least-once and then
#          exactly-once
#
# Environment:
#   BENCH_RECORDS    records in the source topic, in either mode
#   BENCH_JAVA_OPTS  JVM flags of the Kafka Streams contender (default: none)
#   KAFKA_PORT       broker port (default 9092)
#
# When no broker answers, the broker is started with scripts/kafka.sh and
# stopped at the end; a broker that was already running is left running.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
mode=${1:-quick}
[[ $# -gt 0 ]] && shift
case $mode in
quick) args=() ;;
full) args=(-full -guarantee both) ;;
*)
	echo "usage: bench/run.sh [quick|full] [harness flags...]" >&2
	exit 2
	;;
esac
KAFKA_PORT=${KAFKA_PORT:-9092}
export KAFKA_PORT

# listening reports whether something accepts TCP connections on the port.
listening() { (exec 3<>"/dev/tcp/127.0.0.1/$KAFKA_PORT") 2>/dev/null; }

started=0
work=$(mktemp -d)
cleanup() {
	rm -rf "$work"
	if ((started)); then
		"$ROOT/scripts/kafka.sh" stop || true
	fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if "$ROOT/scripts/kafka.sh" status >/dev/null 2>&1; then
	echo "bench/run.sh: using the broker scripts/kafka.sh started earlier (127.0.0.1:$KAFKA_PORT)" >&2
elif listening; then
	echo "bench/run.sh: using the broker that listens on 127.0.0.1:$KAFKA_PORT" >&2
else
	"$ROOT/scripts/kafka.sh" start
	started=1
fi

cd "$ROOT"
go build -o "$work/bench" ./bench/cmd/bench
"$work/bench" -brokers "127.0.0.1:$KAFKA_PORT" ${args[@]+"${args[@]}"} "$@"
