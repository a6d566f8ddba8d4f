package dev.kgen.bench;

import java.lang.management.ManagementFactory;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerInterceptor;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.CloseOptions;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.EmitStrategy;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.JoinWindows;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.StreamJoined;
import org.apache.kafka.streams.kstream.TimeWindowedKStream;
import org.apache.kafka.streams.kstream.TimeWindows;
import org.apache.kafka.streams.kstream.WindowedSerdes;
import org.apache.kafka.streams.processor.StateRestoreListener;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.state.BuiltInDslStoreSuppliers;
import org.apache.kafka.streams.state.KeyValueBytesStoreSupplier;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.Stores;
import org.apache.kafka.streams.state.WindowStore;

/**
 * The Kafka Streams contender of kgen's benchmark (bench/). It takes the same
 * flags as the Go contenders (bench/internal/protocol), runs one workload until
 * every input record is processed and every expected output acknowledged, closes
 * cleanly and prints the result line the harness parses.
 *
 * <p>source-only, passthrough and kv-put use the Processor API; count uses the
 * DSL (groupByKey().count()), the windowed counts
 * groupByKey().windowedBy(TimeWindows.ofSizeAndGrace(1 min, 10 s)).count().
 * Acknowledgements are observed by a producer interceptor; input records by
 * the first processor (a peek for the DSL). The restore workloads restore a
 * store from the changelog the harness wrote; a restore listener stamps them.
 */
public final class KStreamsBench {
    static final String NAME = "kstreams";
    static final String MARKER = "KGENBENCH-RESULT ";

    // Progress, shared with the processors and the interceptor (one JVM per run).
    static final AtomicLong consumed = new AtomicLong();
    static final AtomicLong sinkAcks = new AtomicLong();
    static final AtomicLong changelogAcks = new AtomicLong();
    static final AtomicLong firstRecordNs = new AtomicLong();
    static final AtomicLong lastRecordNs = new AtomicLong();
    static final AtomicLong firstOutputNs = new AtomicLong();
    static final AtomicLong lastOutputNs = new AtomicLong();
    static final AtomicLong doneNs = new AtomicLong();
    static final AtomicLong cpuAtFirstRecordNs = new AtomicLong();
    static final AtomicLong cpuAtDoneNs = new AtomicLong();
    static final AtomicReference<Throwable> failure = new AtomicReference<>();
    static CountDownLatch done;
    static volatile long inputs;
    static volatile long expectSink;
    static volatile long expectChangelog;
    static volatile String sinkTopic = "";
    static volatile String changelogTopic = "";

    static long nowNs() {
        Instant i = Instant.now();
        return i.getEpochSecond() * 1_000_000_000L + i.getNano();
    }

    /** The process's CPU time so far (user+sys), in nanoseconds. */
    static long cpuNs() {
        java.lang.management.OperatingSystemMXBean os = ManagementFactory.getOperatingSystemMXBean();
        if (os instanceof com.sun.management.OperatingSystemMXBean) {
            return ((com.sun.management.OperatingSystemMXBean) os).getProcessCpuTime();
        }
        return 0;
    }

    static void input() {
        long n = consumed.incrementAndGet();
        if (n == 1) {
            cpuAtFirstRecordNs.set(cpuNs());
            firstRecordNs.compareAndSet(0, nowNs());
        }
        if (n == inputs) {
            lastRecordNs.set(nowNs());
            done.countDown();
        }
    }

    static void ack(AtomicLong counter, long want) {
        long n = counter.incrementAndGet();
        if (n == 1) {
            firstOutputNs.compareAndSet(0, nowNs());
        }
        if (n == want) {
            lastOutputNs.accumulateAndGet(nowNs(), Math::max);
            done.countDown();
        }
    }

    /** Counts the broker's acknowledgements of sink and changelog records. */
    public static final class AckInterceptor implements ProducerInterceptor<byte[], byte[]> {
        @Override
        public ProducerRecord<byte[], byte[]> onSend(ProducerRecord<byte[], byte[]> record) {
            return record;
        }

