package dev.logberg;

import java.nio.charset.StandardCharsets;
import java.time.Instant;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.api.java.UDF1;

/**
 * A Spark Java UDF: one nginx "combined" line to a row of {@link #RETURN_TYPE}, scanned by
 * {@link LineScan} (grammar and reject rules there). {@code reject_reason} is null for a good
 * line; an unparseable line has every other field null. Registered by {@code
 * logberg.pipeline.parse.register} with {@code spark.udf.registerJavaFunction}; ingest reads files with
 * {@link LogLines} instead, which gives the same fields without this UDF's String round trip.
 */
public final class ParseLine implements UDF1<String, Row> {
  private static final long serialVersionUID = 1L;

  /** The UDF's return type, as Spark DDL: every {@link Field}, in order. */
  public static final String RETURN_TYPE = Field.structDdl();

  /**
   * {@link #RETURN_TYPE}, for SQL: {@code reflect('dev.logberg.ParseLine', 'returnType')} (a static
   * field is out of SQL's reach; Spark Connect has no other way into the JVM).
   */
  public static String returnType() {
    return RETURN_TYPE;
  }

  @Override
  public Row call(String line) {
    if (line == null) {
      return null;
    }
    final byte[] b = line.getBytes(StandardCharsets.UTF_8);
    final LineScan s = new LineScan();
    s.scan(b, 0, b.length);
    final Values values = new Values();
    s.emit(values);
    return RowFactory.create(values.out);
  }

  /** The fields as the Java values of an external Row. */
  private static final class Values implements FieldSink {
    final Object[] out = new Object[Field.values().length];

    @Override
    public void text(Field f, byte[] b, int from, int to) {
      out[f.ordinal()] = from < 0 ? null : new String(b, from, to - from, StandardCharsets.UTF_8);
    }

    @Override
    public void timestamp(Field f, long micros) {
      out[f.ordinal()] = Instant.ofEpochSecond(micros / 1_000_000L);
    }

    @Override
    public void integer(Field f, int value) {
      out[f.ordinal()] = value;
    }

    @Override
    public void bigint(Field f, long value) {
      out[f.ordinal()] = value;
    }

    @Override
    public void reject(Field f, Reject reason) {
      out[f.ordinal()] = reason.label;
    }

    @Override
    public void setNull(Field f) {
      out[f.ordinal()] = null;
    }
  }
}
