package dev.kgen.oracle;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.Branched;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.EmitStrategy;
import org.apache.kafka.streams.kstream.GlobalKTable;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Joined;
import org.apache.kafka.streams.kstream.JoinWindows;
import org.apache.kafka.streams.kstream.KGroupedStream;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Named;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.SessionWindows;
import org.apache.kafka.streams.kstream.SlidingWindows;
import org.apache.kafka.streams.kstream.StreamJoined;
import org.apache.kafka.streams.kstream.Suppressed;
import org.apache.kafka.streams.kstream.TimeWindows;
import org.apache.kafka.streams.kstream.ValueJoiner;
import org.apache.kafka.streams.kstream.Windowed;
import org.apache.kafka.streams.kstream.WindowedSerdes;
import org.apache.kafka.streams.state.Stores;

/**
 * The oracle's topologies, by name. Each has a twin, built with kgen's
 * runtime/dsl, in ../../oracle_test.go: the same operators in the same order
 * with the same functions (the helpers below and their Go copies), so any
 * difference in what the output topics receive is a difference of semantics.
 * Input topics are "in" (and "in2"); outputs are "out" (and "out-*").
 * A "-nullable" topology reads keys and values that may be null: here with
 * functions that handle a null (Java's types are nullable anyway), in Go
 * with dsl.Nullable serdes and the same null-safe functions, so that a null
 * reaches the operators as nil. A topology without the suffix is read in Go
 * with serde.String and serde.Int64, which cannot say null: kgen's source
 * drops a null there, and its cases show where that equals Kafka Streams
 * (every key-based aggregation and table) and where it differs on purpose
 * (a stateless path, whose functions Kafka Streams would hand the null).
 */
final class Topologies {
    /** The foreign key of a "fk:rest" value, null without ':'. */
    private static final java.util.function.Function<String, String> FOREIGN_KEY =
            v -> v.indexOf(':') < 0 ? null : v.substring(0, v.indexOf(':'));

    private static final Serde<String> S = Serdes.String();
    private static final Serde<Long> L = Serdes.Long();

    // The windows of the windowed topologies, and the serdes of their keys.
    // Every time window here is 10 s long (a sliding window's size is its
    // time difference), so one time-windowed serde reads them all.
    private static final TimeWindows TUMBLING = TimeWindows.ofSizeWithNoGrace(Duration.ofSeconds(10));
    private static final TimeWindows TUMBLING_GRACE = TimeWindows.ofSizeAndGrace(Duration.ofSeconds(10), Duration.ofSeconds(5));
    private static final TimeWindows TUMBLING_GRACE2 = TimeWindows.ofSizeAndGrace(Duration.ofSeconds(10), Duration.ofSeconds(2));
    private static final TimeWindows HOPPING = TimeWindows.ofSizeWithNoGrace(Duration.ofSeconds(10)).advanceBy(Duration.ofSeconds(5));
    private static final SlidingWindows SLIDING = SlidingWindows.ofTimeDifferenceAndGrace(Duration.ofSeconds(10), Duration.ofSeconds(5));
    private static final SessionWindows SESSION = SessionWindows.ofInactivityGapAndGrace(Duration.ofSeconds(5), Duration.ofSeconds(10));
    private static final SessionWindows SESSION_GRACE2 = SessionWindows.ofInactivityGapAndGrace(Duration.ofSeconds(5), Duration.ofSeconds(2));
    private static final Serde<Windowed<String>> TW10 = WindowedSerdes.timeWindowedSerdeFrom(String.class, 10_000L);
    private static final Serde<Windowed<String>> SW = WindowedSerdes.sessionWindowedSerdeFrom(String.class);

    /** What a peek or foreach saw, in order: "key=value". */
    final List<String> peeked = new ArrayList<>();

    // ---- the functions: keep them trivial and identical to the Go twins ----

    /** The value's words: split on single spaces, empty words dropped. */
    static List<String> words(String v) {
        List<String> out = new ArrayList<>();
        for (String w : v.split(" ", -1)) {
            if (!w.isEmpty()) {
                out.add(w);
            }
        }
        return out;
    }

    /** The first character ("" for an empty string); ASCII only in the cases. */
    static String first(String v) {
        return v.isEmpty() ? "" : v.substring(0, 1);
    }

