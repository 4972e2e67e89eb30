package dev.logberg;

import java.lang.ref.WeakReference;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.util.AccumulatorV2;

/**
 * The rejected lines of one ingest batch, gathered by {@link LogLines} while the batch is read
 * and written, so that they need no second read of the files.
 *
 * <p>An accumulator, so it is bounded: once the raw lines it holds pass {@code budgetChars}
 * it stops keeping lines and says so ({@link #overflowed()}); the job then reads the rejects
 * again from the files, as before. Spark may apply a task's updates more than once (a retried
 * stage), so {@link #publish} keeps one row per (file, line).
 */
public final class RejectCollector extends AccumulatorV2<Row, List<Row>> {
  private static final long serialVersionUID = 1L;

  /** The rows {@link #publish} makes visible. */
  public static final String SCHEMA =
      "source_file STRING, line_number BIGINT, value STRING, reject_reason STRING, "
          + "raw_bytes BINARY";

  /** Registered collectors by id, for {@link LogLines}' option {@code rejects}. */
  private static final Map<String, WeakReference<RejectCollector>> REGISTERED =
      new ConcurrentHashMap<>();

  private final long budgetChars;
  private ArrayList<Row> rows = new ArrayList<>();
  private long chars;
  private boolean overflowed;

  public RejectCollector(long budgetChars) {
    this.budgetChars = budgetChars;
  }

  @Override
  public boolean isZero() {
    return rows.isEmpty() && !overflowed;
  }

  @Override
  public RejectCollector copy() {
    final RejectCollector c = new RejectCollector(budgetChars);
    c.rows = new ArrayList<>(rows);
    c.chars = chars;
    c.overflowed = overflowed;
    return c;
  }

  @Override
  public void reset() {
    rows = new ArrayList<>();
    chars = 0;
    overflowed = false;
  }

  @Override
  public void add(Row row) {
    if (overflowed) return;
    final long size =
        row.getString(2).length()
            + row.getString(0).length()
            + (row.isNullAt(4) ? 0 : ((byte[]) row.get(4)).length);
    if (chars + size > budgetChars) {
      overflowed = true;
      rows = new ArrayList<>();
      chars = 0;
      return;
    }
    rows.add(row);
    chars += size;
  }

  @Override
  public void merge(AccumulatorV2<Row, List<Row>> other) {
    final RejectCollector o = (RejectCollector) other;
    if (o.overflowed) {
      overflowed = true;
      rows = new ArrayList<>();
      chars = 0;
      return;
    }
    for (Row r : o.rows) add(r);
  }

  @Override
  public List<Row> value() {
    return rows;
  }

  public boolean overflowed() {
    return overflowed;
  }

  /**
   * The collected lines, one row per (source_file, line_number), as the temp view {@code view};
   * returns how many rows it holds.
   */
  public long publish(SparkSession spark, String view) {
    final Map<List<Object>, Row> unique = new LinkedHashMap<>();
    for (Row r : rows) unique.putIfAbsent(List.of(r.get(0), r.get(1)), r);
    final Dataset<Row> frame =
        spark.createDataFrame(new ArrayList<>(unique.values()), StructType.fromDDL(SCHEMA));
    frame.createOrReplaceTempView(view);
    return unique.size();
  }

  /**
   * Register this collector with Spark (once) and return its id: {@link LogLines} adds the
   * lines it rejects here when its option {@code rejects} is that id.
   */
  public String register(SparkSession spark) {
    if (!isRegistered()) {
      // Unnamed: Spark reports a named accumulator's value to its listeners after every
      // task (as text, for the UI), which for thousands of lines costs more than keeping them.
      spark.sparkContext().register(this);
      REGISTERED.values().removeIf(ref -> ref.get() == null);
      REGISTERED.put(String.valueOf(id()), new WeakReference<>(this));
    }
    return String.valueOf(id());
  }

  /** The registered collector with this id (on the driver, where scans are planned). */
  static RejectCollector lookup(String id) {
    final WeakReference<RejectCollector> ref = REGISTERED.get(id);
    final RejectCollector found = ref == null ? null : ref.get();
    if (found == null) {
      throw new IllegalArgumentException("no RejectCollector registered with id " + id);
    }
    return found;
  }
}
