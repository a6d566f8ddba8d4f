package dev.kgen.oracle;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.Headers;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.Deserializer;
import org.apache.kafka.common.serialization.LongDeserializer;
import org.apache.kafka.common.serialization.LongSerializer;
import org.apache.kafka.common.serialization.Serializer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.TestInputTopic;
import org.apache.kafka.streams.TestOutputTopic;
import org.apache.kafka.streams.TopologyTestDriver;
import org.apache.kafka.streams.kstream.SessionWindowedDeserializer;
import org.apache.kafka.streams.kstream.SessionWindowedSerializer;
import org.apache.kafka.streams.kstream.TimeWindowedDeserializer;
import org.apache.kafka.streams.kstream.TimeWindowedSerializer;
import org.apache.kafka.streams.kstream.Windowed;
import org.apache.kafka.streams.kstream.internals.SessionWindow;
import org.apache.kafka.streams.kstream.internals.TimeWindow;
import org.apache.kafka.streams.state.BuiltInDslStoreSuppliers;
import org.apache.kafka.streams.test.TestRecord;

/**
 * Runs every case file of a directory through Kafka Streams' TopologyTestDriver
 * and writes, per case, what each output topic received (see ../README.md).
 *
 * <pre>java -cp oracle.jar:$(cat classpath.txt) dev.kgen.oracle.Oracle CASES_DIR OUT_DIR</pre>
 */
public final class Oracle {
    /** The driver's wall-clock start: fixed, as kgen's LocalDriver's default. */
    static final Instant START = Instant.parse("2026-01-01T00:00:00Z");

    static Path STATE_DIR;

    public static void main(String[] args) throws IOException {
        STATE_DIR = Files.createTempDirectory("kgen-oracle-");
        if (args.length != 2) {
            System.err.println("usage: Oracle CASES_DIR OUT_DIR");
            System.exit(2);
        }
        Path cases = Path.of(args[0]);
        Path out = Path.of(args[1]);
        Files.createDirectories(out);
        List<Path> files;
        try (Stream<Path> s = Files.list(cases)) {
            files = s.filter(p -> p.toString().endsWith(".json")).sorted().collect(Collectors.toList());
        }
        if (files.isEmpty()) {
            throw new IllegalStateException("no case files in " + cases);
        }
        for (Path f : files) {
            String file = f.getFileName().toString();
            String name = file.substring(0, file.length() - ".json".length());
            try {
                String result = run(name, Files.readString(f, StandardCharsets.UTF_8));
                Files.writeString(out.resolve(file), result, StandardCharsets.UTF_8);
            } catch (RuntimeException e) {
                throw new IllegalStateException("case " + name + ": " + e.getMessage(), e);
            }
        }
        Files.writeString(out.resolve("_serdes.json"), serdes(), StandardCharsets.UTF_8);
        try (Stream<Path> s = Files.walk(STATE_DIR)) {
            for (Path p : s.sorted(java.util.Comparator.reverseOrder()).collect(Collectors.toList())) {
                Files.deleteIfExists(p);
            }
        }
        System.out.println("oracle: " + files.size() + " cases");
    }

