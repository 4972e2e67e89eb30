package dev.logberg;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.spark.SparkContext;
import org.apache.spark.sql.Row;
import org.apache.spark.util.AccumulatorV2;

/**
 * The rejected lines of one ingest batch, gathered by {@link LogLines} while the batch is read
 * and written, so that they need no second read of the files.
 *
 * <p>An accumulator, so it is bounded: once the raw lines it holds pass its budget (in
 * characters) it stops keeping lines and says so; the job then reads the rejects again from
 * the files, as before. Spark may apply a task's updates more than once (a retried stage), so
 * the lines are read back with one row per (file, line).
 *
 * <p>Its whole life is on the driver (in the Spark Connect server, when jobs run over Connect)
 * and reached by data source options only: the caller makes an id per batch and passes it as
 * {@link LogLines}' option {@code rejects}; planning that scan {@link #open}s the collector of
 * that id; {@link RejectLines} reads its status and its rows, which releases it. Collectors
 * that are never read back do not stay: at most {@link #MAX_OPEN} are open, each at most
 * {@link #MAX_AGE_NANOS}; the oldest go first (a status read then says "not kept", and the
 * caller reads the files again).
 */
public final class RejectCollector extends AccumulatorV2<Row, List<Row>> {
  private static final long serialVersionUID = 1L;

  /** The rows {@link RejectLines} gives. */
  public static final String SCHEMA =
      "source_file STRING, line_number BIGINT, value STRING, reject_reason STRING, "
          + "raw_bytes BINARY";

  /** The budget of a collector whose scan names none (option {@code rejects_budget}). */
  public static final long DEFAULT_BUDGET_CHARS = 32L << 20;

  /** How many collectors may be open at once (batches of concurrent clients). */
  static final int MAX_OPEN = 16;

  /** How long a collector stays open, unread (an ingest batch reads it back in minutes). */
  static final long MAX_AGE_NANOS = 6L * 3600 * 1_000_000_000L;

  /** Open collectors by id, oldest first; guarded by itself. */
  private static final LinkedHashMap<String, Opened> OPEN = new LinkedHashMap<>();

  private static final class Opened {
    final RejectCollector collector;
    final long openedAt;

    Opened(RejectCollector collector, long openedAt) {
      this.collector = collector;
      this.openedAt = openedAt;
    }
  }

  /** The rows a counts read gives ({@link RejectLines}, {@code read=counts}). */
  public static final String COUNTS =
      "source_file STRING, lines BIGINT, rejected BIGINT, bytes BIGINT";

  private final long budgetChars;
  private ArrayList<Row> rows = new ArrayList<>();
  // Per source read by a scan with the option 'columns', its pieces by where each starts
  // (a file is one piece; a Kafka partition's range may be read in several): {from, until,
  // lines, rejected, bytes} of the piece, and the whole's {from, until}. A piece's counts
  // are the same from any complete read of it, so a repeated update replaces, never adds.
  private HashMap<String, Pieces> counts = new HashMap<>();

  /** The counted pieces of one source, and the bounds of the whole they make up. */
  private static final class Pieces implements java.io.Serializable {
    private static final long serialVersionUID = 1L;
    final long from;
    final long until;
    final java.util.TreeMap<Long, long[]> byStart = new java.util.TreeMap<>();

    Pieces(long from, long until) {
      this.from = from;
      this.until = until;
    }

    Pieces copy() {
      final Pieces c = new Pieces(from, until);
      c.byStart.putAll(byStart);
      return c;
    }

    /**
     * {lines, rejected, bytes} of the whole, summed over a chain of pieces from its start
     * to its end (each piece starting where the one before ended); null while a piece of
     * it is not counted. Only the chain counts: a piece left from another plan of the
     * same source (a retried batch split otherwise) is never added to it.
     */
    long[] whole() {
      final long[] sum = new long[3];
      long at = from;
      while (true) {
        final long[] p = byStart.get(at);
        if (p == null) return null;
        for (int i = 0; i < 3; i++) sum[i] += p[2 + i];
        if (p[1] >= until) return p[1] == until ? sum : null;
        if (p[1] <= at) return null; // goes nowhere (never, from a reader)
        at = p[1];
      }
    }
  }
  private long chars;
  private boolean overflowed;

  public RejectCollector(long budgetChars) {
    this.budgetChars = budgetChars;
  }

  @Override
  public boolean isZero() {
    return rows.isEmpty() && !overflowed && counts.isEmpty();
  }

  @Override
  public RejectCollector copy() {
    final RejectCollector c = new RejectCollector(budgetChars);
    c.rows = new ArrayList<>(rows);
    c.chars = chars;
    c.overflowed = overflowed;
    c.counts = new HashMap<>();
    for (Map.Entry<String, Pieces> e : counts.entrySet()) {
      c.counts.put(e.getKey(), e.getValue().copy());
    }
    return c;
  }

  @Override
  public void reset() {
    rows = new ArrayList<>();
    chars = 0;
    overflowed = false;
    counts = new HashMap<>();
  }

