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
     * serde.String against Kafka's own serializers.
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
        return b.append("\n  ]\n}\n").toString();
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

        Properties props = new Properties();
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, "oracle");
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, "unused:9092");
        props.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);
        // In-memory stores: the semantics are the same, and nothing is left on disk.
        props.put(StreamsConfig.DSL_STORE_SUPPLIERS_CLASS_CONFIG, BuiltInDslStoreSuppliers.InMemoryDslStoreSuppliers.class);
        props.put(StreamsConfig.STATE_DIR_CONFIG, STATE_DIR.toString());

        Topologies tops = new Topologies();
        StringBuilder b = new StringBuilder();
        try (TopologyTestDriver driver = new TopologyTestDriver(tops.build((String) c.get("topology")), props, START)) {
            for (int i = 0; i < inputs.size(); i++) {
                Map<String, Object> r = (Map<String, Object>) inputs.get(i);
                String topic = (String) r.get("topic");
                Map<String, Object> types = types(topics, topic);
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
                        deserializer((String) types.get("key")), deserializer((String) types.get("value")));
                List<TestRecord<Object, Object>> recs = ot.readRecordsToList();
                b.append(i == 0 ? "\n" : ",\n").append("    ").append(Json.quote(topic)).append(": [");
                for (int j = 0; j < recs.size(); j++) {
                    TestRecord<Object, Object> r = recs.get(j);
                    b.append(j == 0 ? "\n" : ",\n").append("      {\"key\": ").append(scalar(r.key()))
                            .append(", \"value\": ").append(scalar(r.value()))
                            .append(", \"timestamp\": ").append(r.timestamp())
                            .append(", \"headers\": ").append(headers(r.headers())).append('}');
                }
                b.append(recs.isEmpty() ? "]" : "\n    ]");
            }
            b.append(outputs.isEmpty() ? "}" : "\n  }");
            produced.removeIf(t -> t.endsWith("-repartition") || t.endsWith("-changelog"));
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
