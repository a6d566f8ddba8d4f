package dsl

import (
	"fmt"
	"time"

	"github.com/kgen-dev/kgen/runtime/serde"
	"github.com/kgen-dev/kgen/runtime/state"
	"github.com/kgen-dev/kgen/runtime/stream"
)

// Joins with tables, with Kafka Streams 4.4's semantics (KStream#join and
// #leftJoin with a KTable; KTable#join, #leftJoin and #outerJoin).
//
// A side that may be absent is a pointer, nil when the other side has no
// row: a left join's joiner takes the table's row as *VT, an outer join's
// takes both sides as pointers. So an absent row is never a zero value, and
// the joiner of a side that cannot be absent takes a plain value.
//
// A join reads the other side's store, which it shares with the node that
// writes it: the two are in one sub-topology, so their source topics are
// co-partitioned (the app refuses to start when their partition counts
// differ), as Kafka Streams requires of joined topics.

// TableRef names a table of a topology: Node forwards its updates (as
// Change values: dsl.Table, a table aggregation, a table join) and Store
// holds its rows as ValueAndTimestamp values.
type TableRef struct {
	Node, Store string
}

// StreamTableJoin joins each record of the stream parent with the table
// row of its key (an inner join): the output is joiner(value, row) with the
// stream record's key, timestamp and headers, and a record whose key has no
// row gives nothing. Table updates emit nothing: only the stream drives the
// join. A record with a nil key or nil value (types that can be nil) is
// dropped and counted (stream.DropNullKey, stream.DropNullValue), as Kafka
// Streams drops it. tableStore is the table's store (TableRef.Store).
//
// When the table is versioned (VersionedTable), a record joins the row
// its key had at the record's time, not the latest one, as Kafka Streams
// does (KIP-914): no version by then, a tombstone then, or a time older
// than the table's history (unless the latest row was valid then) is no
// row. StreamTableJoinWith adds a grace period for late table updates.
func StreamTableJoin[K, V, VT, VR any](t *stream.Topology, name, tableStore string, joiner func(value V, row VT) VR, parent string) {
	addStreamTableJoin(t, name, tableStore, false, func(_ K, v V, row *VT) VR { return joiner(v, *row) }, parent)
}

// StreamTableJoinWithKey is StreamTableJoin whose joiner also takes the
// record's key (Kafka Streams' ValueJoinerWithKey).
func StreamTableJoinWithKey[K, V, VT, VR any](t *stream.Topology, name, tableStore string, joiner func(key K, value V, row VT) VR, parent string) {
	addStreamTableJoin(t, name, tableStore, false, func(k K, v V, row *VT) VR { return joiner(k, v, *row) }, parent)
}

// StreamTableLeftJoin is StreamTableJoin that keeps every stream record:
// joiner gets nil for a key with no row. A record with a nil value is
// dropped and counted; one with a nil key but a value is joined with no row
// (Kafka Streams since KIP-962: a null key cannot match a row, but a left
// join keeps the record).
func StreamTableLeftJoin[K, V, VT, VR any](t *stream.Topology, name, tableStore string, joiner func(value V, row *VT) VR, parent string) {
	addStreamTableJoin(t, name, tableStore, true, func(_ K, v V, row *VT) VR { return joiner(v, row) }, parent)
}

// StreamTableLeftJoinWithKey is StreamTableLeftJoin whose joiner also takes
// the record's key (nil for a record without one, of a type that can be nil).
func StreamTableLeftJoinWithKey[K, V, VT, VR any](t *stream.Topology, name, tableStore string, joiner func(key K, value V, row *VT) VR, parent string) {
	addStreamTableJoin(t, name, tableStore, true, joiner, parent)
}

