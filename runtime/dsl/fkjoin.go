package dsl

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"

	"github.com/kgen-dev/kgen/runtime/serde"
	"github.com/kgen-dev/kgen/runtime/state"
	"github.com/kgen-dev/kgen/runtime/stream"
)

// Foreign-key table–table joins (Kafka Streams' KTable#join and #leftJoin
// with a foreign-key extractor, KIP-213): the left row's value names the
// key of the right row it joins. The two tables need not be co-partitioned:
// the join ships each left row's subscription to the right table's
// partition of its foreign key, and the right side's answers back to the
// left row's partition, through two internal topics.

// FKJoinSerdes are the serdes a foreign-key join writes its internal topics
// and store with: the left key (in subscriptions and responses), the left
// value (hashed, so that a response computed from a value the left row no
// longer holds is recognised), the foreign (right) key and the right value
// (in responses).
type FKJoinSerdes[KL, VL, KR, VR any] struct {
	LeftKey    serde.Serde[KL]
	LeftValue  serde.Serializer[VL]
	RightKey   serde.Serde[KR]
	RightValue serde.Serde[VR]
}

// ForeignKeyJoin joins the table left with the table right by the foreign
// key fk(left value), nil for a row that names none (an inner join): the
// result is a table keyed by the left key of joiner(left row, right row)
// for each left row whose foreign key has a right row. An update of a left
// row emits its new result, or a tombstone when it no longer joins; an
// update of a right row re-joins every left row that names it. A result
// has the later of both rows' timestamps, as in Kafka Streams, and its
// Change has no Old (Kafka Streams sends none either).
//
// It adds the nodes name+"-subscription-send" (left updates to
// subscriptions), the repartition step name+"-subscription-registration"
// (partitioned like the right table, keyed by foreign key), the node
// name+"-subscription-receive" with the store name+"-subscription-store"
// (keyed by foreign key and left key), name+"-subscription-right" (right
// updates to responses), the repartition step name+"-subscription-response"
// (partitioned like the left table, keyed by left key), name+"-no-fk" and
// name, which resolves responses against the left row and forwards the
// result. A response computed from a left value that has changed since
// (its hash differs) is dropped. The result has no store: MaterializeTable
// keeps one.
func ForeignKeyJoin[KL, VL, KR, VR, VOut any](t *stream.Topology, name string, left, right TableRef, fk func(VL) *KR, joiner func(VL, VR) VOut, sd FKJoinSerdes[KL, VL, KR, VR]) {
	addFKJoin(t, name, left, right, false, fk, func(l VL, r *VR) VOut { return joiner(l, *r) }, sd)
}

// ForeignKeyLeftJoin is ForeignKeyJoin that keeps every left row: joiner
// gets nil for a row whose foreign key is nil or has no right row.
func ForeignKeyLeftJoin[KL, VL, KR, VR, VOut any](t *stream.Topology, name string, left, right TableRef, fk func(VL) *KR, joiner func(VL, *VR) VOut, sd FKJoinSerdes[KL, VL, KR, VR]) {
	addFKJoin(t, name, left, right, true, fk, joiner, sd)
}

// fkInstruction tells the right side what to do with a subscription, as
// Kafka Streams' SubscriptionWrapper instructions do.
type fkInstruction byte

const (
	// fkDeleteNoPropagate: remove the subscription, answer nothing (the
	// left row moved to another foreign key, which answers).
	fkDeleteNoPropagate fkInstruction = iota + 1
	// fkDeleteAndPropagate: remove the subscription and answer with no
	// right row (the left row is gone, or an inner join's row lost its
	// foreign key).
	fkDeleteAndPropagate
	// fkPropagateNullIfNoValue: subscribe and answer with the right row,
	// or with none when there is none (a result may have to be unset).
	fkPropagateNullIfNoValue
	// fkPropagateOnlyIfValue: subscribe and answer only when there is a
	// right row (a new left row of an inner join).
	fkPropagateOnlyIfValue
)

// fkSubscription is a record of the subscription topic, keyed by the
// foreign key.
type fkSubscription struct {
	instr   fkInstruction
	hash    []byte // of the left value that sent it; nil for none
	leftKey []byte // serialized
}