        @Override
        public void onAcknowledgement(RecordMetadata metadata, Exception exception) {
            if (exception != null || metadata == null) {
                return; // Kafka Streams fails the task on a produce error
            }
            String topic = metadata.topic();
            if (topic.equals(sinkTopic)) {
                ack(sinkAcks, expectSink);
            } else if (topic.equals(changelogTopic)) {
                ack(changelogAcks, expectChangelog);
            }
        }

        @Override
        public void close() {}

        @Override
        public void configure(Map<String, ?> configs) {}
    }

    /**
     * Stamps the restore workloads: the start of the first changelog
     * partition's restoration, and the end once every entry is restored.
     */
    static final class RestoreStamps implements StateRestoreListener {
        @Override
        public void onRestoreStart(TopicPartition tp, String store, long start, long end) {
            if (firstRecordNs.compareAndSet(0, nowNs())) {
                cpuAtFirstRecordNs.set(cpuNs());
            }
        }

        @Override
        public void onBatchRestored(TopicPartition tp, String store, long batchEnd, long n) {}

        @Override
        public void onRestoreEnd(TopicPartition tp, String store, long total) {
            long before = consumed.getAndAdd(total);
            if (before < inputs && before + total >= inputs) {
                lastRecordNs.set(nowNs());
                done.countDown();
            }
        }
    }

    /** Counts records; forwards nothing. */
    static final class CountRecords implements Processor<byte[], byte[], Void, Void> {
        @Override
        public void process(Record<byte[], byte[]> record) {
            input();
        }
    }

    /** Forwards every record unchanged. */
    static final class Pass implements Processor<byte[], byte[], byte[], byte[]> {
        private ProcessorContext<byte[], byte[]> context;

        @Override
        public void init(ProcessorContext<byte[], byte[]> context) {
            this.context = context;
        }

        @Override
        public void process(Record<byte[], byte[]> record) {
            input();
            context.forward(record);
        }
    }

    /** Puts every record into the kv store. */
    static final class Put implements Processor<byte[], byte[], Void, Void> {
        private KeyValueStore<Bytes, byte[]> store;

        @Override
        public void init(ProcessorContext<Void, Void> context) {
            store = context.getStateStore("kv");
        }

        @Override
        public void process(Record<byte[], byte[]> record) {
            input();
            store.put(Bytes.wrap(record.key()), record.value());
        }
    }

