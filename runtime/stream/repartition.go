package stream

import (
	"fmt"
	"maps"
	"reflect"

	"github.com/kgen-dev/kgen/runtime/serde"
)

// RepartitionOptions configures a repartition step.
type RepartitionOptions struct {
	// Partitions is the repartition topic's partition count. Zero takes
	// Kafka Streams' rule: the largest partition count among the source
	// topics of the sub-topology that writes to it.
	Partitions int32
	// LikeReaders, when Partitions is zero, gives the topic the partition
	// count of the other source topics of the sub-topology that reads it
	// (but for those that take it so too), rather than of the one that
	// writes it: for a topic a join reads
	// beside another side's topic (Kafka Streams makes such repartition
	// topics co-partitioned with the group's other topics). A foreign-key
	// join's subscription and response topics take it.
	LikeReaders bool
	// Source names the node that reads the topic back, when it is not the
	// step's name: a join's side repartitioned through
	// <app>-<join>-left-repartition is read by <join>-left-repartition-source,
	// as the join's own node <join>-left already has the step's name.
	Source string
}

// AddRepartition adds a repartition step named name (Kafka Streams'
// repartition topics): the records its parents forward are written, keyed by
// their key, to the internal topic <app>-<name>-repartition, and read back by
// a source node called name (or opts.Source), whose children form a new
// sub-topology. All
// records with one key then meet in one task, whichever partition they came
// from: put it after a processor that changes the key and before one whose
// state is per key. The sink half is the node name+"-repartition-sink".
//
// The App creates the topic at startup (cleanup.policy=delete, unlimited
// retention) and deletes its records below the committed offsets as it goes
// (at most every PurgeInterval), so it does not grow. Exactly-once covers the
// hop as it covers any sink and source.
func AddRepartition[K, V any](t *Topology, name string, ks serde.Serde[K], vs serde.Serde[V], opts RepartitionOptions, parents ...string) {
	if name == "" {
		t.errorf("repartition step with an empty name")
		return
	}
	if opts.Partitions < 0 {
		t.errorf("repartition %q: negative partition count %d", name, opts.Partitions)
	}
	sinkName := name + "-repartition-sink"
	// The blueprint's topic is a placeholder; each App names its own.
	placeholder := name + "-repartition"
	sink := &node{
		name: sinkName, kind: sinkKind, topic: placeholder, repartition: name, parents: parents,
		inKey: reflect.TypeFor[K](), inVal: reflect.TypeFor[V](),
	}
	sink.build = sinkBuilder(sink, serde.Serializer[K](ks), serde.Serializer[V](vs), nil)
	srcName := name
	if opts.Source != "" {
		srcName = opts.Source
	}
	source := &node{
		name: srcName, kind: sourceKind, topic: placeholder, repartition: name,
		outKey: reflect.TypeFor[K](), outVal: reflect.TypeFor[V](),
	}
	source.build = sourceBuilder(source, serde.Deserializer[K](ks), serde.Deserializer[V](vs), nil)
	if t.addNode(sink) && t.addNode(source) {
		t.repartitions = append(t.repartitions, repartitionDef{name: name, source: srcName, partitions: opts.Partitions, likeReaders: opts.LikeReaders})
	}
}

type repartitionDef struct {
	name        string // the step's: its topic and sink are named from it
	source      string // the node reading the topic back
	partitions  int32
	likeReaders bool
}

// repartitionTopic names a repartition step's topic, as Kafka Streams does.
func repartitionTopic(appID, name string) string { return appID + "-" + name + "-repartition" }

// forApp returns the topology an App with this id runs: t itself when it has
// no repartition step, otherwise a validated copy whose repartition nodes
// carry the App's topic names. t stays a blueprint any App can use.
func (t *Topology) forApp(appID string) (*Topology, error) {
	if err := t.Validate(); err != nil {
		return nil, err
	}
	if len(t.repartitions) == 0 {
		return t, nil
	}
	c := &Topology{
		nodes: map[string]*node{}, nodeOrder: t.nodeOrder, stores: maps.Clone(t.stores), storeOrder: t.storeOrder,
		errs: t.errs, repartitions: t.repartitions, globals: t.globals, globalOrder: t.globalOrder,
	}
	for name, n := range t.nodes {
		cp := *n
		if cp.repartition != "" {
			cp.topic = repartitionTopic(appID, cp.repartition)
		}
		c.nodes[name] = &cp
	}
	for name, s := range c.stores {
		cp := *s
		c.stores[name] = &cp
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return c, nil
}

// repartitionPartitions gives each repartition topic of a resolved topology
// its partition count: the one asked for, or the largest among the source
// topics of the sub-topology that writes it, following chains of
// repartitions. counts holds the other topics' counts; it gains the
// repartition topics'.
func (t *Topology) repartitionPartitions(counts map[string]int32) error {
	want := map[string]int32{} // repartition topic -> asked for
	writer := map[string]int{} // repartition topic -> sub-topology it takes its count from
	like := map[string]bool{}  // repartition topics taking their readers' count
	for _, r := range t.repartitions {
		src := t.nodes[r.source]
		want[src.topic] = r.partitions
		writer[src.topic] = t.nodes[r.name+"-repartition-sink"].sub
		if r.likeReaders {
			writer[src.topic] = src.sub
			like[src.topic] = r.partitions == 0
		}
	}
	for range len(want) + 1 {
		progress := false
		for topic, asked := range want {
			if _, done := counts[topic]; done {
				continue
			}
			if asked > 0 {
				counts[topic], progress = asked, true
				continue
			}
			var n int32
			known := true
			for _, up := range t.subs[writer[topic]].topics {
				// Topics that take their readers' count do not take it
				// from each other (two joins reading one table's store,
				// each through its own repartition topic), but from the
				// others.
				if up == topic || like[topic] && like[up] {
					continue
				}
				c, ok := counts[up]
				known = known && ok
				n = max(n, c)
			}
			if known && n > 0 {
				counts[topic], progress = n, true
			}
		}
		if !progress {
			break
		}
	}
	for topic := range want {
		if _, ok := counts[topic]; !ok {
			return fmt.Errorf("repartition topic %q: cannot work out its partition count from the topics upstream; give RepartitionOptions.Partitions", topic)
		}
	}
	return nil
}

// internalSourceTopic says whether a source topic is a repartition topic.
func (t *Topology) isRepartitionTopic(topic string) bool {
	for _, r := range t.repartitions {
		if t.nodes[r.source].topic == topic {
			return true
		}
	}
	return false
}
