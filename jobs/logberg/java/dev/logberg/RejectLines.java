package dev.logberg;

import java.io.Serializable;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
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
 * The rejected lines a {@link LogLines} scan kept (its option {@code rejects}), read back:
 * {@code spark.read.format("dev.logberg.RejectLines").option("id", id).load()}.
 *
 * <p>Two reads, both planned on the driver where the collector lives:
 *
 * <ul>
 *   <li>{@code read=status}: one row ({@code kept BOOLEAN, lines BIGINT}): whether the
 *       collector holds every rejected line (false when it passed its budget, or when there is
 *       no collector of that id), and how many distinct (file, line) it holds. An overflowed
 *       collector is released here.
 *   <li>{@code read=rows} (the default): the lines, {@link RejectCollector#SCHEMA}, one row per
 *       (source_file, line_number). Planning this read releases the collector: read it once
 *       (e.g. into a local checkpoint) and use that.
 *   <li>{@code read=counts}: {@link RejectCollector#COUNTS}, a row per file that a scan with
 *       the option {@code columns} read whole. Read them before the status: an overflowed
 *       collector is released there.
 * </ul>
 */
public final class RejectLines implements TableProvider {
  static final StructType STATUS = StructType.fromDDL("kept BOOLEAN, lines BIGINT");
  static final StructType ROWS = StructType.fromDDL(RejectCollector.SCHEMA);
  static final StructType COUNTS = StructType.fromDDL(RejectCollector.COUNTS);

  /** Rows per input partition of a rows read. */
  private static final int CHUNK = 8192;

  @Override
  public StructType inferSchema(CaseInsensitiveStringMap options) {
    return switch (read(options)) {
      case "status" -> STATUS;
      case "counts" -> COUNTS;
      default -> ROWS;
    };
  }

  private static String read(Map<String, String> options) {
    final String read = options.getOrDefault("read", "rows");
    if (read.equals("rows") || read.equals("status") || read.equals("counts")) return read;
    throw new IllegalArgumentException(
        "dev.logberg.RejectLines: the option 'read' is 'rows', 'status' or 'counts', not '"
            + read
            + "'");
  }

  @Override
  public Table getTable(StructType schema, Transform[] partitioning, Map<String, String> props) {
    return new Kept(schema);
  }

  private static final class Kept extends ReadOnlyTable {
    Kept(StructType schema) {
      super(schema);
    }

    @Override
    public String name() {
      return "logberg rejected lines";
    }

    @Override
    public ScanBuilder newScanBuilder(CaseInsensitiveStringMap options) {
      final String id = options.get("id");
      if (id == null || id.isBlank()) {
        throw new IllegalArgumentException("dev.logberg.RejectLines: set the option 'id'");
      }
      final String read = read(options);
      final StructType schema = this.schema;
      return () -> {
        final List<Object[]> rows = new ArrayList<>();
        if (read.equals("status")) {
          rows.add(RejectCollector.status(id));
        } else if (read.equals("counts")) {
          rows.addAll(RejectCollector.counts(id));
        } else {
          for (Row r : RejectCollector.take(id)) {
            rows.add(new Object[] {r.get(0), r.get(1), r.get(2), r.get(3), r.get(4)});
          }
        }
        return new Rows(rows, schema);
      };
    }
  }

  private static final class Rows implements Scan, Batch {
    private final List<Object[]> rows;
    private final StructType schema;

    Rows(List<Object[]> rows, StructType schema) {
      this.rows = rows;
      this.schema = schema;
    }

    @Override
    public StructType readSchema() {
      return schema;
    }

    @Override
    public String description() {
      return "RejectLines[" + rows.size() + " row(s)]";
    }

    @Override
    public Batch toBatch() {
      return this;
    }

    @Override
    public InputPartition[] planInputPartitions() {
      final int n = Math.max(1, (rows.size() + CHUNK - 1) / CHUNK);
      final InputPartition[] parts = new InputPartition[n];
      for (int i = 0; i < n; i++) {
        final int from = i * CHUNK;
        final int to = Math.min(rows.size(), from + CHUNK);
        parts[i] = new Chunk(new ArrayList<>(rows.subList(from, to)));
      }
      return parts;
    }

    @Override
    public PartitionReaderFactory createReaderFactory() {
      return new Readers();
    }
  }

  /** Some of the rows, as plain Java values (String, Long, Boolean, byte[]). */
  private static final class Chunk implements InputPartition, Serializable {
    private static final long serialVersionUID = 1L;
    final ArrayList<Object[]> rows;

    Chunk(ArrayList<Object[]> rows) {
      this.rows = rows;
    }
  }

  private static final class Readers implements PartitionReaderFactory {
    private static final long serialVersionUID = 1L;

    @Override
    public PartitionReader<InternalRow> createReader(InputPartition part) {
      final List<Object[]> rows = ((Chunk) part).rows;
      return new PartitionReader<>() {
        private int next = -1;

        @Override
        public boolean next() {
          return ++next < rows.size();
        }

        @Override
        public InternalRow get() {
          final Object[] in = rows.get(next);
          final Object[] out = new Object[in.length];
          for (int i = 0; i < in.length; i++) {
            out[i] = in[i] instanceof String s ? UTF8String.fromString(s) : in[i];
          }
          return new GenericInternalRow(out);
        }

        @Override
        public void close() {}
      };
    }
  }
}