    static Topology topology(Map<String, String> a, boolean persistent) {
        String source = a.get("source");
        String sink = a.get("sink");
        String workload = a.get("workload");
        switch (workload) {
            case "source-only": {
                Topology t = new Topology();
                t.addSource("in", new ByteArrayDeserializer(), new ByteArrayDeserializer(), source);
                t.addProcessor("count-records", CountRecords::new, "in");
                return t;
            }
            case "passthrough": {
                Topology t = new Topology();
                t.addSource("in", new ByteArrayDeserializer(), new ByteArrayDeserializer(), source);
                t.addProcessor("pass", Pass::new, "in");
                t.addSink("out", sink, new ByteArraySerializer(), new ByteArraySerializer(), "pass");
                return t;
            }
            case "kv-put": {
                Topology t = new Topology();
                t.addSource("in", new ByteArrayDeserializer(), new ByteArrayDeserializer(), source);
                t.addProcessor("put", Put::new, "in");
                KeyValueBytesStoreSupplier supplier = persistent
                        ? Stores.persistentKeyValueStore("kv")
                        : Stores.inMemoryKeyValueStore("kv");
                // Logging is on and caching off by default: one changelog record per put.
                t.addStateStore(Stores.keyValueStoreBuilder(supplier, Serdes.Bytes(), Serdes.ByteArray()), "put");
                return t;
            }
            case "count": {
                StreamsBuilder b = new StreamsBuilder();
                KeyValueBytesStoreSupplier supplier = persistent
                        ? Stores.persistentTimestampedKeyValueStore("counts")
                        : Stores.inMemoryKeyValueStore("counts");
                b.stream(source, Consumed.with(Serdes.String(), Serdes.ByteArray()))
                        .peek((k, v) -> input())
                        .groupByKey()
                        .count(Materialized.<String, Long>as(supplier)
                                .withKeySerde(Serdes.String())
                                .withValueSerde(Serdes.Long()))
                        .toStream()
                        .to(sink, Produced.with(Serdes.String(), Serdes.Long()));
                return b.build();
            }
            case "windowed-count":
            case "windowed-count-final": {
                // The same windows as bench/internal/protocol (WindowSize, WindowGrace).
                TimeWindows windows = TimeWindows.ofSizeAndGrace(Duration.ofMinutes(1), Duration.ofSeconds(10));
                StreamsBuilder b = new StreamsBuilder();
                TimeWindowedKStream<String, byte[]> windowed = b.stream(source, Consumed.with(Serdes.String(), Serdes.ByteArray()))
                        .peek((k, v) -> input())
                        .groupByKey()
                        .windowedBy(windows);
                if (workload.equals("windowed-count-final")) {
                    windowed = windowed.emitStrategy(EmitStrategy.onWindowClose());
                }
                windowed.count(Materialized.<String, Long, WindowStore<Bytes, byte[]>>as("windows")
                                .withKeySerde(Serdes.String())
                                .withValueSerde(Serdes.Long())
                                .withStoreType(persistent
                                        ? new BuiltInDslStoreSuppliers.RocksDBDslStoreSuppliers()
                                        : new BuiltInDslStoreSuppliers.InMemoryDslStoreSuppliers()))
                        .toStream()
                        .to(sink, Produced.with(WindowedSerdes.timeWindowedSerdeFrom(String.class, windows.size()), Serdes.Long()));
                return b.build();
            }
            case "restore-kv": {
                // Only the store matters: it is restored before the (empty)
                // input is read. Not timestamped: the harness wrote plain values.
                Topology t = new Topology();
                t.addSource("in", new ByteArrayDeserializer(), new ByteArrayDeserializer(), source);
                t.addProcessor("put", Put::new, "in");
                KeyValueBytesStoreSupplier supplier = persistent
                        ? Stores.persistentKeyValueStore("kv")
                        : Stores.inMemoryKeyValueStore("kv");
                t.addStateStore(Stores.keyValueStoreBuilder(supplier, Serdes.Bytes(), Serdes.ByteArray()), "put");
                return t;
            }
            case "restore-window": {
                // A retention long enough that no entry is dropped as expired.
                Duration retention = Duration.ofDays(7);
                Topology t = new Topology();
                t.addSource("in", new ByteArrayDeserializer(), new ByteArrayDeserializer(), source);
                t.addProcessor("none", CountRecords::new, "in");
                t.addStateStore(Stores.windowStoreBuilder(persistent
                                ? Stores.persistentWindowStore("windows", retention, Duration.ofMinutes(1), false)
                                : Stores.inMemoryWindowStore("windows", retention, Duration.ofMinutes(1), false),
                        Serdes.String(), Serdes.Long()), "none");
                return t;
            }
            case "ops-passthrough": {
                // passthrough in the DSL: filter (every record passes),
                // then mapValues (the value itself).
                StreamsBuilder b = new StreamsBuilder();
                b.stream(source, Consumed.with(Serdes.ByteArray(), Serdes.ByteArray()))
                        .peek((k, v) -> input())
                        .filter((k, v) -> v != null)
                        .mapValues(v -> v)
                        .to(sink, Produced.with(Serdes.ByteArray(), Serdes.ByteArray()));
                return b.build();
            }
            case "repartition-count":
            case "ops-repartition-count": {
                // Already the DSL form. groupBy re-keys through the repartition topic
                // <app>-by-group-repartition, then counts per new key.
                StreamsBuilder b = new StreamsBuilder();
                KeyValueBytesStoreSupplier supplier = persistent
                        ? Stores.persistentTimestampedKeyValueStore("counts")
                        : Stores.inMemoryKeyValueStore("counts");
                b.stream(source, Consumed.with(Serdes.ByteArray(), Serdes.ByteArray()))
                        .peek((k, v) -> input())
                        .groupBy((k, v) -> group(v), Grouped.with("by-group", Serdes.String(), Serdes.ByteArray()))
                        .count(Materialized.<String, Long>as(supplier)
                                .withKeySerde(Serdes.String())
                                .withValueSerde(Serdes.Long()))
                        .toStream()
                        .to(sink, Produced.with(Serdes.String(), Serdes.Long()));
                return b.build();
            }
            case "stream-table-join": {
                // KStream#join(KTable): the table's rows in a changelogged
                // store (no source-topic optimization), each stream record
                // joined with the row of its key, value ‖ row.
                StreamsBuilder b = new StreamsBuilder();
                KeyValueBytesStoreSupplier supplier = persistent
                        ? Stores.persistentTimestampedKeyValueStore("table")
                        : Stores.inMemoryKeyValueStore("table");
                KTable<String, byte[]> table = b.table(a.get("other"), Consumed.with(Serdes.String(), Serdes.ByteArray()),
                        Materialized.<String, byte[]>as(supplier)
                                .withKeySerde(Serdes.String())
                                .withValueSerde(Serdes.ByteArray()));
                b.stream(source, Consumed.with(Serdes.String(), Serdes.ByteArray()))
                        .peek((k, v) -> input())
                        .join(table, KStreamsBench::joinValue)
                        .to(sink, Produced.with(Serdes.String(), Serdes.ByteArray()));
                return b.build();
            }
            case "stream-stream-join": {
                // KStream#join(KStream) in JoinWindows of one minute, no
                // grace (bench/internal/protocol.JoinWindow): the source on
                // the left, the harness's right stream on the right; both
                // sides' window stores changelogged (the default).
                StreamsBuilder b = new StreamsBuilder();
                KStream<String, byte[]> right = b.stream(a.get("other"), Consumed.with(Serdes.String(), Serdes.ByteArray()));
                b.stream(source, Consumed.with(Serdes.String(), Serdes.ByteArray()))
                        .peek((k, v) -> input())
                        .join(right, KStreamsBench::joinValue,
                                JoinWindows.ofTimeDifferenceWithNoGrace(Duration.ofMinutes(1)),
                                StreamJoined.with(Serdes.String(), Serdes.ByteArray(), Serdes.ByteArray())
                                        .withDslStoreSuppliers(persistent
                                                ? new BuiltInDslStoreSuppliers.RocksDBDslStoreSuppliers()
                                                : new BuiltInDslStoreSuppliers.InMemoryDslStoreSuppliers()))
                        .to(sink, Produced.with(Serdes.String(), Serdes.ByteArray()));
                return b.build();
            }
            default:
                throw new IllegalArgumentException("unknown workload " + workload);
        }
    }