// StreamTableJoinOptions are the per-operator settings of a stream–table
// join made with StreamTableJoinWith or StreamTableLeftJoinWith.
type StreamTableJoinOptions struct {
	// Grace, when more than 0, is Kafka Streams' Joined.withGracePeriod
	// (KIP-923): each stream record waits in a buffer until the join's
	// stream time (the largest time of the stream records it kept) reaches
	// its time + Grace, so that a versioned table's updates of up to Grace
	// later, arriving out of order, are seen by its lookup as of its time.
	// Records leave the buffer in time order (equal times by serialized
	// key, then arrival); one older than stream time - Grace is joined at
	// once. Only a versioned table may have a grace period, of at most its
	// history retention: otherwise the task fails to start.
	Grace time.Duration
	// Store configures the grace buffer, the key-value store <name>-Buffer
	// (Kafka Streams' name, so its changelog is <app>-<name>-Buffer-changelog):
	// in memory or persistent, changelogged or not. Unused without Grace.
	Store stream.StoreOptions
}

// StreamTableJoinWith is StreamTableJoinWithKey with options: a grace
// period buffers stream records before they join a versioned table. ks and
// vs serialize the buffered records' keys and values (they may be nil
// without a grace period).
func StreamTableJoinWith[K, V, VT, VR any](t *stream.Topology, name, tableStore string, ks serde.Serde[K], vs serde.Serde[V], opts StreamTableJoinOptions, joiner func(key K, value V, row VT) VR, parent string) {
	addStreamTableJoinWith(t, name, tableStore, ks, vs, opts, false, func(k K, v V, row *VT) VR { return joiner(k, v, *row) }, parent)
}

// StreamTableLeftJoinWith is StreamTableLeftJoinWithKey with options, as
// StreamTableJoinWith. A record with a nil key is joined with no row at
// once, never buffered: it can meet no row anyway (Kafka Streams 4.4 fails
// on it when a grace period is set).
func StreamTableLeftJoinWith[K, V, VT, VR any](t *stream.Topology, name, tableStore string, ks serde.Serde[K], vs serde.Serde[V], opts StreamTableJoinOptions, joiner func(key K, value V, row *VT) VR, parent string) {
	addStreamTableJoinWith(t, name, tableStore, ks, vs, opts, true, joiner, parent)
}

func addStreamTableJoin[K, V, VT, VR any](t *stream.Topology, name, tableStore string, left bool, joiner func(K, V, *VT) VR, parent string) {
	addStreamTableJoinWith(t, name, tableStore, nil, nil, StreamTableJoinOptions{}, left, joiner, parent)
}

func addStreamTableJoinWith[K, V, VT, VR any](t *stream.Topology, name, tableStore string, ks serde.Serde[K], vs serde.Serde[V], opts StreamTableJoinOptions, left bool, joiner func(K, V, *VT) VR, parent string) {
	bufferStore := ""
	if opts.Grace > 0 {
		bufferStore = name + "-Buffer"
	}
	stream.AddProcessor(t, name, func() stream.Processor[K, V, K, VR] {
		j := &streamTableJoin[K, V, VT, VR]{storeName: tableStore, left: left, joiner: joiner, keyNil: nilTest[K](), valNil: nilTest[V](), grace: opts.Grace}
		if bufferStore != "" {
			j.buffer = &graceBuffer[K, V]{storeName: bufferStore, ks: ks, vs: vs, grace: opts.Grace.Milliseconds()}
		}
		return j
	}, parent)
	t.ConnectStore(tableStore, name)
	if bufferStore != "" {
		stream.AddKeyValueStore(t, bufferStore, serde.Bytes{}, serde.Bytes{}, opts.Store, name)
	}
}

// rowLookup is how a stream–table join finds the row a stream record joins:
// latestRow reads the table's current row, versionedRow the row as of the
// record's time (Kafka Streams' versioned value getter, KIP-914).
type rowLookup[K, VT any] interface {
	row(key K, at time.Time) (*VT, error)
}

type latestRow[K, VT any] struct {
	store state.KeyValueStore[K, ValueAndTimestamp[VT]]
}

func (l latestRow[K, VT]) row(key K, _ time.Time) (*VT, error) {
	vt, found, err := l.store.Get(key)
	if err != nil || !found {
		return nil, err
	}
	return &vt.Value, nil
}

// versionedRow reads a versioned table (VersionedTable's store of *VT): a
// tombstone, no version yet, or a time older than the history (unless the
// latest version was already valid then) is no row.
type versionedRow[K, VT any] struct {
	store state.VersionedKeyValueStore[K, *VT]
}

