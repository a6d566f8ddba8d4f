// Package generated is the oracle's topologies written as kgen.yaml
// operators, with the code kgen generate makes of them: oracle/generated_test.go
// runs the oracle cases through it and compares with Kafka Streams' records.
package generated

//go:generate go tool kgen generate