    /** A join's output value, as bench/internal/protocol.JoinValue: value, then row. */
    static byte[] joinValue(byte[] value, byte[] row) {
        byte[] out = new byte[value.length + row.length];
        System.arraycopy(value, 0, out, 0, value.length);
        System.arraycopy(row, 0, out, value.length, row.length);
        return out;
    }

    /** The new key of a repartition-count record, as bench/internal/protocol.Group. */
    static String group(byte[] value) {
        int g = value.length > 0 ? (value[0] & 0xff) % 100 : 0;
        return String.format("g%02d", g);
    }

    /**
     * Counts down {@code done} once {@code group} has committed, for every
     * partition of {@code topic}, the end offset it had when the watch began.
     */
    static void watchCommitted(String brokers, String group, String topic) {
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, brokers);
        try (Admin admin = Admin.create(p)) {
            List<TopicPartition> parts = new ArrayList<>();
            for (TopicPartitionInfo info : admin.describeTopics(List.of(topic)).allTopicNames().get().get(topic).partitions()) {
                parts.add(new TopicPartition(topic, info.partition()));
            }
            Map<TopicPartition, OffsetSpec> latest = new HashMap<>();
            for (TopicPartition tp : parts) {
                latest.put(tp, OffsetSpec.latest());
            }
            Map<TopicPartition, Long> ends = new HashMap<>();
            admin.listOffsets(latest).all().get().forEach((tp, info) -> ends.put(tp, info.offset()));
            while (done.getCount() > 0) {
                Thread.sleep(20);
                Map<TopicPartition, OffsetAndMetadata> committed;
                try {
                    committed = admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get();
                } catch (ExecutionException e) {
                    continue;
                }
                boolean all = true;
                for (Map.Entry<TopicPartition, Long> e : ends.entrySet()) {
                    OffsetAndMetadata c = committed.get(e.getKey());
                    if (e.getValue() > 0 && (c == null || c.offset() < e.getValue())) {
                        all = false;
                        break;
                    }
                }
                if (all) {
                    long now = nowNs();
                    lastRecordNs.compareAndSet(0, now);
                    lastOutputNs.set(now);
                    done.countDown();
                    return;
                }
            }
        } catch (Exception e) {
            failure.compareAndSet(null, e);
            while (done.getCount() > 0) {
                done.countDown();
            }
        }
    }

    /** Parses Go-style flags: -name value, -name=value, and -probe alone. */
    static Map<String, String> parse(String[] args) {
        Map<String, String> m = new HashMap<>();
        m.put("brokers", "127.0.0.1:9092");
        m.put("parallelism", "2");
        m.put("guarantee", "at-least-once");
        m.put("commit-interval", "30s");
        m.put("timeout", "10m");
        m.put("store", "persistent");
        for (int i = 0; i < args.length; i++) {
            String f = args[i].replaceFirst("^--?", "");
            int eq = f.indexOf('=');
            if (eq >= 0) {
                m.put(f.substring(0, eq), f.substring(eq + 1));
            } else if (f.equals("probe")) {
                m.put("probe", "true");
            } else if (i + 1 < args.length) {
                m.put(f, args[++i]);
            } else {
                throw new IllegalArgumentException("flag -" + f + " needs a value");
            }
        }
        return m;
    }

    /** Parses the duration forms the harness passes: 1500ms, 30s, 10m. */
    static long millis(String d) {
        if (d.endsWith("ms")) {
            return Long.parseLong(d.substring(0, d.length() - 2));
        }
        long unit = d.endsWith("s") ? 1000 : d.endsWith("m") ? 60_000 : d.endsWith("h") ? 3_600_000 : 0;
        if (unit == 0) {
            throw new IllegalArgumentException("duration " + d + ": want a number with ms, s, m or h");
        }
        return Long.parseLong(d.substring(0, d.length() - 1)) * unit;
    }

    static String quote(String s) {
        StringBuilder b = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            switch (c) {
                case '"': b.append("\\\""); break;
                case '\\': b.append("\\\\"); break;
                case '\n': b.append("\\n"); break;
                case '\r': b.append("\\r"); break;
                case '\t': b.append("\\t"); break;
                default:
                    if (c < 0x20) {
                        b.append(String.format("\\u%04x", (int) c));
                    } else {
                        b.append(c);
                    }
            }
        }
        return b.append('"').toString();
    }

    // The JVM's own high-water resident set (VmHWM), or 0 off Linux: the
    // harness cannot take it from ru_maxrss (see the Go protocol package).
    static long peakRssBytes() {
        try {
            for (String line : java.nio.file.Files.readAllLines(java.nio.file.Paths.get("/proc/self/status"))) {
                if (line.startsWith("VmHWM:")) {
                    String[] f = line.substring(6).trim().split("\\s+");
                    return Long.parseLong(f[0]) * 1024;
                }
            }
        } catch (Exception e) {
            // No /proc: the harness falls back to ru_maxrss.
        }
        return 0;
    }

    static void print(Map<String, String> a, String store, boolean unsupported, String error) {
        StringBuilder b = new StringBuilder(MARKER).append('{');
        b.append("\"contender\":").append(quote(NAME));
        b.append(",\"workload\":").append(quote(a.getOrDefault("workload", "")));
        b.append(",\"guarantee\":").append(quote(a.getOrDefault("guarantee", "")));
        if (unsupported) {
            b.append(",\"unsupported\":true");
        }
        if (error != null && !error.isEmpty()) {
            b.append(",\"error\":").append(quote(error));
        }
        if (store != null) {
            b.append(",\"store\":").append(quote(store));
        }
        b.append(",\"consumed\":").append(consumed.get());
        b.append(",\"sink_acked\":").append(sinkAcks.get());
        b.append(",\"changelog_ack\":").append(changelogAcks.get());
        b.append(",\"first_record_ns\":").append(firstRecordNs.get());
        b.append(",\"last_record_ns\":").append(lastRecordNs.get());
        b.append(",\"first_output_ns\":").append(firstOutputNs.get());
        b.append(",\"last_output_ns\":").append(lastOutputNs.get());
        b.append(",\"done_ns\":").append(doneNs.get());
        b.append(",\"cpu_at_first_record_ns\":").append(cpuAtFirstRecordNs.get());
        b.append(",\"cpu_at_done_ns\":").append(cpuAtDoneNs.get());
        long peak = peakRssBytes();
        if (peak > 0) {
            b.append(",\"peak_rss_bytes\":").append(peak);
        }
        b.append('}');
        System.out.println(b);
        System.out.flush();
    }

    public static void main(String[] args) throws Exception {
        Map<String, String> a;
        try {
            a = parse(args);
        } catch (IllegalArgumentException e) {
            print(new HashMap<>(), null, false, e.getMessage());
            System.exit(2);
            return;
        }
        String guarantee = a.get("guarantee");
        String processing;
        if (guarantee.equals("at-least-once")) {
            processing = StreamsConfig.AT_LEAST_ONCE;
        } else if (guarantee.equals("exactly-once")) {
            processing = StreamsConfig.EXACTLY_ONCE_V2;
        } else {
            print(a, null, false, "unknown guarantee " + guarantee);
            System.exit(2);
            return;
        }
        if (a.containsKey("probe")) {
            print(a, null, false, null);
            System.exit(0);
            return;
        }
        String workload = a.get("workload");
        boolean persistent = !a.get("store").equals("memory");
        String app = a.get("app");
        inputs = Long.parseLong(a.get("expect"));
        String store = null;
        int conditions = 1;
        switch (workload) {
            case "passthrough":
            case "ops-passthrough":
            case "stream-table-join":
                expectSink = inputs;
                sinkTopic = a.get("sink");
                conditions = 2;
                break;
            case "kv-put":
                expectChangelog = inputs;
                changelogTopic = app + "-kv-changelog";
                store = persistent ? "rocksdb, changelogged" : "in-memory, changelogged";
                conditions = 2;
                break;
            case "restore-kv":
            case "restore-window":
                store = persistent ? "rocksdb, changelogged" : "in-memory, changelogged";
                break;
            case "windowed-count":
            case "windowed-count-final":
                expectSink = workload.equals("windowed-count") ? inputs : Long.parseLong(a.getOrDefault("closed-windows", "0"));
                expectChangelog = inputs;
                sinkTopic = a.get("sink");
                changelogTopic = app + "-windows-changelog";
                store = persistent ? "rocksdb (timestamped window), changelogged" : "in-memory window, changelogged";
                conditions = expectSink > 0 ? 3 : 2;
                break;
            case "stream-stream-join":
                expectSink = Long.parseLong(a.getOrDefault("join-outputs", "0"));
                sinkTopic = a.get("sink");
                conditions = 2;
                break;
            case "count":
            case "repartition-count":
            case "ops-repartition-count":
                expectSink = inputs;
                expectChangelog = inputs;
                sinkTopic = a.get("sink");
                changelogTopic = app + "-counts-changelog";
                store = persistent ? "rocksdb (timestamped), changelogged" : "in-memory, changelogged";
                conditions = 3;
                break;
            default:
                break;
        }
        boolean eos = guarantee.equals("exactly-once") && !workload.startsWith("restore-");
        if (eos) {
            // Done once the group has committed the whole source: outputs are
            // committed in the same transactions. Acks and inputs are still
            // counted and stamped, but do not end the run.
            inputs = -1;
            expectSink = 0;
            expectChangelog = 0;
            conditions = 1;
        }
        done = new CountDownLatch(conditions);

        Properties p = new Properties();
        p.put(StreamsConfig.APPLICATION_ID_CONFIG, app);
        p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, a.get("brokers"));
        p.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, Integer.parseInt(a.get("parallelism")));
        p.put(StreamsConfig.STATE_DIR_CONFIG, a.get("state-dir"));
        p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, millis(a.get("commit-interval")));
        p.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, processing);
        // No record cache: every count update is forwarded and logged, one
        // output per input, as the other contenders do.
        p.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0L);
        p.put(StreamsConfig.producerPrefix(ProducerConfig.INTERCEPTOR_CLASSES_CONFIG), AckInterceptor.class.getName());
        p.put(StreamsConfig.producerPrefix(ProducerConfig.COMPRESSION_TYPE_CONFIG), "none");
        // Emitting final results, check for closed windows on every record,
        // as kgen does, not at most once a wall-clock second (the default):
        // with the default, the windows that close in the last second of
        // the input are never emitted, since no record comes after them.
        p.put(StreamsConfig.InternalConfig.EMIT_INTERVAL_MS_KSTREAMS_WINDOWED_AGGREGATION, 0L);

        Topology topo;
        try {
            topo = topology(a, persistent);
        } catch (IllegalArgumentException e) {
            print(a, store, false, e.getMessage());
            System.exit(2);
            return;
        }
        System.err.println(topo.describe());
        KafkaStreams streams = new KafkaStreams(topo, p);
        streams.setUncaughtExceptionHandler(e -> {
            failure.compareAndSet(null, e);
            while (done.getCount() > 0) {
                done.countDown();
            }
            return StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
        });
        if (workload.startsWith("restore-")) {
            streams.setGlobalStateRestoreListener(new RestoreStamps());
        }
        streams.start();
        if (eos) {
            Thread watcher = new Thread(() -> watchCommitted(a.get("brokers"), app, a.get("source")), "commit-watcher");
            watcher.setDaemon(true);
            watcher.start();
        }
        boolean finished = done.await(millis(a.get("timeout")), TimeUnit.MILLISECONDS);
        doneNs.set(nowNs());
        cpuAtDoneNs.set(cpuNs());
        String error = null;
        if (failure.get() != null) {
            error = "stream thread failed: " + failure.get();
        } else if (!finished) {
            error = "timed out after " + a.get("timeout");
        }
        // A clean close commits what was processed and leaves the group, as
        // the other contenders do (Kafka Streams stays in it by default).
        CloseOptions close = CloseOptions.timeout(Duration.ofSeconds(60))
                .withGroupMembershipOperation(CloseOptions.GroupMembershipOperation.LEAVE_GROUP);
        if (!streams.close(close) && error == null) {
            error = "close did not finish within 60s";
        }
        print(a, store, false, error);
        System.exit(error == null ? 0 : 1);
    }
}
