// Package stream is kgen's processor client: it runs a Topology of sources,
// processors and sinks over the partitions of Kafka topics, inside an
// ordinary Go program, with local state backed by changelog topics, scaling
// through a consumer group, and at-least-once or exactly-once commits.
//
// Build a Topology (AddSource, AddProcessor, AddKeyValueStore, AddSink), then
// run it with New(t, options...).Run(ctx) against brokers, or with a
// LocalDriver in tests. runtime/DESIGN.md in the repository describes the
// internals: the parts of a unit, the commit steps, state and restoration.
package stream
