package dev.logberg;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetOutOfRangeException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableProvider;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.connector.read.Batch;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * A Spark data source that reads offset ranges of Kafka topic partitions and parses every
 * message as an nginx line as it reads it, as {@link LogLines} does a file's lines:
 * {@code spark.read.format("dev.logberg.KafkaLines").option("bootstrap", "host:port")
 * .option("ranges", ranges).load()}, with {@code ranges} one {@code
 * TOPIC<TAB>PARTITION<TAB>FROM<TAB>UNTIL} per line (UNTIL exclusive, as Spark's Kafka source).
 *
 * <p>Each range is read by its own consumer: assigned, never in a group, so nothing is
 * committed to the broker (the caller keeps the offsets with its commit). With the option
 * {@code min_partitions} (the cores the read may use; default 1), when the ranges are fewer
 * than that, each range is split into consecutive pieces by its share of the messages, none
 * under {@code min_split_messages} (default {@value #DEFAULT_MIN_SPLIT_MESSAGES}): a
 * one-partition topic is then read and parsed on several cores. Each piece is one input
 * partition, read by a consumer of its own from its first offset up to, never past, its
 * last. A message's lineage is that of a raw value in logberg's Kafka ingest:
 * {@code source_file} {@code kafka://TOPIC/PARTITION}, {@code line_number} its offset. Its
 * value is the line, less one trailing LF or CR LF (a shipper may keep the line's end). A
 * message that cannot be a line is rejected with its bytes and why, the reasons of
 * logberg.pipeline.kafka.messages.BadMessage: {@code tombstone} (no value), {@code empty},
 * {@code too_long} (more than the option {@code max_line_bytes}), {@code not_utf8}; its
 * {@code value} is its text made valid UTF-8 (Spark's {@code make_valid_utf8}), null for a
 * tombstone.
 *
 * <p>The other options and the columns are {@link LogLines}': {@code rejects}, {@code
 * rejects_budget}, {@code columns}, {@code stamp_column}, {@code stamp_micros}, {@code
 * derived}, {@code format}, {@code client}. A scan with {@code columns} counts each range's
 * messages and rejects under its source_file (a scan reads one range per partition; the
 * collector sums its pieces).
 * Options {@code kafka.NAME} go to the consumers as NAME (e.g. {@code
 * kafka.security.protocol}); {@code poll_timeout_ms} bounds how long a range may give
 * nothing before the read fails (default 120000).
 */
public final class KafkaLines implements TableProvider {
  private static final String NAME = "dev.logberg.KafkaLines";
  static final String TOMBSTONE = "tombstone";
  static final String EMPTY = "empty";
  static final String TOO_LONG = "too_long";
  static final String NOT_UTF8 = "not_utf8";
  private static final long DEFAULT_POLL_TIMEOUT_MS = 120_000L;
  /** The fewest messages a piece of a split range holds: a consumer per piece costs a
   * connection and a first fetch (tens of ms), as much as parsing some 10,000 lines. */
  static final long DEFAULT_MIN_SPLIT_MESSAGES = 20_000L;
  private static final String KAFKA_PREFIX = "kafka.";

  @Override
  public StructType inferSchema(CaseInsensitiveStringMap options) {
    final String columns = options.get("columns");
    return columns == null ? LogLines.lines(options) : StructType.fromDDL(columns);
  }

  @Override
  public Table getTable(StructType schema, Transform[] partitioning, Map<String, String> props) {
    return new Ranges(schema);
  }

  /**
   * One offset range of one partition: [from, until), the piece of the batch's range of the
   * partition [wholeFrom, wholeUntil) (the whole range, when it is not split).
   */
  static final class Range implements InputPartition {
    private static final long serialVersionUID = 1L;
    final String topic;
    final int partition;
    final long from;
    final long until;
    final long wholeFrom;
    final long wholeUntil;

    Range(String topic, int partition, long from, long until) {
      this(topic, partition, from, until, from, until);
    }

    private Range(
        String topic, int partition, long from, long until, long wholeFrom, long wholeUntil) {
      this.topic = topic;
      this.partition = partition;
      this.from = from;
      this.until = until;
      this.wholeFrom = wholeFrom;
      this.wholeUntil = wholeUntil;
    }

    /**
     * The input partitions of these (whole, non-empty) ranges: each as it is when they are
     * at least {@code minPartitions}; else each range in as many consecutive pieces as its
     * share of the messages makes of {@code minPartitions}, none under {@code minSplit}
     * messages (so a small range stays whole), the pieces' sizes within one of each other.
     */
    static List<Range> plan(List<Range> ranges, long minPartitions, long minSplit) {
      if (ranges.size() >= minPartitions) return ranges;
      long total = 0;
      for (Range r : ranges) total += r.until - r.from;
      final List<Range> out = new ArrayList<>();
      for (Range r : ranges) {
        final long size = r.until - r.from;
        final long share = Math.round((double) minPartitions * size / total);
        final long pieces = Math.max(1, Math.min(share, size / minSplit));
        final long base = size / pieces;
        final long extra = size % pieces; // the first `extra` pieces hold one more
        for (long k = 0; k < pieces; k++) {
          final long lo = r.from + k * base + Math.min(k, extra);
          final long hi = lo + base + (k < extra ? 1 : 0);
          out.add(new Range(r.topic, r.partition, lo, hi, r.from, r.until));
        }
      }
      return out;
    }

    String source() {
      return "kafka://" + topic + "/" + partition;
    }

    /** The option {@code ranges}: one TOPIC, PARTITION, FROM, UNTIL per line, tab-separated. */
    static List<Range> parse(String option) {
      if (option == null || option.isBlank()) {
        throw new IllegalArgumentException(NAME + ": set the option 'ranges'");
      }
      final List<Range> out = new ArrayList<>();
      final Set<String> seen = new java.util.HashSet<>();
      for (String line : option.split("\n")) {
        if (line.isBlank()) continue;
        final String[] f = line.split("\t");
        try {
          if (f.length != 4) throw new NumberFormatException();
          final Range r =
              new Range(f[0], Integer.parseInt(f[1]), Long.parseLong(f[2]), Long.parseLong(f[3]));
          if (r.topic.isEmpty() || r.partition < 0 || r.from < 0 || r.until < r.from) {
            throw new NumberFormatException();
          }
          if (!seen.add(r.source())) {
            throw new IllegalArgumentException(
                NAME + ": the option 'ranges' names " + r.source() + " twice; one range each");
          }
          if (r.until > r.from) out.add(r); // an empty range reads nothing
        } catch (NumberFormatException e) {
          throw new IllegalArgumentException(
              NAME + ": the option 'ranges' has '" + line + "'; each line is TOPIC<TAB>PARTITION"
                  + "<TAB>FROM<TAB>UNTIL, offsets with FROM <= UNTIL");
        }
      }
      return out;
    }
  }

  /** What every reader of a scan needs: the consumers' settings and the line settings. */
  private static final class Settings implements java.io.Serializable {
    private static final long serialVersionUID = 1L;
    final HashMap<String, Object> consumer;
    final long maxLineBytes;
    final long pollTimeoutMs;
    final LogLines.Settings lines;
    final LogLines.Layout layout;

    Settings(Map<String, String> options, LogLines.Layout layout) {
      final String bootstrap = options.get("bootstrap");
      if (bootstrap == null || bootstrap.isBlank()) {
        throw new IllegalArgumentException(NAME + ": set the option 'bootstrap'");
      }
      consumer = new HashMap<>();
      consumer.put("bootstrap.servers", bootstrap);
      consumer.put("enable.auto.commit", "false");
      consumer.put("auto.offset.reset", "none"); // a range gone from the broker is an error
      consumer.put("client.id", "logberg-kafka-lines");
      // Larger fetches than the consumer's defaults: a range is read once, from start to end.
      consumer.put("max.partition.fetch.bytes", String.valueOf(8 << 20));
      consumer.put("max.poll.records", "20000");
      consumer.put("receive.buffer.bytes", String.valueOf(1 << 20));
      for (Map.Entry<String, String> e : options.entrySet()) {
        if (e.getKey().startsWith(KAFKA_PREFIX)) {
          consumer.put(e.getKey().substring(KAFKA_PREFIX.length()), e.getValue());
        }
      }
      maxLineBytes = number(options, "max_line_bytes", Long.MAX_VALUE);
      pollTimeoutMs = number(options, "poll_timeout_ms", DEFAULT_POLL_TIMEOUT_MS);
      lines = LogLines.Settings.of(options);
      this.layout = layout;
    }

    private static long number(Map<String, String> options, String name, long otherwise) {
      final String v = options.get(name);
      if (v == null) return otherwise;
      try {
        final long n = Long.parseLong(v.trim());
        if (n > 0) return n;
      } catch (NumberFormatException e) {
        // below
      }
      throw new IllegalArgumentException(
          NAME + ": the option '" + name + "' is a positive number, not '" + v + "'");
    }
  }

  private static final class Ranges extends ReadOnlyTable {
    Ranges(StructType schema) {
      super(schema);
    }

    @Override
    public String name() {
      return "logberg Kafka lines";
    }

    @Override
    public ScanBuilder newScanBuilder(CaseInsensitiveStringMap options) {
      final List<Range> ranges =
          Range.plan(
              Range.parse(options.get("ranges")),
              Settings.number(options, "min_partitions", 1),
              Settings.number(options, "min_split_messages", DEFAULT_MIN_SPLIT_MESSAGES));
      final String rejects = options.get("rejects");
      final long budget = LogLines.budget(options.get("rejects_budget"));
      final LogLines.Layout layout = LogLines.Layout.of(LogLines.lines(options), schema, options);
      if (layout.goodOnly && rejects == null) {
        throw new IllegalArgumentException(
            NAME + ": the option 'columns' needs the option 'rejects' (its messages and counts "
                + "go there)");
      }
      final Settings settings = new Settings(options, layout);
      return () ->
          new RangesScan(
              ranges, rejects == null ? null : RejectCollector.open(rejects, budget), settings);
    }
  }

  private static final class RangesScan implements Scan, Batch {
    private final List<Range> ranges;
    private final RejectCollector rejects;
    private final Settings settings;

    RangesScan(List<Range> ranges, RejectCollector rejects, Settings settings) {
      this.ranges = ranges;
      this.rejects = rejects;
      this.settings = settings;
    }

    @Override
    public StructType readSchema() {
      return settings.layout.rows;
    }

    @Override
    public String description() {
      return "KafkaLines[" + ranges.size() + " input partition(s)]";
    }

    @Override
    public Batch toBatch() {
      return this;
    }

    @Override
    public InputPartition[] planInputPartitions() {
      return ranges.toArray(new InputPartition[0]);
    }

    @Override
    public PartitionReaderFactory createReaderFactory() {
      final RejectCollector collector = rejects;
      final Settings s = settings;
      return part ->
          new Reader(
              (Range) part, s, new LineRows(s.lines, s.layout, collector), collector != null);
    }
  }

  private static final class Reader implements PartitionReader<InternalRow> {
    private final Range range;
    private final Settings settings;
    private final LineRows rows;
    private final KafkaConsumer<byte[], byte[]> consumer;
    private final TopicPartition tp;
    private final boolean counts;
    private Iterator<ConsumerRecord<byte[], byte[]>> batch;
    private long next; // the next offset to read
    private boolean done;

    Reader(Range range, Settings settings, LineRows rows, boolean counts) {
      this.range = range;
      this.settings = settings;
      this.rows = rows;
      this.counts = counts;
      rows.source(range.source());
      rows.piece(range.wholeFrom, range.wholeUntil, range.from, range.until);
      this.tp = new TopicPartition(range.topic, range.partition);
      this.consumer =
          new KafkaConsumer<>(
              new HashMap<>(settings.consumer),
              new ByteArrayDeserializer(),
              new ByteArrayDeserializer());
      consumer.assign(List.of(tp));
      consumer.seek(tp, range.from);
      this.next = range.from;
    }

    @Override
    public boolean next() {
      while (!done) {
        if (batch != null && batch.hasNext()) {
          final ConsumerRecord<byte[], byte[]> r = batch.next();
          if (r.offset() < next) continue; // read already (never, with seek; cheap to say)
          if (r.offset() >= range.until) return finish();
          next = r.offset() + 1;
          if (message(r.offset(), r.value())) return true;
          continue;
        }
        if (next >= range.until) return finish();
        batch = poll();
        if (batch == null) return finish(); // the position passed the range's end
      }
      return false;
    }

    /** The next records of the range; null when the range is read (offsets may have gaps:
     * compaction, transaction markers). */
    private Iterator<ConsumerRecord<byte[], byte[]>> poll() {
      final long deadline = System.nanoTime() + settings.pollTimeoutMs * 1_000_000L;
      while (true) {
        final List<ConsumerRecord<byte[], byte[]>> got;
        try {
          got = consumer.poll(Duration.ofMillis(500)).records(tp);
        } catch (OffsetOutOfRangeException e) {
          throw new IllegalStateException(
              NAME + ": offsets " + range.from + "-" + range.until + " of " + range.source()
                  + " are not on the broker (deleted by retention, or the topic was recreated)",
              e);
        }
        if (!got.isEmpty()) return got.iterator();
        next = Math.max(next, consumer.position(tp));
        if (next >= range.until) return null;
        if (System.nanoTime() > deadline) {
          throw new IllegalStateException(
              NAME + ": " + range.source() + " gave nothing for " + settings.pollTimeoutMs
                  + " ms at offset " + next + " (reading up to " + range.until + " from "
                  + settings.consumer.get("bootstrap.servers") + ")");
        }
      }
    }

    private boolean finish() {
      if (!done && counts) rows.counted();
      done = true;
      return false;
    }

    /** One message: a line, or a reject; false when it is not a row. */
    private boolean message(long offset, byte[] v) {
      rows.read(v == null ? 0 : v.length);
      if (v == null) return rows.notALine(offset, null, TOMBSTONE, null);
      if (v.length == 0) return rows.notALine(offset, "", EMPTY, v);
      if (v.length > settings.maxLineBytes) {
        return rows.notALine(offset, valid(v), TOO_LONG, v);
      }
      final boolean ascii = Bytes.nonAscii(v, 0, v.length) == v.length;
      if (!ascii && !UTF8String.fromBytes(v).isValid()) {
        return rows.notALine(offset, valid(v), NOT_UTF8, v);
      }
      int to = v.length;
      if (v[to - 1] == '\n') {
        to--;
        if (to > 0 && v[to - 1] == '\r') to--;
      }
      return rows.line(offset, v, 0, to);
    }

    /** The bytes as text, each invalid sequence replaced as Spark's make_valid_utf8 does. */
    private static String valid(byte[] v) {
      return UTF8String.fromBytes(v).makeValid().toString();
    }

    @Override
    public InternalRow get() {
      return rows.get();
    }

    @Override
    public void close() {
      consumer.close(Duration.ofSeconds(5));
    }
  }
}