    /**
     * The bytes Kafka's LongSerializer and StringSerializer write for a few
     * values, so that the Go test can check kgen's serde.Int64 and
     * serde.String against Kafka's own serializers; and the bytes of Kafka
     * Streams' time- and session-windowed serdes, for serde.TimeWindowed and
     * serde.SessionWindowed.
     */
    static String serdes() {
        StringBuilder b = new StringBuilder("{\n  \"long\": [");
        long[] longs = {0, 1, -1, -2, 255, 256, 1234567890123L, Long.MAX_VALUE, Long.MIN_VALUE};
        try (LongSerializer ls = new LongSerializer(); StringSerializer ss = new StringSerializer()) {
            for (int i = 0; i < longs.length; i++) {
                b.append(i == 0 ? "\n" : ",\n").append("    {\"value\": ").append(longs[i])
                        .append(", \"bytes\": \"").append(hex(ls.serialize("t", longs[i]))).append("\"}");
            }
            b.append("\n  ],\n  \"string\": [");
            String[] strings = {"", "a", "h\u00e9llo", "\u65e5\u672c", "\ud83d\ude00"};
            for (int i = 0; i < strings.length; i++) {
                b.append(i == 0 ? "\n" : ",\n").append("    {\"value\": ").append(Json.quote(strings[i]))
                        .append(", \"bytes\": \"").append(hex(ss.serialize("t", strings[i]))).append("\"}");
            }
        }
        b.append("\n  ],\n  \"timeWindowed\": [");
        windowed(b, true);
        b.append("\n  ],\n  \"sessionWindowed\": [");
        windowed(b, false);
        b.append("\n  ],\n  \"windowedRejected\": [");
        rejected(b);
        return b.append("\n  ]\n}\n").toString();
    }

    /** A windowed key sample: the key, its inner type and the window. */
    private record WindowSample(String inner, Object key, long start, long sizeOrEnd) {}

    /**
     * Windowed keys as Kafka Streams' TimeWindowedSerializer (sizeOrEnd is
     * the window size) or SessionWindowedSerializer (sizeOrEnd is the end)
     * writes them, and the window its deserializer reads back from those
     * bytes: for a time window the end comes from the size (capped at
     * Long.MAX_VALUE where start+size overflows).
     */
    private static void windowed(StringBuilder b, boolean time) {
        long t2026 = START.toEpochMilli();
        List<WindowSample> samples = time
                ? List.of(new WindowSample("string", "a", 0, 10), new WindowSample("string", "", 5, 10),
                        new WindowSample("string", "h\u00e9llo", t2026, 60_000), new WindowSample("string", "a", 1, 1),
                        new WindowSample("string", "late", Long.MAX_VALUE - 5, 10),
                        new WindowSample("long", 0L, 0, 100), new WindowSample("long", -1L, 100, 100),
                        new WindowSample("long", Long.MAX_VALUE, t2026, 86_400_000L), new WindowSample("long", Long.MIN_VALUE, Long.MAX_VALUE - 1, 2))
                : List.of(new WindowSample("string", "a", 5, 7), new WindowSample("string", "", 0, 0),
                        new WindowSample("string", "h\u00e9llo", t2026, t2026 + 300_000), new WindowSample("string", "b", 3, 3),
                        new WindowSample("string", "z", 0, Long.MAX_VALUE),
                        new WindowSample("long", 0L, 0, 0), new WindowSample("long", -1L, 100, 250),
                        new WindowSample("long", Long.MAX_VALUE, Long.MAX_VALUE, Long.MAX_VALUE));
        for (int i = 0; i < samples.size(); i++) {
            WindowSample s = samples.get(i);
            byte[] bytes;
            Windowed<Object> back;
            if (time) {
                long end = s.start() + s.sizeOrEnd() < 0 ? Long.MAX_VALUE : s.start() + s.sizeOrEnd();
                try (TimeWindowedSerializer<Object> ser = new TimeWindowedSerializer<>(serializer(s.inner()));
                     TimeWindowedDeserializer<Object> de = new TimeWindowedDeserializer<>(deserializer(s.inner()), s.sizeOrEnd())) {
                    bytes = ser.serialize("t", new Windowed<>(s.key(), new TimeWindow(s.start(), end)));
                    back = de.deserialize("t", bytes);
                }
            } else {
                try (SessionWindowedSerializer<Object> ser = new SessionWindowedSerializer<>(serializer(s.inner()));
                     SessionWindowedDeserializer<Object> de = new SessionWindowedDeserializer<>(deserializer(s.inner()))) {
                    bytes = ser.serialize("t", new Windowed<>(s.key(), new SessionWindow(s.start(), s.sizeOrEnd())));
                    back = de.deserialize("t", bytes);
                }
            }
            if (!back.key().equals(s.key()) || back.window().start() != s.start()) {
                throw new IllegalStateException("windowed sample " + s + " read back as " + back);
            }
            b.append(i == 0 ? "\n" : ",\n").append("    {\"inner\": ").append(Json.quote(s.inner()))
                    .append(", \"key\": ").append(scalar(s.key()))
                    .append(", \"start\": ").append(s.start());
            if (time) {
                b.append(", \"sizeMs\": ").append(s.sizeOrEnd());
            }
            if (!time && back.window().end() != s.sizeOrEnd()) {
                throw new IllegalStateException("session sample " + s + " read back as " + back);
            }
            b.append(", \"").append(time ? "readEnd" : "end").append("\": ").append(back.window().end())
                    .append(", \"bytes\": \"").append(hex(bytes)).append("\"}");
        }
    }