// fkResponse is a record of the response topic, keyed by the left key:
// the right row (nil for none) and the hash of the left value it answers.
type fkResponse[VR any] struct {
	hash  []byte
	right *VR
}

const fkHashLen = 16

// fkHash is the left value's fingerprint: FNV-1a 128 of its serialized
// form, nil for no value. Only kgen reads it (Kafka Streams uses murmur3;
// the internal topics are kgen's own).
func fkHash[VL any](s serde.Serializer[VL], v *VL) ([]byte, error) {
	if v == nil {
		return nil, nil
	}
	b, err := s.Serialize(*v)
	if err != nil {
		return nil, fmt.Errorf("foreign-key join: left value: %w", err)
	}
	h := fnv.New128a()
	h.Write(b)
	return h.Sum(nil), nil
}

// appendHash writes a hash as a presence byte and the hash.
func appendHash(b, hash []byte) []byte {
	if hash == nil {
		return append(b, 0)
	}
	return append(append(b, 1), hash...)
}

func readHash(b []byte) (hash, rest []byte, err error) {
	if len(b) < 1 || (b[0] == 1 && len(b) < 1+fkHashLen) {
		return nil, nil, errors.New("foreign-key join: short record")
	}
	if b[0] == 0 {
		return nil, b[1:], nil
	}
	return append([]byte(nil), b[1:1+fkHashLen]...), b[1+fkHashLen:], nil
}

// subscriptionSerde writes a subscription as instruction, hash, left key.
type subscriptionSerde struct{}

func (subscriptionSerde) Serialize(s fkSubscription) ([]byte, error) {
	return append(appendHash([]byte{byte(s.instr)}, s.hash), s.leftKey...), nil
}

func (subscriptionSerde) Deserialize(b []byte) (fkSubscription, error) {
	if len(b) < 1 {
		return fkSubscription{}, errors.New("foreign-key join: empty subscription")
	}
	hash, rest, err := readHash(b[1:])
	if err != nil {
		return fkSubscription{}, err
	}
	return fkSubscription{instr: fkInstruction(b[0]), hash: hash, leftKey: append([]byte(nil), rest...)}, nil
}

// responseSerde writes a response as hash, presence byte, right value.
type responseSerde[VR any] struct{ vs serde.Serde[VR] }

func (s responseSerde[VR]) Serialize(r fkResponse[VR]) ([]byte, error) {
	b := appendHash(nil, r.hash)
	if r.right == nil {
		return append(b, 0), nil
	}
	v, err := s.vs.Serialize(*r.right)
	if err != nil {
		return nil, fmt.Errorf("foreign-key join: right value: %w", err)
	}
	return append(append(b, 1), v...), nil
}

func (s responseSerde[VR]) Deserialize(b []byte) (fkResponse[VR], error) {
	hash, rest, err := readHash(b)
	if err != nil {
		return fkResponse[VR]{}, err
	}
	if len(rest) < 1 {
		return fkResponse[VR]{}, errors.New("foreign-key join: short response")
	}
	r := fkResponse[VR]{hash: hash}
	if rest[0] == 1 {
		v, err := s.vs.Deserialize(rest[1:])
		if err != nil {
			return fkResponse[VR]{}, fmt.Errorf("foreign-key join: right value: %w", err)
		}
		r.right = &v
	}
	return r, nil
}

// subscriptionPrefix is the store key prefix of a foreign key: its length
// then its bytes, so that one foreign key's subscriptions are one range and
// no other key's (of any length) falls in it.
func subscriptionPrefix(fk []byte) []byte {
	b := binary.BigEndian.AppendUint32(make([]byte, 0, 4+len(fk)), uint32(len(fk))) //nolint:gosec // a key is far below 4 GiB
	return append(b, fk...)
}

// prefixEnd is the first key after every key starting with p.
func prefixEnd(p []byte) []byte {
	end := bytes.Clone(p)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}

