package dev.logberg;

/** Where {@link LineScan#emit} puts a line's fields; each call names its {@link Field}. */
interface FieldSink {
  /** UTF-8 bytes {@code b[from, to)}; a negative {@code from} is null. */
  void text(Field f, byte[] b, int from, int to);

  /** Microseconds since the epoch, UTC. */
  void timestamp(Field f, long micros);

  void integer(Field f, int value);

  void bigint(Field f, long value);

  void reject(Field f, Reject reason);

  void setNull(Field f);

  /** The k-th variable a {@link LogFormat} does not know (a STRING column); as {@link #text}. */
  default void extra(int k, byte[] b, int from, int to) {}
}
