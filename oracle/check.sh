#!/usr/bin/env bash
# Proves that oracle/expected is what Kafka Streams 4.4 produces for
# oracle/cases: builds the runner (oracle/kstreams, Maven, Java 17), runs every
# case through Kafka Streams' TopologyTestDriver into a temporary directory
# and diffs that with the committed oracle/expected. Exit 1 on any difference.
#
#   bash oracle/check.sh            check
#   bash oracle/check.sh --update   rewrite oracle/expected (after changing a case)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# Maven's output only when the build fails (quiet Maven still prints colour codes).
if ! mvn -q -B -f "$here/kstreams/pom.xml" package >"$out/mvn.log" 2>&1; then
  cat "$out/mvn.log" >&2
  echo "oracle: the Maven build of oracle/kstreams failed" >&2
  exit 1
fi
rm "$out/mvn.log"
java -Dorg.slf4j.simpleLogger.defaultLogLevel=error -Dorg.slf4j.simpleLogger.logFile=System.err \
  -cp "$here/kstreams/target/oracle.jar:$(cat "$here/kstreams/target/classpath.txt")" \
  dev.kgen.oracle.Oracle "$here/cases" "$out"
if [[ "${1:-}" == "--update" ]]; then
  rm -f "$here"/expected/*.json
  cp "$out"/*.json "$here/expected/"
  echo "oracle: expected/ rewritten"
  exit 0
fi
if ! diff -ru "$here/expected" "$out"; then
  echo "oracle: oracle/expected differs from what Kafka Streams produces (see above); run bash oracle/check.sh --update after changing a case" >&2
  exit 1
fi
echo "oracle: expected/ matches Kafka Streams for every case"