    static String parity(long v) {
        return v % 2 == 0 ? "even" : "odd";
    }

    static boolean longerThan3(String v) {
        return v.length() > 3;
    }

    /** Null-safe: false for a null. */
    static boolean longerThan3N(String v) {
        return v != null && v.length() > 3;
    }

    /** Null-safe: null for a null. */
    static String upperN(String v) {
        return v == null ? null : v.toUpperCase();
    }

    Topology build(String name) {
        StreamsBuilder b = new StreamsBuilder();
        switch (name) {
            case "filter":
                in(b).filter((k, v) -> longerThan3(v)).to("out", Produced.with(S, S));
                break;
            case "filterNot":
                in(b).filterNot((k, v) -> longerThan3(v)).to("out", Produced.with(S, S));
                break;
            case "map":
                in(b).map((k, v) -> KeyValue.pair(k.toUpperCase(), (long) v.length())).to("out", Produced.with(S, L));
                break;
            case "mapValues":
                in(b).mapValues((k, v) -> k + "=" + v.toUpperCase()).to("out", Produced.with(S, S));
                break;
            case "flatMap":
                in(b).flatMap((k, v) -> {
                    List<KeyValue<String, Long>> out = new ArrayList<>();
                    for (String w : words(v)) {
                        out.add(KeyValue.pair(w, (long) w.length()));
                    }
                    return out;
                }).to("out", Produced.with(S, L));
                break;
            case "flatMapValues":
                in(b).flatMapValues((k, v) -> words(v)).to("out", Produced.with(S, S));
                break;
            case "selectKey":
                in(b).selectKey((k, v) -> first(v)).to("out", Produced.with(S, S));
                break;
            case "peek":
                in(b).peek((k, v) -> peeked.add(k + "=" + v)).to("out", Produced.with(S, S));
                break;
            case "foreach":
                in(b).foreach((k, v) -> peeked.add(k + "=" + v));
                break;
            case "branch":
                in(b).split(Named.as("split-"))
                        .branch((k, v) -> v.length() > 5, Branched.withConsumer(s -> s.to("out-long", Produced.with(S, S)), "long"))
                        .branch((k, v) -> v.startsWith("a"), Branched.withConsumer(s -> s.to("out-a", Produced.with(S, S)), "a"))
                        .defaultBranch(Branched.withConsumer(s -> s.to("out-default", Produced.with(S, S)), "default"));
                break;
            case "branch-no-default":
                in(b).split(Named.as("split-"))
                        .branch((k, v) -> v.length() > 5, Branched.withConsumer(s -> s.to("out-long", Produced.with(S, S)), "long"))
                        .branch((k, v) -> v.startsWith("a"), Branched.withConsumer(s -> s.to("out-a", Produced.with(S, S)), "a"))
                        .noDefaultBranch();
                break;
            case "merge": {
                KStream<String, String> upper = in(b).mapValues(v -> v.toUpperCase());
                upper.merge(b.stream("in2", Consumed.with(S, S))).to("out", Produced.with(S, S));
                break;
            }
            case "filter-nullable":
                in(b).filter((k, v) -> longerThan3N(v)).to("out", Produced.with(S, S));
                break;
            case "filterNot-nullable":
                in(b).filterNot((k, v) -> longerThan3N(v)).to("out", Produced.with(S, S));
                break;
            case "map-nullable":
                // A null key becomes a real one; a null value stays null.
                in(b).map((k, v) -> KeyValue.pair(k == null ? "none" : k.toUpperCase(), v == null ? null : (long) v.length()))
                        .to("out", Produced.with(S, L));
                break;
            case "mapValues-nullable":
                in(b).mapValues((k, v) -> k + "=" + upperN(v)).to("out", Produced.with(S, S));
                break;
            case "flatMap-nullable":
                in(b).flatMap((k, v) -> {
                    List<KeyValue<String, Long>> out = new ArrayList<>();
                    if (v == null) {
                        out.add(KeyValue.pair(k, null));
                        return out;
                    }
                    for (String w : words(v)) {
                        out.add(KeyValue.pair(w, (long) w.length()));
                    }
                    return out;
                }).to("out", Produced.with(S, L));
                break;
            case "flatMapValues-nullable":
                in(b).flatMapValues(v -> v == null ? new ArrayList<String>() : words(v)).to("out", Produced.with(S, S));
                break;
            case "selectKey-nullable":
                in(b).selectKey((k, v) -> v == null ? null : first(v)).to("out", Produced.with(S, S));
                break;
            case "peek-nullable":
                in(b).peek((k, v) -> peeked.add(k + "=" + v)).to("out", Produced.with(S, S));
                break;
            case "foreach-nullable":
                in(b).foreach((k, v) -> peeked.add(k + "=" + v));
                break;
            case "branch-nullable":
                in(b).split(Named.as("split-"))
                        .branch((k, v) -> v == null, Branched.withConsumer(s -> s.to("out-novalue", Produced.with(S, S)), "novalue"))
                        .branch((k, v) -> k == null, Branched.withConsumer(s -> s.to("out-nokey", Produced.with(S, S)), "nokey"))
                        .defaultBranch(Branched.withConsumer(s -> s.to("out-default", Produced.with(S, S)), "default"));
                break;
            case "merge-nullable": {
                KStream<String, String> upper = in(b).mapValues(v -> upperN(v));
                upper.merge(b.stream("in2", Consumed.with(S, S))).to("out", Produced.with(S, S));
                break;
            }
            case "count-groupByKey":
            case "count-groupByKey-nullable":
                in(b).groupByKey(Grouped.with(S, S)).count().toStream().to("out", Produced.with(S, L));
                break;
            case "reduce-groupByKey":
            case "reduce-groupByKey-nullable":
                b.stream("in", Consumed.with(S, L)).groupByKey(Grouped.with(S, L)).reduce(Long::sum)
                        .toStream().to("out", Produced.with(S, L));
                break;
            case "aggregate-groupByKey":
            case "aggregate-groupByKey-nullable":
                in(b).groupByKey(Grouped.with(S, S))
                        .aggregate(() -> 100L, (k, v, agg) -> agg + v.length(), Materialized.with(S, L))
                        .toStream().to("out", Produced.with(S, L));
                break;
            case "count-groupBy":
            case "count-groupBy-nullable":
                in(b).groupBy((k, v) -> v, Grouped.with(S, S)).count().toStream().to("out", Produced.with(S, L));
                break;
            case "reduce-groupBy":
                b.stream("in", Consumed.with(S, L)).groupBy((k, v) -> first(k), Grouped.with(S, L)).reduce(Long::sum)
                        .toStream().to("out", Produced.with(S, L));
                break;
            case "aggregate-groupBy":
                in(b).groupBy((k, v) -> first(k), Grouped.with(S, S))
                        .aggregate(() -> 100L, (k, v, agg) -> agg + v.length(), Materialized.with(S, L))
                        .toStream().to("out", Produced.with(S, L));
                break;
            case "aggregate-groupBy-nullable":
                // A null key groups under a null key, which the aggregation drops.
                in(b).groupBy((k, v) -> k == null ? null : first(k), Grouped.with(S, S))
                        .aggregate(() -> 100L, (k, v, agg) -> agg + v.length(), Materialized.with(S, L))
                        .toStream().to("out", Produced.with(S, L));
                break;
            case "wordcount":
                in(b).flatMapValues(v -> words(v)).groupBy((k, w) -> w, Grouped.with(S, S)).count()
                        .toStream().to("out", Produced.with(S, L));
                break;
            case "repartition-chain":
                in(b).groupBy((k, v) -> v, Grouped.with(S, S)).count()
                        .toStream().groupBy((w, n) -> first(w), Grouped.with(S, L)).reduce(Long::sum)
                        .toStream().to("out", Produced.with(S, L));
                break;
            case "reduce-delete":
                // A reducer's null deletes the key's aggregate: a tombstone out, and
                // the next value starts afresh.
                b.stream("in", Consumed.with(S, L)).groupByKey(Grouped.with(S, L))
                        .reduce((agg, v) -> agg + v == 0 ? null : agg + v)
                        .toStream().to("out", Produced.with(S, L));
                break;
            case "table-reduce-delete":
                b.table("in", Consumed.with(S, L))
                        .groupBy((k, v) -> KeyValue.pair(parity(v), v), Grouped.with(S, L))
                        .reduce((agg, v) -> agg + v, (agg, v) -> agg - v == 0 ? null : agg - v)
                        .toStream().to("out", Produced.with(S, L));
                break;
            // Joins with tables: "in" is the stream (or the left table), "in2"
            // the table (the right table). A joiner writes "left/right", "null"
            // for a side with no row.
            case "join-table-stream-inner":
            case "join-table-stream-inner-nullable":
                b.stream("in", Consumed.with(S, S))
                        .join(b.table("in2", Consumed.with(S, S)), (v, row) -> v + "/" + row, Joined.with(S, S, S))
                        .to("out", Produced.with(S, S));
                break;
            case "join-table-stream-left":
            case "join-table-stream-left-nullable":
                b.stream("in", Consumed.with(S, S))
                        .leftJoin(b.table("in2", Consumed.with(S, S)), (v, row) -> v + "/" + row, Joined.with(S, S, S))
                        .to("out", Produced.with(S, S));
                break;
            case "verjoin-inner":
            case "verjoin-left":
            case "verjoin-inner-grace":
            case "verjoin-left-grace": {
                // A stream joined with a versioned table (history 10 s): the
                // lookup is as of the stream record's time (KIP-914); the
                // "-grace" ones buffer stream records for 2 s first (KIP-923).
                KTable<String, String> vt = b.table("in2", Consumed.with(S, S),
                        Materialized.<String, String>as(Stores.persistentVersionedKeyValueStore("vt", Duration.ofSeconds(10)))
                                .withKeySerde(S).withValueSerde(S));
                Joined<String, String, String> joined = Joined.with(S, S, S);
                if (name.endsWith("-grace")) {
                    joined = joined.withGracePeriod(Duration.ofSeconds(2));
                }
                KStream<String, String> in = b.stream("in", Consumed.with(S, S));
                KStream<String, String> out = name.startsWith("verjoin-left")
                        ? in.leftJoin(vt, (v, row) -> v + "/" + row, joined)
                        : in.join(vt, (v, row) -> v + "/" + row, joined);
                out.to("out", Produced.with(S, S));
                break;
            }
            case "join-table-stream-rekeyed":
                // The stream re-keyed by its value's first character before it
                // joins: Kafka Streams reads it through a repartition topic it
                // inserts, co-partitioned with the table's.
                b.stream("in", Consumed.with(S, S)).selectKey((k, v) -> first(v))
                        .join(b.table("in2", Consumed.with(S, S)), (v, row) -> v + "/" + row, Joined.with(S, S, S))
                        .to("out", Produced.with(S, S));
                break;
            case "join-table-table-inner":
                b.table("in", Consumed.with(S, S))
                        .join(b.table("in2", Consumed.with(S, S)), (l, r) -> l + "/" + r)
                        .toStream().to("out", Produced.with(S, S));
                break;
            case "join-fk-inner":
                // A foreign-key join: an "in" row's value "fk:rest" names the
                // "in2" row it joins; a value without ':' names none.
                b.table("in", Consumed.with(S, S))
                        .join(b.table("in2", Consumed.with(S, S)), FOREIGN_KEY, (l, r) -> l + "/" + r)
                        .toStream().to("out", Produced.with(S, S));
                break;
            case "join-fk-left":
                b.table("in", Consumed.with(S, S))
                        .leftJoin(b.table("in2", Consumed.with(S, S)), FOREIGN_KEY, (l, r) -> l + "/" + r)
                        .toStream().to("out", Produced.with(S, S));
                break;
            case "join-fk-left-count":
                // The foreign-key join's old values reach an aggregation: the
                // count of orders per joined customer row. (Without
                // Materialized Kafka Streams fails: the store it then adds to
                // compute old values has no serdes.)
                b.table("in", Consumed.with(S, S))
                        .leftJoin(b.table("in2", Consumed.with(S, S)), FOREIGN_KEY, (l, r) -> l + "/" + r, Materialized.with(S, S))
                        .groupBy((k, v) -> KeyValue.pair(v.substring(v.indexOf('/') + 1), k), Grouped.with(S, S))
                        .count().toStream().to("out", Produced.with(S, L));
                break;
            case "join-table-table-left":
                b.table("in", Consumed.with(S, S))
                        .leftJoin(b.table("in2", Consumed.with(S, S)), (l, r) -> l + "/" + r)
                        .toStream().to("out", Produced.with(S, S));
                break;
            case "join-table-table-outer":
                b.table("in", Consumed.with(S, S))
                        .outerJoin(b.table("in2", Consumed.with(S, S)), (l, r) -> l + "/" + r)
                        .toStream().to("out", Produced.with(S, S));
                break;
            case "join-table-table-left-count":
                // The join's old values reach an aggregation: the count of
                // joined rows per right value.
                b.table("in", Consumed.with(S, S))
                        .leftJoin(b.table("in2", Consumed.with(S, S)), (l, r) -> l + "/" + r)
                        .groupBy((k, v) -> KeyValue.pair(v.substring(v.indexOf('/') + 1), k), Grouped.with(S, S))
                        .count().toStream().to("out", Produced.with(S, L));
                break;
            case "join-table-table-materialized": {
                // A table join's result, materialized, enriches the stream "in3".
                KTable<String, String> joined = b.table("in", Consumed.with(S, S))
                        .join(b.table("in2", Consumed.with(S, S)), (l, r) -> l + "/" + r, Materialized.with(S, S));
                joined.toStream().to("out-joined", Produced.with(S, S));
                b.stream("in3", Consumed.with(S, S))
                        .join(joined, (v, row) -> v + "/" + row, Joined.with(S, S, S))
                        .to("out", Produced.with(S, S));
                break;
            }
            case "join-table-stream-count": {
                // The table is an aggregation: the count of "in2" per key.
                KTable<String, Long> counts = b.stream("in2", Consumed.with(S, S)).groupByKey(Grouped.with(S, S)).count();
                b.stream("in", Consumed.with(S, S))
                        .join(counts, (v, n) -> v + "/" + n, Joined.with(S, S, L))
                        .to("out", Produced.with(S, S));
                break;
            }
            case "table":
            case "table-nullable":
                b.table("in", Consumed.with(S, S), Materialized.as("table-store"))
                        .toStream().to("out", Produced.with(S, S));
                break;
            case "versioned-table":
                // A versioned table (history retention 100 ms): what its
                // toStream emits for in-order, out-of-order and too-old updates.
                b.table("in", Consumed.with(S, S),
                                Materialized.<String, String>as(Stores.persistentVersionedKeyValueStore("vt", Duration.ofMillis(100)))
                                        .withKeySerde(S).withValueSerde(S))
                        .toStream().to("out", Produced.with(S, S));
                break;
            case "table-count":
                b.table("in", Consumed.with(S, S))
                        .groupBy((k, v) -> KeyValue.pair(v, k), Grouped.with(S, S))
                        .count().toStream().to("out", Produced.with(S, L));
                break;
            case "table-reduce":
                b.table("in", Consumed.with(S, L))
                        .groupBy((k, v) -> KeyValue.pair(parity(v), v), Grouped.with(S, L))
                        .reduce((agg, v) -> agg + v, (agg, v) -> agg - v)
                        .toStream().to("out", Produced.with(S, L));
                break;
            case "table-aggregate":
                b.table("in", Consumed.with(S, S))
                        .groupBy((k, v) -> KeyValue.pair(v, k), Grouped.with(S, S))
                        .aggregate(() -> 100L, (k, v, agg) -> agg + v.length(), (k, v, agg) -> agg - v.length(),
                                Materialized.with(S, L))
                        .toStream().to("out", Produced.with(S, L));
                break;
            case "table-groupBy-nullable":
                // A row whose value is "-" groups under a null key, one whose
                // value is "?" gives a null value: both halves are left out.
                b.table("in", Consumed.with(S, S))
                        .groupBy((k, v) -> KeyValue.pair(v.equals("-") ? null : v, v.equals("?") ? null : k), Grouped.with(S, S))
                        .count().toStream().to("out", Produced.with(S, L));
                break;
            case "table-groupBy-nullable-aggregate":
                b.table("in", Consumed.with(S, S))
                        .groupBy((k, v) -> KeyValue.pair(v.equals("-") ? null : v, v.equals("?") ? null : k), Grouped.with(S, S))
                        .aggregate(() -> 100L, (k, v, agg) -> agg + v.length(), (k, v, agg) -> agg - v.length(),
                                Materialized.with(S, L))
                        .toStream().to("out", Produced.with(S, L));
                break;
            case "table-groupBy-nullable-reduce":
                // A negative row groups under a null key, a zero row gives a null value.
                b.table("in", Consumed.with(S, L))
                        .groupBy((k, v) -> KeyValue.pair(v < 0 ? null : parity(v), v == 0 ? null : v), Grouped.with(S, L))
                        .reduce((agg, v) -> agg + v, (agg, v) -> agg - v)
                        .toStream().to("out", Produced.with(S, L));
                break;
            // ---- windowed aggregations (caching off: every update is emitted) ----
            // Their outputs are written with Kafka Streams' windowed serdes, so
            // a key is the grouping key and its window (the runner reads
            // start and end back; a time window's end from the size).
            case "tumbling-count":
                in(b).groupByKey(Grouped.with(S, S)).windowedBy(TUMBLING).count()
                        .toStream().to("out", Produced.with(TW10, L));
                break;
            case "tumbling-grace-count":
                in(b).groupByKey(Grouped.with(S, S)).windowedBy(TUMBLING_GRACE).count()
                        .toStream().to("out", Produced.with(TW10, L));
                break;
            case "hopping-count":
                in(b).groupByKey(Grouped.with(S, S)).windowedBy(HOPPING).count()
                        .toStream().to("out", Produced.with(TW10, L));
                break;
            case "sliding-count":
                in(b).groupByKey(Grouped.with(S, S)).windowedBy(SLIDING).count()
                        .toStream().to("out", Produced.with(TW10, L));
                break;
            case "session-count":
                in(b).groupByKey(Grouped.with(S, S)).windowedBy(SESSION).count()
                        .toStream().to("out", Produced.with(SW, L));
                break;
            case "tumbling-reduce":
                b.stream("in", Consumed.with(S, L)).groupByKey(Grouped.with(S, L)).windowedBy(TUMBLING).reduce(Long::sum)
                        .toStream().to("out", Produced.with(TW10, L));
                break;
            case "tumbling-aggregate":
                in(b).groupByKey(Grouped.with(S, S)).windowedBy(TUMBLING)
                        .aggregate(() -> 100L, (k, v, agg) -> agg + v.length(), Materialized.with(S, L))
                        .toStream().to("out", Produced.with(TW10, L));
                break;
            case "session-reduce":
                b.stream("in", Consumed.with(S, L)).groupByKey(Grouped.with(S, L)).windowedBy(SESSION).reduce(Long::sum)
                        .toStream().to("out", Produced.with(SW, L));
                break;
            case "session-aggregate":
                // The merger adds two sessions' aggregates when a record bridges them.
                in(b).groupByKey(Grouped.with(S, S)).windowedBy(SESSION)
                        .aggregate(() -> 100L, (k, v, agg) -> agg + v.length(), (k, a1, a2) -> a1 + a2, Materialized.with(S, L))
                        .toStream().to("out", Produced.with(SW, L));
                break;
            case "tumbling-emit-final":
                in(b).groupByKey(Grouped.with(S, S)).windowedBy(TUMBLING_GRACE2).emitStrategy(EmitStrategy.onWindowClose())
                        .count().toStream().to("out", Produced.with(TW10, L));
                break;
            case "session-emit-final":
                in(b).groupByKey(Grouped.with(S, S)).windowedBy(SESSION_GRACE2).emitStrategy(EmitStrategy.onWindowClose())
                        .count().toStream().to("out", Produced.with(SW, L));
                break;
            case "tumbling-suppress":
                in(b).groupByKey(Grouped.with(S, S)).windowedBy(TUMBLING_GRACE2).count()
                        .suppress(Suppressed.untilWindowCloses(Suppressed.BufferConfig.unbounded()))
                        .toStream().to("out", Produced.with(TW10, L));
                break;
            case "emit-final-vs-suppress": {
                // The same windows and input, closed two ways, with the store's
                // default retention (the windows' size plus grace).
                KGroupedStream<String, String> g = in(b).groupByKey(Grouped.with(S, S));
                g.windowedBy(TUMBLING).emitStrategy(EmitStrategy.onWindowClose()).count()
                        .toStream().to("out-final", Produced.with(TW10, L));
                g.windowedBy(TUMBLING).count()
                        .suppress(Suppressed.untilWindowCloses(Suppressed.BufferConfig.unbounded()))
                        .toStream().to("out-suppress", Produced.with(TW10, L));
                break;
            }
            case "join-ss-inner":
                joinSS(b, "inner", JOIN_SS);
                break;
            case "join-ss-left":
            case "join-ss-left-nullable":
                joinSS(b, "left", JOIN_SS);
                break;
            case "join-ss-outer":
            case "join-ss-outer-nullable":
                joinSS(b, "outer", JOIN_SS);
                break;
            case "join-ss-rekeyed":
                // The left stream re-keyed by its value's first character before
                // it joins: Kafka Streams reads it through a repartition topic.
                b.stream("left", Consumed.with(S, S)).selectKey((k, v) -> first(v))
                        .join(b.stream("right", Consumed.with(S, S)), (x, y) -> x + "|" + y, JOIN_SS, StreamJoined.with(S, S, S))
                        .to("out", Produced.with(S, S));
                break;
            case "join-ss-inner-zero":
                joinSS(b, "inner", JoinWindows.ofTimeDifferenceWithNoGrace(Duration.ZERO));
                break;
            case "join-ss-outer-asym":
                joinSS(b, "outer", JOIN_SS_ASYM);
                break;
            case "global-join-nullable": {
                // A stream joined with a global table read from "table" by the
                // key its value names; the value "none" maps to a null key.
                GlobalKTable<String, String> table = b.globalTable("table", Consumed.with(S, S));
                b.stream("in", Consumed.with(S, S))
                        .join(table, (k, v) -> "none".equals(v) ? null : v, (v, row) -> v + ":" + row)
                        .to("out", Produced.with(S, S));
                break;
            }
            case "global-leftJoin-nullable": {
                GlobalKTable<String, String> table = b.globalTable("table", Consumed.with(S, S));
                b.stream("in", Consumed.with(S, S))
                        .leftJoin(table, (k, v) -> "none".equals(v) ? null : v, (v, row) -> v + ":" + (row == null ? "-" : row))
                        .to("out", Produced.with(S, S));
                break;
            }
            default:
                throw new IllegalArgumentException("unknown topology " + name);
        }
        return b.build();
    }

