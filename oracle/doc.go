// Package oracle holds kgen's semantic oracle: Kafka Streams 4.4 itself.
//
// The cases (cases/*.json) run through Kafka Streams' TopologyTestDriver
// (kstreams/, a Maven project; check.sh rebuilds and diffs) into
// expected/*.json, and oracle_test.go runs the same cases through kgen's
// runtime/dsl and stream.LocalDriver and compares record by record. See
// README.md.
package oracle
