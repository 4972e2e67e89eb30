package dev.logberg;

import org.apache.spark.unsafe.types.UTF8String;

/** Why a line is rejected, in the order {@link LineScan} checks; the label is what tables keep. */
public enum Reject {
  /** Outside the grammar: no other field is set. */
  UNPARSEABLE("unparseable"),
  BAD_IP("bad_ip"),
  BAD_TIMESTAMP("bad_timestamp"),
  BAD_STATUS("bad_status"),
  BAD_SIZE("bad_size"),
  BAD_REQUEST_TIME("bad_request_time"),
  BAD_UPSTREAM_TIME("bad_upstream_time"),
  BAD_REQUEST_LENGTH("bad_request_length");

  public final String label;
  final UTF8String utf8;

  Reject(String label) {
    this.label = label;
    this.utf8 = UTF8String.fromString(label);
  }
}