    /**
     * Bytes Kafka Streams' windowed deserializers (string keys; a time
     * window of 10 ms) refuse, with the exception each throws, or read as a
     * null (empty bytes): kgen's serdes must refuse them too (a Windowed
     * cannot say null).
     */
    private static void rejected(StringBuilder b) {
        String[][] cases = {
            {"time", ""}, {"time", "010203"}, {"time", "61000000000000"},
            {"time", "61ffffffffffffffff"}, {"time", "618000000000000000"},
            {"session", ""}, {"session", "0102030405060708090a"}, {"session", "610000000000000000000000000000"},
            {"session", "6100000000000000050000000000000007"}, {"session", "61ffffffffffffffffffffffffffffffff"},
            {"session", "610000000000000000ffffffffffffffff"},
        };
        for (int i = 0; i < cases.length; i++) {
            String form = cases[i][0];
            byte[] bytes = unhex(cases[i][1]);
            String outcome;
            try (TimeWindowedDeserializer<String> td = new TimeWindowedDeserializer<>(new StringDeserializer(), 10L);
                 SessionWindowedDeserializer<String> sd = new SessionWindowedDeserializer<>(new StringDeserializer())) {
                Windowed<String> w = form.equals("time") ? td.deserialize("t", bytes) : sd.deserialize("t", bytes);
                if (w != null) {
                    throw new IllegalStateException("Kafka Streams reads " + cases[i][1] + " as " + w + ": not a rejection");
                }
                outcome = "null";
            } catch (RuntimeException e) {
                outcome = e.getClass().getSimpleName();
            }
            b.append(i == 0 ? "\n" : ",\n").append("    {\"form\": ").append(Json.quote(form))
                    .append(", \"bytes\": \"").append(cases[i][1]).append("\", \"kafkaStreams\": ")
                    .append(Json.quote(outcome)).append('}');
        }
    }

    private static byte[] unhex(String s) {
        byte[] out = new byte[s.length() / 2];
        for (int i = 0; i < out.length; i++) {
            out[i] = (byte) Integer.parseInt(s.substring(2 * i, 2 * i + 2), 16);
        }
        return out;
    }

    private static String hex(byte[] bs) {
        StringBuilder b = new StringBuilder();
        for (byte x : bs) {
            b.append(String.format("%02x", x & 0xff));
        }
        return b.toString();
    }