func (l versionedRow[K, VT]) row(key K, at time.Time) (*VT, error) {
	rec, found, err := l.store.GetAsOf(key, at.UnixMilli())
	if err != nil || !found {
		return nil, err
	}
	return rec.Value, nil
}

type streamTableJoin[K, V, VT, VR any] struct {
	storeName string
	left      bool
	joiner    func(K, V, *VT) VR
	keyNil    func(K) bool // nil for a type that cannot be nil
	valNil    func(V) bool
	lookup    rowLookup[K, VT]
	grace     time.Duration
	buffer    *graceBuffer[K, V] // nil without a grace period
}

func (j *streamTableJoin[K, V, VT, VR]) Init(ctx *stream.Context[K, VR]) error {
	if j.grace < 0 {
		return fmt.Errorf("stream-table join %q: grace period %v, want 0 or more", ctx.NodeName(), j.grace)
	}
	if vs, ok := ctx.Store(j.storeName).(state.VersionedKeyValueStore[K, *VT]); ok {
		if j.grace > vs.HistoryRetention() {
			return fmt.Errorf("stream-table join %q: grace period %v is longer than table store %q's history retention %v (Kafka Streams: history retention must be at least grace period)",
				ctx.NodeName(), j.grace, j.storeName, vs.HistoryRetention())
		}
		j.lookup = versionedRow[K, VT]{vs}
	} else {
		if j.grace > 0 {
			return fmt.Errorf("stream-table join %q: a grace period needs a versioned table, and store %q is not one (dsl.VersionedTable makes one)", ctx.NodeName(), j.storeName)
		}
		store, err := stream.GetKeyValueStore[K, ValueAndTimestamp[VT]](ctx, j.storeName)
		if err != nil {
			return err
		}
		j.lookup = latestRow[K, VT]{store}
	}
	if j.buffer != nil {
		return j.buffer.init(ctx)
	}
	return nil
}

func (j *streamTableJoin[K, V, VT, VR]) Process(ctx *stream.Context[K, VR], r stream.Record[K, V]) error {
	if j.valNil != nil && j.valNil(r.Value) {
		ctx.RecordDropped(stream.DropNullValue)
		return nil
	}
	if j.keyNil != nil && j.keyNil(r.Key) {
		if !j.left {
			ctx.RecordDropped(stream.DropNullKey)
			return nil
		}
		ctx.Forward(stream.Record[K, VR]{Key: r.Key, Value: j.joiner(r.Key, r.Value, nil), Timestamp: r.Timestamp, Headers: r.Headers})
		return nil
	}
	if j.buffer == nil {
		return j.join(ctx, r)
	}
	buffered, err := j.buffer.put(r)
	if err != nil {
		return err
	}
	if !buffered {
		return j.join(ctx, r)
	}
	return j.buffer.evict(func(r stream.Record[K, V]) error { return j.join(ctx, r) })
}

// join joins r with its row and forwards the result, if any.
func (j *streamTableJoin[K, V, VT, VR]) join(ctx *stream.Context[K, VR], r stream.Record[K, V]) error {
	row, err := j.lookup.row(r.Key, r.Timestamp)
	if err != nil {
		return err
	}
	if row == nil && !j.left {
		return nil
	}
	ctx.Forward(stream.Record[K, VR]{Key: r.Key, Value: j.joiner(r.Key, r.Value, row), Timestamp: r.Timestamp, Headers: r.Headers})
	return nil
}

// TableJoin joins two tables of the same key (an inner join): the result is
// a table of joiner(left row, right row) for the keys both have. An update
// of either side whose key has a row on the other side emits the new result
// (nil New when this side's row is gone: a tombstone) with the later of the
// two rows' timestamps; an update whose key has no row on the other side
// emits nothing. The result's updates are Change values: Old is the result
// before the update (nil if there was none), so an aggregation can follow.
//
// It adds the nodes name+"-left" and name+"-right" (each reads the other
// side's store) and name, which forwards the result's updates. The result
// is not stored, as Kafka Streams does not materialize a join unless asked:
// MaterializeTable stores it, for a join to read (Kafka Streams can join a
// stream with an unmaterialized join by computing the row from both
// sides' stores; kgen asks for the store).
func TableJoin[K, V1, V2, VR any](t *stream.Topology, name string, left, right TableRef, joiner func(V1, V2) VR) {
	addTableJoin(t, name, left, right, false, false, func(_ K, a *V1, b *V2) VR { return joiner(*a, *b) })
}