func addFKJoin[KL, VL, KR, VR, VOut any](t *stream.Topology, name string, left, right TableRef, leftJoin bool, fk func(VL) *KR, joiner func(VL, *VR) VOut, sd FKJoinSerdes[KL, VL, KR, VR]) {
	send, noFK := name+"-subscription-send", name+"-no-fk"
	registration, receive := name+"-subscription-registration", name+"-subscription-receive"
	rightSide, response := name+"-subscription-right", name+"-subscription-response"
	store := name + "-subscription-store"

	stream.AddProcessor(t, send, func() stream.Processor[KL, Change[VL], KR, fkSubscription] {
		return &fkSend[KL, VL, KR]{leftJoin: leftJoin, fk: fk, sd: sd.LeftKey, ks: sd.RightKey, vs: sd.LeftValue}
	}, left.Node)
	stream.AddRepartition(t, registration, sd.RightKey, serde.Serde[fkSubscription](subscriptionSerde{}), stream.RepartitionOptions{LikeReaders: true}, send)
	stream.AddProcessor(t, receive, func() stream.Processor[KR, fkSubscription, KL, fkResponse[VR]] {
		return &fkReceive[KL, KR, VR]{store: store, rightStore: right.Store, ks: sd.RightKey, lks: sd.LeftKey}
	}, registration)
	stream.AddKeyValueStore(t, store, serde.Serde[[]byte](serde.Bytes{}), serde.Serde[[]byte](serde.Bytes{}), stream.StoreOptions{Changelog: true}, receive)
	t.ConnectStore(right.Store, receive)
	stream.AddProcessor(t, rightSide, func() stream.Processor[KR, Change[VR], KL, fkResponse[VR]] {
		return &fkRight[KL, KR, VR]{store: store, ks: sd.RightKey, lks: sd.LeftKey}
	}, right.Node)
	t.ConnectStore(store, rightSide)
	stream.AddRepartition(t, response, sd.LeftKey, serde.Serde[fkResponse[VR]](responseSerde[VR]{sd.RightValue}), stream.RepartitionOptions{LikeReaders: true}, receive, rightSide)
	stream.AddProcessor(t, noFK, func() stream.Processor[KL, Change[VL], KL, fkResponse[VR]] {
		return &fkNoFK[KL, VL, KR, VR]{leftJoin: leftJoin, fk: fk, vs: sd.LeftValue}
	}, left.Node)
	stream.AddProcessor(t, name, func() stream.Processor[KL, fkResponse[VR], KL, Change[VOut]] {
		return &fkResolve[KL, VL, VR, VOut]{leftStore: left.Store, leftJoin: leftJoin, joiner: joiner, vs: sd.LeftValue, resNil: nilTest[VOut]()}
	}, response, noFK)
	t.ConnectStore(left.Store, name)
}

// fkSend turns a left row's update into subscriptions of its old and new
// foreign keys, with Kafka Streams' instructions.
type fkSend[KL, VL, KR any] struct {
	leftJoin bool
	fk       func(VL) *KR
	sd       serde.Serializer[KL]
	ks       serde.Serializer[KR]
	vs       serde.Serializer[VL]
}

func (s *fkSend[KL, VL, KR]) Init(*stream.Context[KR, fkSubscription]) error { return nil }

func (s *fkSend[KL, VL, KR]) Process(ctx *stream.Context[KR, fkSubscription], r stream.Record[KL, Change[VL]]) error {
	ch := r.Value
	var oldFK, newFK *KR
	if ch.Old != nil {
		oldFK = s.fk(*ch.Old)
	}
	if ch.New != nil {
		newFK = s.fk(*ch.New)
	}
	hash, err := fkHash(s.vs, ch.New)
	if err != nil {
		return err
	}
	lk, err := s.sd.Serialize(r.Key)
	if err != nil {
		return fmt.Errorf("foreign-key join: left key: %w", err)
	}
	emit := func(fk KR, in fkInstruction) {
		ctx.Forward(stream.Record[KR, fkSubscription]{Key: fk, Value: fkSubscription{instr: in, hash: hash, leftKey: lk}, Timestamp: r.Timestamp, Headers: r.Headers})
	}
	sameFK := func() (bool, error) {
		a, err := s.ks.Serialize(*oldFK)
		if err != nil {
			return false, fmt.Errorf("foreign-key join: foreign key: %w", err)
		}
		b, err := s.ks.Serialize(*newFK)
		if err != nil {
			return false, fmt.Errorf("foreign-key join: foreign key: %w", err)
		}
		return bytes.Equal(a, b), nil
	}
	switch {
	case ch.New == nil:
		// The row is gone: its subscription goes, and its result with it.
		// A left row without a foreign key is answered by fkNoFK.
		if oldFK != nil {
			emit(*oldFK, fkDeleteAndPropagate)
		}
	case newFK == nil:
		if oldFK != nil {
			if s.leftJoin {
				// fkNoFK answers with no right row.
				emit(*oldFK, fkDeleteNoPropagate)
			} else {
				// No result now: the old key's answer unsets it.
				emit(*oldFK, fkDeleteAndPropagate)
			}
		} else if !s.leftJoin && ch.Old == nil {
			// A new row that joins nothing: Kafka Streams skips it.
			ctx.RecordDropped(stream.DropNullKey)
		}
	default:
		if oldFK != nil {
			same, err := sameFK()
			if err != nil {
				return err
			}
			if !same {
				emit(*oldFK, fkDeleteNoPropagate)
			}
		}
		in := fkPropagateNullIfNoValue
		if ch.Old == nil && !s.leftJoin {
			in = fkPropagateOnlyIfValue
		}
		emit(*newFK, in)
	}
	return nil
}

