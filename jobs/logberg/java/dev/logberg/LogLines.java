package dev.logberg;

import java.io.IOException;
import java.io.InputStream;
import java.io.Serializable;
import java.net.URI;
import java.net.URISyntaxException;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.io.compress.CodecPool;
import org.apache.hadoop.io.compress.CompressionCodec;
import org.apache.hadoop.io.compress.CompressionCodecFactory;
import org.apache.hadoop.io.compress.Decompressor;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.classic.SparkSession;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableProvider;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.connector.read.Batch;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * A Spark data source that reads nginx log files and parses every line as it reads it:
 * {@code spark.read.format("dev.logberg.LogLines").option("files", uris).load()}, with
 * {@code uris} the files' URIs, one per line.
 *
 * <p>Each file is one input partition, read whole, so line numbers are exact. Lines end at
 * LF, CR or CR LF and a UTF-8 byte order mark at the start of a file is skipped, as Spark's
 * text source does (Hadoop's LineRecordReader); compressed files are read through Hadoop's
 * codecs, by extension. A line that is not valid UTF-8 is decoded with replacement
 * characters first, as a Java String would be. Empty lines are counted but not returned.
 *
 * <p>Columns: {@code source_file} (the URI as given), {@code line_number} (1-based), {@code
 * value} (the raw line of a rejected line, else null), {@code raw_bytes} (a rejected line's
 * exact bytes when they are not valid UTF-8, which {@code value} cannot hold; else null),
 * then the fields of {@link
 * ParseLine#RETURN_TYPE}, the same values that UDF gives for the same line. The bytes go
 * straight from the file's buffer into Spark's rows: no String per line, no row conversion.
 *
 * <p>With the option {@code rejects} (an id the caller makes, unique per batch), every rejected
 * line is also added to the {@link RejectCollector} of that id, which planning the scan opens
 * on the driver (bounded by the option {@code rejects_budget}, in characters); {@link
 * RejectLines} reads it back. With {@code derived=true}, the rows end with
 * the {@link Derived} columns (event id, calendar fields, status class, device classes),
 * null on rejected lines.
 *
 * <p>With the option {@code columns} (a DDL schema, e.g. a table's), the rows are the good
 * lines only, in those columns: each is a column above of the same name and type, or the
 * option {@code stamp_column} (filled with {@code stamp_micros}, a TIMESTAMP), or else null
 * (it must be nullable). The rows can then go to a table as they are, with no projection or
 * filter to copy them again. The rejected lines still go to the collector, which then also
 * counts each file's lines and rejects (so {@code rejects} is required): {@link RejectLines}
 * reads the counts back.
 */
public final class LogLines implements TableProvider {
  public static final StructType SCHEMA = schema(Field.values().length, new String[0], false);

  /**
   * The columns: the first {@code fields} {@link Field}s (all, or {@link Field#BASE} when
   * lines are read as combined with the client from $remote_addr), then a STRING column per
   * variable of {@code extras}, then, with {@code derived}, the {@link Derived} columns.
   */
  static StructType schema(int fields, String[] extras, boolean derived) {
    StructType s =
        new StructType()
            .add("source_file", "string", false)
            .add("line_number", "bigint", false)
            .add("value", "string", true)
            .add("raw_bytes", "binary", true);
    for (Field f : Field.values()) {
      if (f.ordinal() < fields) s = s.add(f.column, DataType.fromDDL(f.type), true);
    }
    for (String x : extras) s = s.add(x, "string", true);
    if (derived) {
      for (String[] c : Derived.COLUMNS) s = s.add(c[0], c[1], true);
    }
    return s;
  }

  @Override
  public StructType inferSchema(CaseInsensitiveStringMap options) {
    final String columns = options.get("columns");
    return columns == null ? lines(options) : StructType.fromDDL(columns);
  }

  /** The columns of every line read (the rows, without the option {@code columns}). */
  static StructType lines(Map<String, String> options) {
    final String format = options.get("format");
    final boolean derived = derived(options);
    if (format == null) return schema(fieldCount(options), new String[0], derived);
    return schema(Field.values().length, new LogFormat(format).extras, derived);
  }

  /** The option {@code rejects_budget}: characters a collector keeps (default: its own). */
  static long budget(String option) {
    if (option == null) return RejectCollector.DEFAULT_BUDGET_CHARS;
    try {
      return Long.parseLong(option.trim());
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(
          "dev.logberg.LogLines: the option 'rejects_budget' is a number of characters, not '"
              + option
              + "'");
    }
  }

  /** The option {@code derived=true}: the rows carry the {@link Derived} columns too. */
  static boolean derived(Map<String, String> options) {
    return "true".equalsIgnoreCase(options.get("derived"));
  }

  /** Every field with a format or a client rule; else the base ones (combined's fast path). */
  private static int fieldCount(Map<String, String> options) {
    final boolean narrow = options.get("format") == null && options.get("client") == null;
    return narrow ? Field.BASE : Field.values().length;
  }

  @Override
  public Table getTable(StructType schema, Transform[] partitioning, Map<String, String> props) {
    return new Files(schema);
  }

  private static final class Files extends ReadOnlyTable {
    Files(StructType schema) {
      super(schema);
    }

    @Override
    public String name() {
      return "logberg log lines";
    }

    @Override
    public ScanBuilder newScanBuilder(CaseInsensitiveStringMap options) {
      final String files = options.get("files");
      if (files == null || files.isBlank()) {
        throw new IllegalArgumentException("dev.logberg.LogLines: set the option 'files'");
      }
      final String[] uris = files.split("\n");
      final String rejects = options.get("rejects");
      final long budget = budget(options.get("rejects_budget"));
      final Settings settings = Settings.of(options);
      final StructType schema = this.schema;
      final Layout layout = Layout.of(lines(options), schema, options);
      if (layout.goodOnly && rejects == null) {
        throw new IllegalArgumentException(
            "dev.logberg.LogLines: the option 'columns' needs the option 'rejects' (its lines "
                + "and counts go there)");
      }
      return () ->
          new LinesScan(
              uris,
              rejects == null ? null : RejectCollector.open(rejects, budget),
              settings,
              layout);
    }
  }

  /**
   * How lines are read: a {@link LogFormat} (null: combined), the client rule, and whether
   * rows carry the {@link Derived} columns.
   */
  static final class Settings implements Serializable {
    private static final long serialVersionUID = 1L;
    final LogFormat format;
    final ClientAddress client;
    final boolean derived;

    Settings(LogFormat format, ClientAddress client, boolean derived) {
      this.format = format;
      this.client = client;
      this.derived = derived;
    }

    /** The options {@code format}, {@code client} and {@code derived}. */
    static Settings of(Map<String, String> options) {
      final String format = options.get("format");
      final String client = options.get("client");
      return new Settings(
          format == null ? null : new LogFormat(format),
          client == null || client.isEmpty() ? null : new ClientAddress(client),
          derived(options));
    }
  }

  /**
   * Where each column of a line read goes in the rows: {@code at[i]}, the row ordinal of the
   * i-th column of {@link #lines} (negative: not in the rows); the rows' columns that no
   * line column fills are null, or the stamp.
   */
  static final class Layout implements Serializable {
    private static final long serialVersionUID = 1L;
    final int[] at;
    final StructType rows;
    final int[] nulls; // the row ordinals always null
    final int stamp; // the stamp's ordinal, or -1
    final long stampMicros;
    final boolean goodOnly; // rows of good lines only (the option 'columns')

    private Layout(
        int[] at, StructType rows, int[] nulls, int stamp, long stampMicros, boolean good) {
      this.at = at;
      this.rows = rows;
      this.nulls = nulls;
      this.stamp = stamp;
      this.stampMicros = stampMicros;
      this.goodOnly = good;
    }

    static Layout of(StructType lines, StructType rows, Map<String, String> options) {
      final int[] at = new int[lines.length()];
      if (options.get("columns") == null) {
        for (int i = 0; i < at.length; i++) at[i] = i;
        return new Layout(at, rows, new int[0], -1, 0L, false);
      }
      java.util.Arrays.fill(at, -1);
      final String stampColumn = options.get("stamp_column");
      int stamp = -1;
      long micros = 0L;
      final java.util.List<Integer> nulls = new java.util.ArrayList<>();
      final StructField[] out = rows.fields();
      for (int j = 0; j < out.length; j++) {
        final StructField c = out[j];
        final int i = index(lines, c.name());
        if (i >= 0) {
          final DataType t = lines.fields()[i].dataType();
          if (!t.sameType(c.dataType())) {
            throw new IllegalArgumentException(
                "dev.logberg.LogLines: the option 'columns' asks for "
                    + c.name()
                    + " as "
                    + c.dataType().sql()
                    + "; the lines have it as "
                    + t.sql());
          }
          at[i] = j;
        } else if (c.name().equals(stampColumn)) {
          stamp = j;
          micros = stampMicros(options.get("stamp_micros"));
        } else if (c.nullable()) {
          nulls.add(j);
        } else {
          throw new IllegalArgumentException(
              "dev.logberg.LogLines: the option 'columns' asks for "
                  + c.name()
                  + " NOT NULL, which the lines do not have");
        }
      }
      if (stampColumn != null && stamp < 0) {
        throw new IllegalArgumentException(
            "dev.logberg.LogLines: the option 'stamp_column' names "
                + stampColumn
                + ", which the option 'columns' does not have");
      }
      final int[] n = nulls.stream().mapToInt(Integer::intValue).toArray();
      return new Layout(at, rows, n, stamp, micros, true);
    }

    private static int index(StructType s, String name) {
      final StructField[] f = s.fields();
      for (int i = 0; i < f.length; i++) {
        if (f[i].name().equals(name)) return i;
      }
      return -1;
    }

    private static long stampMicros(String option) {
      try {
        return Long.parseLong(option == null ? "" : option.trim());
      } catch (NumberFormatException e) {
        throw new IllegalArgumentException(
            "dev.logberg.LogLines: the option 'stamp_micros' is microseconds since the epoch, "
                + "not '"
                + option
                + "'");
      }
    }
  }

  private static final class LinesScan implements Scan, Batch {
    private final String[] uris;
    private final RejectCollector rejects;
    private final Settings settings;
    private final Layout layout;

    LinesScan(String[] uris, RejectCollector rejects, Settings settings, Layout layout) {
      this.uris = uris;
      this.rejects = rejects;
      this.settings = settings;
      this.layout = layout;
    }

    @Override
    public StructType readSchema() {
      return layout.rows;
    }

    @Override
    public String description() {
      return "LogLines[" + uris.length + " file(s)]";
    }

    @Override
    public Batch toBatch() {
      return this;
    }

    @Override
    public InputPartition[] planInputPartitions() {
      final InputPartition[] parts = new InputPartition[uris.length];
      for (int i = 0; i < uris.length; i++) parts[i] = new FilePart(uris[i]);
      return parts;
    }

    @Override
    public PartitionReaderFactory createReaderFactory() {
      final Configuration conf = SparkSession.active().sessionState().newHadoopConf();
      return new Readers(new HadoopConf(conf), rejects, settings, layout);
    }
  }

  private static final class FilePart implements InputPartition {
    private static final long serialVersionUID = 1L;
    final String uri;

    FilePart(String uri) {
      this.uri = uri;
    }
  }

  private static final class Readers implements PartitionReaderFactory {
    private static final long serialVersionUID = 1L;
    private final HadoopConf conf;
    private final RejectCollector rejects;
    private final Settings settings;
    private final Layout layout;

    Readers(HadoopConf conf, RejectCollector rejects, Settings settings, Layout layout) {
      this.conf = conf;
      this.rejects = rejects;
      this.settings = settings;
      this.layout = layout;
    }

    @Override
    public PartitionReader<InternalRow> createReader(InputPartition part) {
      try {
        return new Reader(
            ((FilePart) part).uri, conf.conf, new LineRows(settings, layout, rejects));
      } catch (IOException e) {
        throw new java.io.UncheckedIOException(e);
      }
    }
  }

  private static final class Reader implements PartitionReader<InternalRow> {
    private final InputStream in;
    private final Decompressor decompressor;
    private final LineRows rows;
    private byte[] buf = new byte[1 << 20];
    private int pos, lim;
    private boolean eof;
    private long lineNumber;
    private boolean counted;

    Reader(String uri, Configuration conf, LineRows rows) throws IOException {
      this.rows = rows;
      rows.source(uri);
      final Path path;
      try {
        path = new Path(new URI(uri));
      } catch (URISyntaxException e) {
        throw new IOException("not a URI: " + uri, e);
      }
      final InputStream raw = path.getFileSystem(conf).open(path);
      final CompressionCodec codec = new CompressionCodecFactory(conf).getCodec(path);
      if (codec == null) {
        decompressor = null;
        in = raw;
      } else {
        decompressor = CodecPool.getDecompressor(codec);
        in = codec.createInputStream(raw, decompressor);
      }
    }

    @Override
    public boolean next() throws IOException {
      while (true) {
        int scanFrom = pos;
        int end, next;
        while (true) {
          final int i = Bytes.lineEnd(buf, scanFrom, lim);
          if (i < lim) {
            end = i;
            if (buf[i] == '\n') {
              next = i + 1;
              break;
            }
            if (i + 1 < lim) {
              next = buf[i + 1] == '\n' ? i + 2 : i + 1;
              break;
            }
            if (eof) {
              next = i + 1;
              break;
            }
            scanFrom = i - fill(); // a CR at the buffer's end: is LF next?
            continue;
          }
          if (eof) {
            if (pos == lim) return done();
            end = lim; // the last line has no terminator
            next = lim;
            break;
          }
          scanFrom = lim - fill();
        }
        final int start = pos;
        pos = next;
        lineNumber++;
        int from = start;
        if (lineNumber == 1 && end - start >= 3 && buf[start] == (byte) 0xEF
            && buf[start + 1] == (byte) 0xBB && buf[start + 2] == (byte) 0xBF) {
          from += 3; // UTF-8 byte order mark
        }
        if (end > from && rows.line(lineNumber, buf, from, end)) return true;
      }
    }

    /** The end of the file: its counts go to the collector (a complete read only). */
    private boolean done() {
      if (!counted) rows.counted();
      counted = true;
      return false;
    }

    /** Read more bytes, keeping the unread ones; returns how far they moved left. */
    private int fill() throws IOException {
      final int moved = pos;
      if (pos > 0) {
        System.arraycopy(buf, pos, buf, 0, lim - pos);
        lim -= pos;
        pos = 0;
      }
      if (lim == buf.length) {
        buf = java.util.Arrays.copyOf(buf, buf.length * 2);
      }
      final int n = in.read(buf, lim, buf.length - lim);
      if (n < 0) {
        eof = true;
      } else {
        lim += n;
      }
      return moved;
    }

    @Override
    public InternalRow get() {
      return rows.get();
    }

    @Override
    public void close() throws IOException {
      try {
        in.close();
      } finally {
        if (decompressor != null) CodecPool.returnDecompressor(decompressor);
      }
    }
  }
}
