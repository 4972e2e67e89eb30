package dev.logberg;

import java.nio.charset.StandardCharsets;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.codegen.UnsafeRowWriter;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * Lines of one source, parsed into rows of a {@link LogLines.Layout}: what a reader of log
 * lines ({@link LogLines}' files, {@link KafkaLines}' messages) does with each line once it
 * has its bytes. The parsed fields go straight into the row (this is the scan's {@link
 * FieldSink}); a rejected line goes to the {@link RejectCollector}, if any, and is a row only
 * when the layout keeps rejected lines. One instance per reader (not thread-safe).
 */
final class LineRows implements FieldSink {
  /** Where the parsed fields start in a line's columns ({@link LogLines#SCHEMA}). */
  static final int FIELDS = 4;

  private final RejectCollector rejects;
  private final LineScan scan = new LineScan();
  private final LogFormat format;
  private final int extras; // where the extras' columns start
  private final int width; // the Fields in a row: all, or Field.BASE
  private final boolean derive;
  private final int[] derivedAt; // the derived columns' row ordinals (negative: not in the rows)
  private final LogLines.Layout layout;
  private final int[] at; // layout.at
  private final UnsafeRowWriter row;
  private String uri;
  private byte[] file;
  private Derived derived; // of this source; null: the rows carry no derived columns
  private long lines, rejected; // lines returned or left out, and of those the rejected
  private long bytes; // of the source's records, as its reader counts them (`read`)
  private long[] piece = {0, 0, 0, 0}; // whole from, until; this piece's from, until

  LineRows(LogLines.Settings settings, LogLines.Layout layout, RejectCollector rejects) {
    this.format = settings.format;
    final int n = format == null ? 0 : format.extras.length;
    this.derive = settings.derived;
    this.width =
        layout.at.length - FIELDS - n - (settings.derived ? Derived.width() : 0);
    this.extras = FIELDS + width;
    this.layout = layout;
    this.at = layout.at;
    this.derivedAt = new int[settings.derived ? Derived.width() : 0];
    for (int k = 0; k < derivedAt.length; k++) derivedAt[k] = at[FIELDS + width + n + k];
    this.row = new UnsafeRowWriter(layout.rows.length(), 512);
    scan.extras(n);
    scan.client = settings.client;
    this.rejects = rejects;
  }

  /** The lines that follow are of this source (its URI, as the rows' source_file). */
  void source(String uri) {
    this.uri = uri;
    this.file = uri.getBytes(StandardCharsets.UTF_8);
    this.derived = derive ? new Derived(file) : null;
    this.lines = 0;
    this.rejected = 0;
    this.bytes = 0;
    this.piece = new long[] {0, 0, 0, 0};
  }

  /**
   * The lines that follow are the piece {@code [from, until)} of the source, whose whole is
   * {@code [wholeFrom, wholeUntil)} (a Kafka partition's range read in several pieces): the
   * collector sums the pieces' counts. A source without it is one piece.
   */
  void piece(long wholeFrom, long wholeUntil, long from, long until) {
    this.piece = new long[] {wholeFrom, wholeUntil, from, until};
  }

  /** The reader read a record of {@code n} bytes (counted with the source's lines). */
  void read(long n) {
    bytes += n;
  }

  /** The source's counts go to the collector (call it after a complete read of it). */
  void counted() {
    if (layout.goodOnly) {
      rejects.count(uri, piece[0], piece[1], piece[2], piece[3], lines, rejected, bytes);
    }
  }