    private static KStream<String, String> in(StreamsBuilder b) {
        return b.stream("in", Consumed.with(S, S));
    }

    // ---- stream-stream joins (join-ss-*) ----

    /** 10 s before and after, 5 s grace. */
    private static final JoinWindows JOIN_SS = JoinWindows.ofTimeDifferenceAndGrace(Duration.ofSeconds(10), Duration.ofSeconds(5));
    /** 5 s before, 10 s after, 2 s grace. */
    private static final JoinWindows JOIN_SS_ASYM = JoinWindows.ofTimeDifferenceAndGrace(Duration.ZERO, Duration.ofSeconds(2))
            .before(Duration.ofSeconds(5)).after(Duration.ofSeconds(10));

    /** "left" joined with "right" in w, kind inner, left or outer, "l|r" (a missing side: "null") to "out". */
    private static void joinSS(StreamsBuilder b, String kind, JoinWindows w) {
        KStream<String, String> l = b.stream("left", Consumed.with(S, S));
        KStream<String, String> r = b.stream("right", Consumed.with(S, S));
        ValueJoiner<String, String, String> j = (x, y) -> x + "|" + y;
        StreamJoined<String, String, String> sj = StreamJoined.with(S, S, S);
        // if, not switch: TestTwins reads every case label as a topology
        KStream<String, String> out = kind.equals("inner") ? l.join(r, j, w, sj)
                : kind.equals("left") ? l.leftJoin(r, j, w, sj)
                : l.outerJoin(r, j, w, sj);
        out.to("out", Produced.with(S, S));
    }
}