  @Override
  public void add(Row row) {
    if (overflowed) return;
    final long size =
        (row.isNullAt(2) ? 0 : row.getString(2).length()) // a tombstone has no text
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
  public synchronized void merge(AccumulatorV2<Row, List<Row>> other) {
    final RejectCollector o = (RejectCollector) other;
    for (Map.Entry<String, Pieces> e : o.counts.entrySet()) {
      final Pieces theirs = e.getValue();
      final Pieces mine = counts.get(e.getKey());
      if (mine == null || mine.from != theirs.from || mine.until != theirs.until) {
        counts.put(e.getKey(), theirs.copy());
      } else {
        mine.byStart.putAll(theirs.byStart);
      }
    }
    if (o.overflowed) {
      overflowed = true;
      rows = new ArrayList<>();
      chars = 0;
      return;
    }
    for (Row r : o.rows) add(r);
  }

  /**
   * A source read whole: its lines (not empty; a topic's messages) and how many of them were
   * rejected, and the bytes of a topic's messages (a file's: 0, its size is known before).
   */
  public void count(String uri, long lines, long rejected, long bytes) {
    count(uri, 0, 0, 0, 0, lines, rejected, bytes);
  }

  /**
   * A piece {@code [from, until)} of a source whose whole is {@code [wholeFrom, wholeUntil)}
   * (a Kafka partition's range, read in several pieces), read whole: its counts, as {@link
   * #count(String, long, long, long)}'s. The source is counted once every piece of it is.
   */
  public void count(
      String uri, long wholeFrom, long wholeUntil, long from, long until, long lines,
      long rejected, long bytes) {
    Pieces p = counts.get(uri);
    if (p == null || p.from != wholeFrom || p.until != wholeUntil) {
      p = new Pieces(wholeFrom, wholeUntil);
      counts.put(uri, p);
    }
    p.byStart.put(from, new long[] {from, until, lines, rejected, bytes});
  }

  @Override
  public List<Row> value() {
    return rows;
  }

  public synchronized boolean overflowed() {
    return overflowed;
  }

  /** The collected lines, one row per (source_file, line_number), in the order added. */
  synchronized List<Row> unique() {
    final Map<List<Object>, Row> unique = new LinkedHashMap<>();
    for (Row r : rows) unique.putIfAbsent(List.of(r.get(0), r.get(1)), r);
    return new ArrayList<>(unique.values());
  }

  /**
   * The collector of this id, opened (and registered with Spark) by the first scan that names
   * it; on the driver, where scans are planned. Also closes what is too old or too many.
   */
  static RejectCollector open(String id, long budgetChars) {
    if (id.isBlank()) {
      throw new IllegalArgumentException("dev.logberg.LogLines: the option 'rejects' is empty");
    }
    if (budgetChars < 0) {
      throw new IllegalArgumentException(
          "dev.logberg.LogLines: the option 'rejects_budget' is negative: " + budgetChars);
    }
    synchronized (OPEN) {
      final long now = System.nanoTime();
      final Opened found = OPEN.get(id);
      if (found != null) return found.collector;
      final Iterator<Opened> oldest = OPEN.values().iterator();
      while (oldest.hasNext()) {
        final Opened o = oldest.next();
        if (OPEN.size() < MAX_OPEN && now - o.openedAt <= MAX_AGE_NANOS) break;
        oldest.remove();
      }
      final RejectCollector c = new RejectCollector(budgetChars);
      // Unnamed: Spark reports a named accumulator's value to its listeners after every
      // task (as text, for the UI), which for thousands of lines costs more than keeping them.
      SparkContext.getOrCreate().register(c);
      OPEN.put(id, new Opened(c, now));
      return c;
    }
  }

  /**
   * Whether the collector of this id holds every line it was given, and how many distinct
   * lines: (false, 0) when it overflowed (then it is released: nothing is left to read) or
   * when no collector has this id (never opened, read already, or closed as too old).
   */
  static Object[] status(String id) {
    final RejectCollector c;
    synchronized (OPEN) {
      final Opened found = OPEN.get(id);
      if (found == null) return new Object[] {false, 0L};
      c = found.collector;
      if (c.overflowed()) {
        OPEN.remove(id);
        return new Object[] {false, 0L};
      }
    }
    return new Object[] {true, (long) c.unique().size()};
  }

  /**
   * (source_file, lines, rejected, bytes) of every source a good-lines scan of this id read
   * whole (every piece of it, summed). The collector stays open: read the counts before its
   * status and lines.
   */
  static List<Object[]> counts(String id) {
    final RejectCollector c;
    synchronized (OPEN) {
      final Opened found = OPEN.get(id);
      if (found == null) {
        throw new IllegalArgumentException(
            "dev.logberg.RejectLines: no counts kept under id "
                + id
                + " (read already, or closed as too old)");
      }
      c = found.collector;
    }
    final List<Object[]> out = new ArrayList<>();
    synchronized (c) {
      for (Map.Entry<String, Pieces> e : c.counts.entrySet()) {
        final long[] n = e.getValue().whole();
        if (n != null) out.add(new Object[] {e.getKey(), n[0], n[1], n[2]});
      }
    }
    return out;
  }

  /** The lines of this id's collector, one row per (file, line); releases the collector. */
  static List<Row> take(String id) {
    final Opened found;
    synchronized (OPEN) {
      found = OPEN.remove(id);
    }
    if (found == null) {
      throw new IllegalArgumentException(
          "dev.logberg.RejectLines: no rejects kept under id "
              + id
              + " (read already, or closed as too old)");
    }
    if (found.collector.overflowed()) {
      throw new IllegalArgumentException(
          "dev.logberg.RejectLines: the rejects of id " + id + " passed their budget");
    }
    return found.collector.unique();
  }

  /** How many collectors are open (for tests). */
  public static int openCount() {
    synchronized (OPEN) {
      return OPEN.size();
    }
  }
}
