package dev.logberg;

/**
 * The fields a parsed line yields, in their column order: the one list both the UDF ({@link
 * ParseLine}) and the source ({@link LogLines}) write by, and the Python side reads ({@code
 * ParseLine.RETURN_TYPE}).
 */
public enum Field {
  IP_ADDRESS("ip_address", "STRING"),
  REMOTE_USER("remote_user", "STRING"),
  TIMESTAMP("timestamp", "TIMESTAMP"),
  REQUEST("request", "STRING"),
  STATUS_CODE("status_code", "INT"),
  RESPONSE_SIZE("response_size", "BIGINT"),
  REFERER("referer", "STRING"),
  USER_AGENT("user_agent", "STRING"),
  FORWARDED_FOR("forwarded_for", "STRING"),
  METHOD("method", "STRING"),
  URL("url", "STRING"),
  URL_PATH("url_path", "STRING"),
  QUERY_STRING("query_string", "STRING"),
  PROTOCOL("protocol", "STRING"),
  FILE_EXTENSION("file_extension", "STRING"),
  REJECT_REASON("reject_reason", "STRING"),
  // Only what a log_format other than combined carries (LogFormat), or the client rule
  // (ClientAddress); the source leaves them out of its rows otherwise (LogLines).
  REQUEST_TIME_MS("request_time_ms", "INT"),
  UPSTREAM_RESPONSE_TIME_MS("upstream_response_time_ms", "INT"),
  UPSTREAM_ATTEMPTS("upstream_attempts", "INT"),
  REQUEST_LENGTH("request_length", "BIGINT"),
  UPSTREAM_ADDR("upstream_addr", "STRING"),
  UPSTREAM_STATUS("upstream_status", "STRING"),
  HOST("host", "STRING"),
  REQUEST_ID("request_id", "STRING"),
  REMOTE_ADDR("remote_addr", "STRING");

  /** The fields every line has: up to reject_reason. */
  static final int BASE = REJECT_REASON.ordinal() + 1;

  /** The column name. */
  public final String column;
  /** The Spark SQL type. */
  public final String type;

  Field(String column, String type) {
    this.column = column;
    this.type = type;
  }

  /** The field of this column name; null when none. */
  static Field byColumn(String column) {
    for (Field f : values()) {
      if (f.column.equals(column)) return f;
    }
    return null;
  }

  /** {@code STRUCT<ip_address: STRING, ...>} of every field, in order. */
  static String structDdl() {
    final StringBuilder out = new StringBuilder("STRUCT<");
    for (Field f : values()) {
      if (f.ordinal() > 0) out.append(", ");
      out.append(f.column).append(": ").append(f.type);
    }
    return out.append('>').toString();
  }
}
