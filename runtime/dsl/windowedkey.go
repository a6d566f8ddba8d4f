package dsl

import "github.com/kgen-dev/kgen/runtime/serde"

// Windowed is the key of a windowed aggregation's table: the grouping key
// and the window (start, end in milliseconds) it was aggregated in. It is
// serde.Windowed, defined there so that its serdes, serde.TimeWindowed and
// serde.SessionWindowed (the bytes of Kafka Streams' windowed serdes), sit
// below dsl; the generator names it dsl.Windowed.
type Windowed[K any] = serde.Windowed[K]