// fkNoFK answers, on the left side, the updates no right row can answer: a
// left join's row with no foreign key (joined with no right row), and the
// deletion of a left join's row that had none (a tombstone).
type fkNoFK[KL, VL, KR, VR any] struct {
	leftJoin bool
	fk       func(VL) *KR
	vs       serde.Serializer[VL]
}

func (n *fkNoFK[KL, VL, KR, VR]) Init(*stream.Context[KL, fkResponse[VR]]) error { return nil }

func (n *fkNoFK[KL, VL, KR, VR]) Process(ctx *stream.Context[KL, fkResponse[VR]], r stream.Record[KL, Change[VL]]) error {
	if !n.leftJoin {
		return nil
	}
	ch := r.Value
	switch {
	case ch.New != nil && n.fk(*ch.New) == nil:
	case ch.New == nil && ch.Old != nil && n.fk(*ch.Old) == nil:
	default:
		return nil
	}
	hash, err := fkHash(n.vs, ch.New)
	if err != nil {
		return err
	}
	ctx.Forward(stream.Record[KL, fkResponse[VR]]{Key: r.Key, Value: fkResponse[VR]{hash: hash}, Timestamp: r.Timestamp, Headers: r.Headers})
	return nil
}

// fkReceive keeps the subscriptions of its partition's foreign keys and
// answers them with the right row, as the instruction says.
type fkReceive[KL, KR, VR any] struct {
	store, rightStore string
	subs              state.KeyValueStore[[]byte, []byte]
	right             state.KeyValueStore[KR, ValueAndTimestamp[VR]]
	ks                serde.Serializer[KR]
	lks               serde.Deserializer[KL]
}

func (p *fkReceive[KL, KR, VR]) Init(ctx *stream.Context[KL, fkResponse[VR]]) (err error) {
	if p.subs, err = stream.GetKeyValueStore[[]byte, []byte](ctx, p.store); err != nil {
		return err
	}
	p.right, err = stream.GetKeyValueStore[KR, ValueAndTimestamp[VR]](ctx, p.rightStore)
	return err
}

func (p *fkReceive[KL, KR, VR]) Process(ctx *stream.Context[KL, fkResponse[VR]], r stream.Record[KR, fkSubscription]) error {
	fkb, err := p.ks.Serialize(r.Key)
	if err != nil {
		return fmt.Errorf("foreign-key join: foreign key: %w", err)
	}
	key := append(subscriptionPrefix(fkb), r.Value.leftKey...)
	sub := r.Value
	switch sub.instr {
	case fkDeleteNoPropagate, fkDeleteAndPropagate:
		err = p.subs.Delete(key)
	default:
		err = p.subs.Put(key, appendHash([]byte{1}, sub.hash))
	}
	if err != nil {
		return err
	}
	if sub.instr == fkDeleteNoPropagate {
		return nil
	}
	row, found, err := p.right.Get(r.Key)
	if err != nil {
		return err
	}
	if !found && sub.instr == fkPropagateOnlyIfValue {
		return nil
	}
	lk, err := p.lks.Deserialize(sub.leftKey)
	if err != nil {
		return fmt.Errorf("foreign-key join: left key: %w", err)
	}
	resp := fkResponse[VR]{hash: sub.hash}
	ts := r.Timestamp
	if found && sub.instr != fkDeleteAndPropagate {
		resp.right = &row.Value
	}
	if found {
		ts = later(ts, row.Timestamp)
	}
	ctx.Forward(stream.Record[KL, fkResponse[VR]]{Key: lk, Value: resp, Timestamp: ts, Headers: r.Headers})
	return nil
}

