// Package faults is kgen's fault-injection suite: it proves under crashes
// that the runtime's processing guarantees hold, the way Kafka Streams' own
// exactly-once and smoke system tests do.
//
// Three parts:
//   - the app under test (Topology, RunApp; the program faults/cmd/faultapp):
//     a stateless stage that tags each input with its partition and offset,
//     and a stateful stage keeping per-key count, sum, min and max in a
//     changelogged Pebble store, emitting one output per input;
//   - the driver (Run; the program faults/cmd/faults): produces a known
//     input with per-key sequence numbers, runs several app processes, kills
//     them with SIGKILL at random moments, restarts them with and without
//     their state directory, optionally stops the broker for a while, and
//     waits until every input offset is committed;
//   - the verifier (Verify): reads the output with read_committed and checks,
//     per key, that every sequence number is output (once and in order under
//     exactly-once) with the true aggregate of the inputs up to it, and that
//     no transaction is left open.
//
// The reset sequence (RunReset; faults -scenario reset) checks an
// application reset run from one instance of several: the instances count
// the input, stop, the first resets the application (faultapp -reset), and
// all start again with the others' state of the first round still on disk;
// the second round's output must be exact under either guarantee.
//
// The driver's runs are reproducible from the seed it prints: the same seed
// gives the same input and the same schedule of faults.
package faults