  /**
   * Parses the line {@code b[from, to)} into the row; false when it is rejected and the rows
   * are good lines only. Bytes that are not valid UTF-8 are decoded with replacement
   * characters first, as a Java String would be (a file's line; the rejects keep the bytes).
   */
  boolean line(long lineNumber, byte[] b, int from, int to) {
    byte[] original = null; // the line's bytes when they are not valid UTF-8
    final boolean ascii = Bytes.nonAscii(b, from, to) == to;
    if (!ascii && !UTF8String.fromBytes(b, from, to - from).isValid()) {
      original = java.util.Arrays.copyOfRange(b, from, to);
      final byte[] valid =
          new String(b, from, to - from, StandardCharsets.UTF_8).getBytes(StandardCharsets.UTF_8);
      b = valid;
      from = 0;
      to = valid.length;
    }
    final LineScan s = scan;
    final boolean ok = format == null ? s.scan(b, from, to) : format.scan(s, b, from, to) && s.check();
    lines++;
    final UnsafeRowWriter w = row;
    if (!ok) {
      rejected++;
      if (rejects != null) {
        rejects.add(
            RowFactory.create(
                uri, lineNumber, new String(b, from, to - from, StandardCharsets.UTF_8),
                s.reason.label, original));
      }
      if (layout.goodOnly) return false;
    }
    start(lineNumber);
    if (ok) {
      if (at[2] >= 0) w.setNullAt(at[2]);
      if (at[3] >= 0) w.setNullAt(at[3]);
    } else {
      if (at[2] >= 0) w.write(at[2], b, from, to - from);
      if (at[3] >= 0) {
        if (original == null) w.setNullAt(at[3]);
        else w.write(at[3], original);
      }
    }
    s.emit(this);
    if (derived != null) {
      if (ok) derived.write(w, derivedAt, s, lineNumber);
      else Derived.setNull(w, derivedAt);
    }
    return true;
  }

  /**
   * A record that is not a line at all ({@code reason}: why), kept with its bytes {@code raw}
   * (null for none) and its text made valid UTF-8 ({@code text}; null for none). False when
   * the rows are good lines only.
   */
  boolean notALine(long lineNumber, String text, String reason, byte[] raw) {
    lines++;
    rejected++;
    if (rejects != null) rejects.add(RowFactory.create(uri, lineNumber, text, reason, raw));
    if (layout.goodOnly) return false;
    start(lineNumber);
    final UnsafeRowWriter w = row;
    if (at[2] >= 0) {
      if (text == null) w.setNullAt(at[2]);
      else w.write(at[2], UTF8String.fromString(text));
    }
    if (at[3] >= 0) {
      if (raw == null) w.setNullAt(at[3]);
      else w.write(at[3], raw);
    }
    for (int i = FIELDS; i < at.length - derivedAt.length; i++) {
      if (at[i] >= 0) w.setNullAt(at[i]);
    }
    final int why = slot(Field.REJECT_REASON);
    if (why >= 0) w.write(why, UTF8String.fromString(reason));
    Derived.setNull(w, derivedAt);
    return true;
  }

  private void start(long lineNumber) {
    final UnsafeRowWriter w = row;
    w.reset();
    w.zeroOutNullBytes();
    if (at[0] >= 0) w.write(at[0], file);
    if (at[1] >= 0) w.write(at[1], lineNumber);
    for (int i : layout.nulls) w.setNullAt(i);
    if (layout.stamp >= 0) w.write(layout.stamp, layout.stampMicros);
  }

  InternalRow get() {
    return row.getRow();
  }

  // FieldSink: the parsed fields go straight into the row, after source_file, line_number,
  // value and raw_bytes.

  @Override
  public void text(Field f, byte[] b, int from, int to) {
    final int i = slot(f);
    if (i < 0) return;
    if (from < 0) row.setNullAt(i);
    else row.write(i, b, from, to - from);
  }

  @Override
  public void timestamp(Field f, long micros) {
    final int i = slot(f);
    if (i >= 0) row.write(i, micros);
  }

  @Override
  public void integer(Field f, int value) {
    final int i = slot(f);
    if (i >= 0) row.write(i, value);
  }

  @Override
  public void bigint(Field f, long value) {
    final int i = slot(f);
    if (i >= 0) row.write(i, value);
  }

  @Override
  public void reject(Field f, Reject reason) {
    final int i = slot(f);
    if (i >= 0) row.write(i, reason.utf8);
  }

  @Override
  public void setNull(Field f) {
    final int i = slot(f);
    if (i >= 0) row.setNullAt(i);
  }

  @Override
  public void extra(int k, byte[] b, int from, int to) {
    final int i = at[extras + k];
    if (i < 0) return;
    if (from < 0) row.setNullAt(i);
    else row.write(i, b, from, to - from);
  }

  /** The row ordinal of a field's column; negative when the rows do not have it. */
  private int slot(Field f) {
    return f.ordinal() < width ? at[FIELDS + f.ordinal()] : -1;
  }
}