// TableJoinWithKey is TableJoin whose joiner also takes the key.
func TableJoinWithKey[K, V1, V2, VR any](t *stream.Topology, name string, left, right TableRef, joiner func(K, V1, V2) VR) {
	addTableJoin(t, name, left, right, false, false, func(k K, a *V1, b *V2) VR { return joiner(k, *a, *b) })
}

// TableLeftJoin is TableJoin that keeps every left row: joiner gets nil for
// a key with no right row. A left update emits whatever the right side
// holds; a right update emits only for a key the left side has; deleting a
// left row emits a tombstone for its result.
func TableLeftJoin[K, V1, V2, VR any](t *stream.Topology, name string, left, right TableRef, joiner func(V1, *V2) VR) {
	addTableJoin(t, name, left, right, false, true, func(_ K, a *V1, b *V2) VR { return joiner(*a, b) })
}

// TableLeftJoinWithKey is TableLeftJoin whose joiner also takes the key.
func TableLeftJoinWithKey[K, V1, V2, VR any](t *stream.Topology, name string, left, right TableRef, joiner func(K, V1, *V2) VR) {
	addTableJoin(t, name, left, right, false, true, func(k K, a *V1, b *V2) VR { return joiner(k, *a, b) })
}

// TableOuterJoin is TableJoin that keeps the rows of both sides: joiner
// gets nil for the side with no row (never both). A key's result is deleted
// (a tombstone) when its last row on either side is.
func TableOuterJoin[K, V1, V2, VR any](t *stream.Topology, name string, left, right TableRef, joiner func(*V1, *V2) VR) {
	addTableJoin(t, name, left, right, true, true, func(_ K, a *V1, b *V2) VR { return joiner(a, b) })
}

// TableOuterJoinWithKey is TableOuterJoin whose joiner also takes the key.
func TableOuterJoinWithKey[K, V1, V2, VR any](t *stream.Topology, name string, left, right TableRef, joiner func(K, *V1, *V2) VR) {
	addTableJoin(t, name, left, right, true, true, joiner)
}

// addTableJoin adds the two sides and the node name they forward through.
// leftOuter says the left row may be absent from a result, rightOuter the
// right row.
func addTableJoin[K, V1, V2, VR any](t *stream.Topology, name string, left, right TableRef, leftOuter, rightOuter bool, joiner func(K, *V1, *V2) VR) {
	ln, rn := name+"-left", name+"-right"
	resNil := nilTest[VR]()
	stream.AddProcessor(t, ln, func() stream.Processor[K, Change[V1], K, Change[VR]] {
		return &tableJoinSide[K, V1, V2, VR]{otherStore: right.Store, thisOuter: leftOuter, otherOuter: rightOuter,
			join: joiner, keyNil: nilTest[K](), resNil: resNil}
	}, left.Node)
	t.ConnectStore(right.Store, ln)
	stream.AddProcessor(t, rn, func() stream.Processor[K, Change[V2], K, Change[VR]] {
		return &tableJoinSide[K, V2, V1, VR]{otherStore: left.Store, thisOuter: rightOuter, otherOuter: leftOuter,
			join: func(k K, b *V2, a *V1) VR { return joiner(k, a, b) }, keyNil: nilTest[K](), resNil: resNil}
	}, right.Node)
	t.ConnectStore(left.Store, rn)
	// The merge of both sides' results (Kafka Streams' join merger): one
	// node for what follows to read.
	stream.AddProcessor(t, name, func() stream.Processor[K, Change[VR], K, Change[VR]] {
		return stream.ProcessorFunc[K, Change[VR], K, Change[VR]](func(ctx *stream.Context[K, Change[VR]], r stream.Record[K, Change[VR]]) error {
			ctx.Forward(r)
			return nil
		})
	}, ln, rn)
}