// fkRight answers every subscription of a right row's key with its new
// value (nil when it was deleted), at the update's timestamp.
type fkRight[KL, KR, VR any] struct {
	store string
	subs  state.KeyValueStore[[]byte, []byte]
	ks    serde.Serializer[KR]
	lks   serde.Deserializer[KL]
}

func (p *fkRight[KL, KR, VR]) Init(ctx *stream.Context[KL, fkResponse[VR]]) (err error) {
	p.subs, err = stream.GetKeyValueStore[[]byte, []byte](ctx, p.store)
	return err
}

func (p *fkRight[KL, KR, VR]) Process(ctx *stream.Context[KL, fkResponse[VR]], r stream.Record[KR, Change[VR]]) error {
	if r.Value.New == nil && r.Value.Old == nil {
		// Deleting a row that was not there changes no result.
		return nil
	}
	fkb, err := p.ks.Serialize(r.Key)
	if err != nil {
		return fmt.Errorf("foreign-key join: foreign key: %w", err)
	}
	prefix := subscriptionPrefix(fkb)
	it, err := p.subs.Range(prefix, prefixEnd(prefix))
	if err != nil {
		return err
	}
	type answer struct {
		lk   KL
		hash []byte
	}
	var answers []answer
	for it.Next() {
		hash, _, err := readHash(it.Value()[1:])
		if err != nil {
			it.Close()
			return err
		}
		lk, err := p.lks.Deserialize(it.Key()[len(prefix):])
		if err != nil {
			it.Close()
			return fmt.Errorf("foreign-key join: left key: %w", err)
		}
		answers = append(answers, answer{lk, hash})
	}
	err = it.Err()
	it.Close()
	if err != nil {
		return err
	}
	// Forwarded after the scan: a forward may write the store the
	// iterator reads.
	for _, a := range answers {
		ctx.Forward(stream.Record[KL, fkResponse[VR]]{Key: a.lk, Value: fkResponse[VR]{hash: a.hash, right: r.Value.New}, Timestamp: r.Timestamp, Headers: r.Headers})
	}
	return nil
}

// fkResolve joins a response with the left row it answers, if the row
// still holds the value the response was computed from.
type fkResolve[KL, VL, VR, VOut any] struct {
	leftStore string
	left      state.KeyValueStore[KL, ValueAndTimestamp[VL]]
	leftJoin  bool
	joiner    func(VL, *VR) VOut
	vs        serde.Serializer[VL]
	resNil    func(VOut) bool
}

func (p *fkResolve[KL, VL, VR, VOut]) Init(ctx *stream.Context[KL, Change[VOut]]) (err error) {
	p.left, err = stream.GetKeyValueStore[KL, ValueAndTimestamp[VL]](ctx, p.leftStore)
	return err
}

func (p *fkResolve[KL, VL, VR, VOut]) Process(ctx *stream.Context[KL, Change[VOut]], r stream.Record[KL, fkResponse[VR]]) error {
	row, found, err := p.left.Get(r.Key)
	if err != nil {
		return err
	}
	var cur *VL
	if found {
		cur = &row.Value
	}
	hash, err := fkHash(p.vs, cur)
	if err != nil {
		return err
	}
	if !bytes.Equal(hash, r.Value.hash) || (hash == nil) != (r.Value.hash == nil) {
		// Computed from a value the row no longer holds: a newer
		// subscription's answer is on its way.
		return nil
	}
	var res *VOut
	if cur != nil && (r.Value.right != nil || p.leftJoin) {
		v := p.joiner(*cur, r.Value.right)
		if p.resNil == nil || !p.resNil(v) {
			res = &v
		}
	}
	ctx.Forward(stream.Record[KL, Change[VOut]]{Key: r.Key, Value: Change[VOut]{New: res}, Timestamp: r.Timestamp, Headers: r.Headers})
	return nil
}