    @SuppressWarnings("unchecked")
    static String run(String name, String text) {
        Map<String, Object> c = (Map<String, Object>) Json.parse(text);
        if (!name.equals(c.get("name"))) {
            throw new IllegalArgumentException("name " + c.get("name") + " is not the file's name");
        }
        Map<String, Object> topics = (Map<String, Object>) c.get("topics");
        List<Object> outputs = (List<Object>) c.get("outputs");
        List<Object> inputs = (List<Object>) c.get("inputs");

        boolean windowed = false;
        for (Object t : topics.values()) {
            windowed |= ((Map<String, Object>) t).containsKey("window");
        }
        Properties props = new Properties();
        // Emit final (EmitStrategy.onWindowClose) looks for closed windows at
        // most once per this wall-clock interval (an internal config, 1 s by
        // default); off, so that a window is emitted by the record whose
        // stream time closes it, whatever the clock: kgen has no such throttle.
        props.put(StreamsConfig.InternalConfig.EMIT_INTERVAL_MS_KSTREAMS_WINDOWED_AGGREGATION, 0L);
        // Likewise the left/outer stream-stream join's throttle on emitting
        // records without a partner (1 s by default): off, so that they are
        // emitted by the record whose stream time closes their window.
        props.put(StreamsConfig.InternalConfig.EMIT_INTERVAL_MS_KSTREAMS_OUTER_JOIN_SPURIOUS_RESULTS_FIX, 0L);
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, "oracle");
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, "unused:9092");
        props.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);
        // In-memory stores for key-value aggregations and tables: the semantics
        // are the same, and nothing is left on disk. A windowed topology (one
        // writing windowed keys) keeps Kafka Streams' default stores (RocksDB,
        // in STATE_DIR), which production uses: with in-memory ones emit final
        // gives other results (it loses more windows, and emits no session).
        if (!windowed) {
            props.put(StreamsConfig.DSL_STORE_SUPPLIERS_CLASS_CONFIG, BuiltInDslStoreSuppliers.InMemoryDslStoreSuppliers.class);
        }
        // A directory per case, so no case sees another's persistent stores.
        props.put(StreamsConfig.STATE_DIR_CONFIG, STATE_DIR.resolve(name).toString());

        Topologies tops = new Topologies();
        StringBuilder b = new StringBuilder();
        try (TopologyTestDriver driver = new TopologyTestDriver(tops.build((String) c.get("topology")), props, START)) {
            for (int i = 0; i < inputs.size(); i++) {
                Map<String, Object> r = (Map<String, Object>) inputs.get(i);
                String topic = (String) r.get("topic");
                Map<String, Object> types = types(topics, topic);
                if (types.containsKey("window")) {
                    throw new IllegalArgumentException("input topic " + topic + " has windowed keys: not supported");
                }
                TestInputTopic<Object, Object> in = driver.createInputTopic(topic,
                        serializer((String) types.get("key")), serializer((String) types.get("value")));
                if (!r.containsKey("key") || !r.containsKey("value")) {
                    throw new IllegalArgumentException("input " + i + " lacks a key or a value (write null for a null)");
                }
                Object key = r.get("key");
                // Every input carries one header, in=<its index>, so an output
                // shows which input's headers it kept.
                Headers headers = new RecordHeaders(new Header[] {
                    new RecordHeader("in", Integer.toString(i).getBytes(StandardCharsets.UTF_8))});
                in.pipeInput(new TestRecord<>(key, r.get("value"), headers, (Long) r.get("timestamp")));
            }
            b.append("{\n  \"case\": ").append(Json.quote(name)).append(",\n  \"outputs\": {");
            Set<String> produced = new TreeSet<>(driver.producedTopicNames());
            for (int i = 0; i < outputs.size(); i++) {
                String topic = (String) outputs.get(i);
                produced.remove(topic);
                Map<String, Object> types = types(topics, topic);
                TestOutputTopic<Object, Object> ot = driver.createOutputTopic(topic,
                        keyDeserializer(types), deserializer((String) types.get("value")));
                List<TestRecord<Object, Object>> recs = ot.readRecordsToList();
                b.append(i == 0 ? "\n" : ",\n").append("    ").append(Json.quote(topic)).append(": [");
                for (int j = 0; j < recs.size(); j++) {
                    TestRecord<Object, Object> r = recs.get(j);
                    b.append(j == 0 ? "\n" : ",\n").append("      {\"key\": ");
                    if (r.key() instanceof Windowed<?> w) {
                        // Decoded for readability: the key, then its window.
                        b.append(scalar(w.key())).append(", \"start\": ").append(w.window().start())
                                .append(", \"end\": ").append(w.window().end());
                    } else {
                        b.append(scalar(r.key()));
                    }
                    b.append(", \"value\": ").append(scalar(r.value()))
                            .append(", \"timestamp\": ").append(r.timestamp())
                            .append(", \"headers\": ").append(headers(r.headers())).append('}');
                }
                b.append(recs.isEmpty() ? "]" : "\n    ]");
            }
            b.append(outputs.isEmpty() ? "}" : "\n  }");
            // Internal topics (a foreign-key join's subscription and response
            // topics too) are no case's output.
            produced.removeIf(t -> t.endsWith("-repartition") || t.endsWith("-changelog")
                    || t.endsWith("-subscription-registration-topic") || t.endsWith("-subscription-response-topic")
                    || t.contains("-FK-JOIN-SUBSCRIPTION-"));
            if (!produced.isEmpty()) {
                throw new IllegalStateException("records on topics the case does not list as outputs: " + produced);
            }
        }
        if (!tops.peeked.isEmpty()) {
            b.append(",\n  \"peeked\": [");
            for (int j = 0; j < tops.peeked.size(); j++) {
                b.append(j == 0 ? "\n" : ",\n").append("    ").append(Json.quote(tops.peeked.get(j)));
            }
            b.append("\n  ]");
        }
        return b.append("\n}\n").toString();
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> types(Map<String, Object> topics, String topic) {
        Map<String, Object> t = (Map<String, Object>) topics.get(topic);
        if (t == null) {
            throw new IllegalArgumentException("topic " + topic + " has no types");
        }
        return t;
    }

    @SuppressWarnings("unchecked")
    private static Serializer<Object> serializer(String type) {
        switch (type) {
            case "string":
                return (Serializer<Object>) (Serializer<?>) new StringSerializer();
            case "long":
                return (Serializer<Object>) (Serializer<?>) new LongSerializer();
            default:
                throw new IllegalArgumentException("unknown type " + type);
        }
    }

    /**
     * A topic's key deserializer: with "window" in its types, Kafka Streams'
     * TimeWindowedDeserializer ("form": "time", with "sizeMs") or
     * SessionWindowedDeserializer ("form": "session") around the key type's.
     */
    @SuppressWarnings("unchecked")
    private static Deserializer<Object> keyDeserializer(Map<String, Object> types) {
        Deserializer<Object> inner = deserializer((String) types.get("key"));
        Map<String, Object> w = (Map<String, Object>) types.get("window");
        if (w == null) {
            return inner;
        }
        switch ((String) w.get("form")) {
            case "time":
                return (Deserializer<Object>) (Deserializer<?>) new TimeWindowedDeserializer<>(inner, (Long) w.get("sizeMs"));
            case "session":
                return (Deserializer<Object>) (Deserializer<?>) new SessionWindowedDeserializer<>(inner);
            default:
                throw new IllegalArgumentException("unknown window form " + w.get("form"));
        }
    }

    @SuppressWarnings("unchecked")
    private static Deserializer<Object> deserializer(String type) {
        switch (type) {
            case "string":
                return (Deserializer<Object>) (Deserializer<?>) new StringDeserializer();
            case "long":
                return (Deserializer<Object>) (Deserializer<?>) new LongDeserializer();
            default:
                throw new IllegalArgumentException("unknown type " + type);
        }
    }

    /** Headers as a JSON array of "key=value" strings, in order. */
    private static String headers(Headers hs) {
        StringBuilder b = new StringBuilder("[");
        for (Header h : hs) {
            if (b.length() > 1) {
                b.append(", ");
            }
            String v = h.value() == null ? "" : new String(h.value(), StandardCharsets.UTF_8);
            b.append(Json.quote(h.key() + "=" + v));
        }
        return b.append(']').toString();
    }

    private static String scalar(Object v) {
        if (v == null) {
            return "null";
        }
        if (v instanceof String) {
            return Json.quote((String) v);
        }
        return v.toString();
    }
}