// tableJoinSide joins the updates of one side (this) with the rows of the
// other, which it reads from the other's store.
type tableJoinSide[K, VT, VO, VR any] struct {
	otherStore string
	other      state.KeyValueStore[K, ValueAndTimestamp[VO]]
	// thisOuter: a result may lack this side's row; otherOuter: the other's.
	thisOuter, otherOuter bool
	join                  func(K, *VT, *VO) VR
	keyNil                func(K) bool  // nil for a type that cannot be nil
	resNil                func(VR) bool // a nil result is no result, as Kafka Streams' null
}

func (s *tableJoinSide[K, VT, VO, VR]) Init(ctx *stream.Context[K, Change[VR]]) (err error) {
	s.other, err = stream.GetKeyValueStore[K, ValueAndTimestamp[VO]](ctx, s.otherStore)
	return err
}

func (s *tableJoinSide[K, VT, VO, VR]) Process(ctx *stream.Context[K, Change[VR]], r stream.Record[K, Change[VT]]) error {
	if s.keyNil != nil && s.keyNil(r.Key) {
		ctx.RecordDropped(stream.DropNullKey)
		return nil
	}
	o, found, err := s.other.Get(r.Key)
	if err != nil {
		return err
	}
	var other *VO
	ts := r.Timestamp
	if found {
		other = &o.Value
		ts = later(ts, o.Timestamp)
	} else if !s.otherOuter || (r.Value.New == nil && r.Value.Old == nil) {
		// Kafka Streams emits nothing here: no result before or after.
		return nil
	}
	ch := Change[VR]{New: s.result(r.Key, r.Value.New, other), Old: s.result(r.Key, r.Value.Old, other)}
	ctx.Forward(stream.Record[K, Change[VR]]{Key: r.Key, Value: ch, Timestamp: ts, Headers: r.Headers})
	return nil
}

// result is the join of this side's row v with the other's, nil when the
// join has no result for them.
func (s *tableJoinSide[K, VT, VO, VR]) result(k K, v *VT, other *VO) *VR {
	if (v == nil && !s.thisOuter) || (other == nil && !s.otherOuter) || (v == nil && other == nil) {
		return nil
	}
	res := s.join(k, v, other)
	if s.resNil != nil && s.resNil(res) {
		return nil
	}
	return &res
}

// MaterializeTable keeps the rows of a table that has no store of its own,
// such as a table join's result, in store (Timestamped values), so that a
// join can read it: each update's New is written with the update's
// timestamp (a nil New deletes the row) and the update is forwarded as it
// came, as Kafka Streams does for a join given Materialized; an update
// without Old (a foreign-key join's) gets the row it replaced as Old, so an
// aggregation can follow. It adds the
// node name and returns the table it makes.
func MaterializeTable[K, V any](t *stream.Topology, name, store string, ks serde.Serde[K], vs serde.Serde[V], opts stream.StoreOptions, parent string) TableRef {
	stream.AddProcessor(t, name, func() stream.Processor[K, Change[V], K, Change[V]] {
		return &materialize[K, V]{storeName: store}
	}, parent)
	stream.AddKeyValueStore(t, store, ks, Timestamped(vs), opts, name)
	return TableRef{Node: name, Store: store}
}

type materialize[K, V any] struct {
	storeName string
	store     state.KeyValueStore[K, ValueAndTimestamp[V]]
}

func (m *materialize[K, V]) Init(ctx *stream.Context[K, Change[V]]) (err error) {
	m.store, err = stream.GetKeyValueStore[K, ValueAndTimestamp[V]](ctx, m.storeName)
	return err
}

func (m *materialize[K, V]) Process(ctx *stream.Context[K, Change[V]], r stream.Record[K, Change[V]]) error {
	if r.Value.Old == nil && !r.Value.OutOfOrder {
		// A table that sends no old values (a foreign-key join): the
		// stored row is the one this update replaces.
		old, found, err := m.store.Get(r.Key)
		if err != nil {
			return err
		}
		if found {
			r.Value.Old = &old.Value
		}
	}
	var err error
	if r.Value.New == nil {
		err = m.store.Delete(r.Key)
	} else {
		err = m.store.Put(r.Key, ValueAndTimestamp[V]{Value: *r.Value.New, Timestamp: r.Timestamp})
	}
	if err != nil {
		return err
	}
	ctx.Forward(r)
	return nil
}
