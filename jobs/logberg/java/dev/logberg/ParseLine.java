package dev.logberg;

import java.nio.charset.StandardCharsets;
import java.time.Instant;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.api.java.UDF1;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StructType;

/**
 * A Spark Java UDF: one nginx "combined" line to a row of {@link #RETURN_TYPE}, scanned by
 * {@link LineScan} (grammar and reject rules there). {@code reject_reason} is null for a good
 * line; an "unparseable" line has every other field null. Registered by {@code
 * logberg.parse.register} with {@code spark.udf.registerJavaFunction}; ingest reads files with
 * {@link LogLines} instead, which gives the same fields without this UDF's String round trip.
 */
public final class ParseLine implements UDF1<String, Row> {
  private static final long serialVersionUID = 1L;

  /** The UDF's return type, as Spark DDL (logberg.parse reads it from here, not a copy). */
  public static final String RETURN_TYPE =
      "STRUCT<ip_address: STRING, remote_user: STRING, timestamp: TIMESTAMP, request: STRING,"
          + " status_code: INT, response_size: BIGINT, referer: STRING, user_agent: STRING,"
          + " forwarded_for: STRING, method: STRING, url: STRING, url_path: STRING,"
          + " query_string: STRING, protocol: STRING, file_extension: STRING,"
          + " reject_reason: STRING>";

  /** The index of reject_reason in the result. */
  public static final int REASON =
      ((StructType) DataType.fromDDL(RETURN_TYPE)).fieldIndex("reject_reason");

  private static final Row UNPARSEABLE =
      RowFactory.create(
          null, null, null, null, null, null, null, null, null, null, null, null, null, null,
          null, LineScan.UNPARSEABLE);

  @Override
  public Row call(String line) {
    if (line == null) {
      return null;
    }
    final byte[] b = line.getBytes(StandardCharsets.UTF_8);
    final LineScan s = new LineScan();
    s.scan(b, 0, b.length);
    if (s.reason == LineScan.UNPARSEABLE) {
      return UNPARSEABLE;
    }
    final byte[] ext = s.extension();
    return RowFactory.create(
        text(b, s.ipStart, s.ipEnd),
        text(b, s.userStart, s.userEnd),
        s.timestampOk ? Instant.ofEpochSecond(s.micros / 1_000_000L) : null,
        text(b, s.reqStart, s.reqEnd),
        s.status < 0 ? null : s.status,
        s.size < 0 ? null : s.size,
        text(b, s.refStart, s.refEnd),
        text(b, s.agentStart, s.agentEnd),
        text(b, s.fwdStart, s.fwdEnd),
        text(b, s.methodStart, s.methodEnd),
        text(b, s.urlStart, s.urlEnd),
        text(b, s.urlStart, s.pathEnd),
        text(b, s.queryStart, s.urlEnd),
        text(b, s.protoStart, s.protoEnd),
        ext == null ? null : new String(ext, StandardCharsets.UTF_8),
        s.reason);
  }

  private static String text(byte[] b, int from, int to) {
    return from < 0 ? null : new String(b, from, to - from, StandardCharsets.UTF_8);
  }
}
