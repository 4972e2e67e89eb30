package dev.logberg;

import java.time.Instant;
import java.util.Locale;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.api.java.UDF1;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StructType;

/**
 * One nginx "combined" line (plus an optional quoted X-Forwarded-For) to typed fields, in one
 * left-to-right scan: no regex, no intermediate strings, no date formatter.
 *
 * <p>Grammar: the regex {@code ^(\S+) (\S+) (\S+) \[([^\]]*)\] "([^"]*)" (\S+) (\S+)
 * "([^"]*)" "([^"]*)"(.*)$} with possessive quantifiers, where {@code \S} is anything but
 * space, tab, LF, VT, FF and CR:
 *
 * <pre>
 * ip SP ident SP user SP "[" time "]" SP '"' request '"' SP status SP size
 *    SP '"' referer '"' SP '"' agent '"' rest
 * </pre>
 *
 * nginx escapes '"' and control bytes inside quoted fields as \xHH, so a quoted field never
 * holds a raw quote. {@code rest} is ignored unless it starts with {@code  "}: then its first
 * quoted value is X-Forwarded-For.
 *
 * <p>The result is a row of {@link #RETURN_TYPE}; {@code reject_reason} is null for a good
 * line, else the first of bad_ip, bad_timestamp, bad_status, bad_size that applies, and
 * "unparseable" (all fields null) for a line outside the grammar. "-" is null in remote_user,
 * referer, user_agent and forwarded_for, and 0 in response_size. Registered by {@code
 * logberg.parse.register} with {@code spark.udf.registerJavaFunction}.
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
          null, "unparseable");

  private static final String[] MONTHS = {
    "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"
  };

  @Override
  public Row call(String line) {
    if (line == null) {
      return null;
    }
    final int n = line.length();
    int i = 0;
    // ip, ident, user: non-blank runs, each followed by one space.
    final int ipEnd = token(line, i, n);
    if (ipEnd <= i || !at(line, ipEnd, ' ')) return UNPARSEABLE;
    i = ipEnd + 1;
    final int identEnd = token(line, i, n);
    if (identEnd <= i || !at(line, identEnd, ' ')) return UNPARSEABLE;
    final int userStart = identEnd + 1;
    final int userEnd = token(line, userStart, n);
    if (userEnd <= userStart || !at(line, userEnd, ' ') || !at(line, userEnd + 1, '[')) {
      return UNPARSEABLE;
    }
    // [time]
    final int timeStart = userEnd + 2;
    final int timeEnd = line.indexOf(']', timeStart);
    if (timeEnd < 0 || !at(line, timeEnd + 1, ' ') || !at(line, timeEnd + 2, '"')) {
      return UNPARSEABLE;
    }
    // "request"
    final int reqStart = timeEnd + 3;
    final int reqEnd = line.indexOf('"', reqStart);
    if (reqEnd < 0 || !at(line, reqEnd + 1, ' ')) return UNPARSEABLE;
    // status, size
    final int statusStart = reqEnd + 2;
    final int statusEnd = token(line, statusStart, n);
    if (statusEnd <= statusStart || !at(line, statusEnd, ' ')) return UNPARSEABLE;
    final int sizeStart = statusEnd + 1;
    final int sizeEnd = token(line, sizeStart, n);
    if (sizeEnd <= sizeStart || !at(line, sizeEnd, ' ') || !at(line, sizeEnd + 1, '"')) {
      return UNPARSEABLE;
    }
    // "referer" "agent"
    final int refStart = sizeEnd + 2;
    final int refEnd = line.indexOf('"', refStart);
    if (refEnd < 0 || !at(line, refEnd + 1, ' ') || !at(line, refEnd + 2, '"')) {
      return UNPARSEABLE;
    }
    final int agentStart = refEnd + 3;
    final int agentEnd = line.indexOf('"', agentStart);
    if (agentEnd < 0) return UNPARSEABLE;
    // rest: ` "forwarded-for"` when present; anything else is ignored.
    String forwarded = null;
    final int restStart = agentEnd + 1;
    if (at(line, restStart, ' ') && at(line, restStart + 1, '"')) {
      final int fwdStart = restStart + 2;
      final int close = line.indexOf('"', fwdStart);
      forwarded = dashNull(line, fwdStart, close < 0 ? n : close);
    }

    final boolean ipOk = ipChars(line, 0, ipEnd);
    final Instant timestamp = timestamp(line, timeStart, timeEnd);
    final Integer status = status(line, statusStart, statusEnd);
    final Long size = size(line, sizeStart, sizeEnd);
    final String reason;
    if (!ipOk) {
      reason = "bad_ip";
    } else if (timestamp == null) {
      reason = "bad_timestamp";
    } else if (status == null) {
      reason = "bad_status";
    } else if (size == null) {
      reason = "bad_size";
    } else {
      reason = null;
    }
    final String request = line.substring(reqStart, reqEnd);
    final String[] target = request(request);
    return RowFactory.create(
        line.substring(0, ipEnd),
        dashNull(line, userStart, userEnd),
        timestamp,
        request,
        status,
        size,
        dashNull(line, refStart, refEnd),
        dashNull(line, agentStart, agentEnd),
        forwarded,
        target[0],
        target[1],
        target[2],
        target[3],
        target[4],
        target[5],
        reason);
  }

  private static final String[] NO_TARGET = new String[6];

  /**
   * {@code METHOD target HTTP/x.y} to method, url, url_path, query_string, protocol and
   * file_extension. HTTP/0.9 {@code GET /} has a null protocol; anything else (a TLS handshake,
   * {@code -}) gives all nulls. The extension is the lower-cased text after the last dot of the
   * path's last segment.
   */
  static String[] request(String r) {
    final int sp1 = r.indexOf(' ');
    if (sp1 < 1 || sp1 > 20) return NO_TARGET;
    for (int i = 0; i < sp1; i++) {
      final char c = r.charAt(i);
      if (c < 'A' || c > 'Z') return NO_TARGET;
    }
    final int sp2 = r.indexOf(' ', sp1 + 1);
    final String url;
    String protocol = null;
    if (sp2 < 0) {
      url = r.substring(sp1 + 1); // HTTP/0.9
    } else {
      if (r.indexOf(' ', sp2 + 1) >= 0 || !r.startsWith("HTTP/", sp2 + 1)) return NO_TARGET;
      url = r.substring(sp1 + 1, sp2);
      protocol = r.substring(sp2 + 1);
    }
    final int q = url.indexOf('?');
    final String path = q < 0 ? url : url.substring(0, q);
    final String query = q < 0 ? null : url.substring(q + 1);
    final int dot = path.lastIndexOf('.');
    final String extension =
        dot > path.lastIndexOf('/') ? path.substring(dot + 1).toLowerCase(Locale.ROOT) : null;
    return new String[] {r.substring(0, sp1), url, path, query, protocol, extension};
  }

  private static boolean at(String s, int i, char c) {
    return i < s.length() && s.charAt(i) == c;
  }

  /** End of the run of non-blank characters from {@code i} ({@code i} itself when none). */
  private static int token(String s, int i, int n) {
    while (i < n) {
      final char c = s.charAt(i);
      if (c == ' ' || (c >= '\t' && c <= '\r')) break;
      i++;
    }
    return i;
  }

  private static String dashNull(String s, int from, int to) {
    return to - from == 1 && s.charAt(from) == '-' ? null : s.substring(from, to);
  }

  /** 2 to 45 of [0-9A-Fa-f:.]: an IPv4 or IPv6 address's characters (logberg.parse.IP_CHARS). */
  static boolean ipChars(String s, int from, int to) {
    final int len = to - from;
    if (len < 2 || len > 45) return false;
    for (int i = from; i < to; i++) {
      final char c = s.charAt(i);
      final boolean ok =
          (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
              || c == ':' || c == '.';
      if (!ok) return false;
    }
    return true;
  }

  /** Three digits, 100 to 599. */
  static Integer status(String s, int from, int to) {
    if (to - from != 3) return null;
    final int a = digit(s, from), b = digit(s, from + 1), c = digit(s, from + 2);
    if (a < 1 || a > 5 || b < 0 || c < 0) return null;
    return a * 100 + b * 10 + c;
  }

  /** {@code -} is 0; else 1 to 18 digits. */
  static Long size(String s, int from, int to) {
    final int len = to - from;
    if (len == 1 && s.charAt(from) == '-') return 0L;
    if (len < 1 || len > 18) return null;
    long v = 0;
    for (int i = from; i < to; i++) {
      final int d = digit(s, i);
      if (d < 0) return null;
      v = v * 10 + d;
    }
    return v;
  }

  /**
   * {@code dd/Mon/yyyy:HH:mm:ss +hhmm} (nginx's $time_local) to an instant; null when it is not
   * exactly that or names no real time. Month names are English, any case; the offset is at
   * most 18 hours, as java.time allows.
   */
  static Instant timestamp(String s, int from, int to) {
    if (to - from != 26) return null;
    final int p = from;
    if (s.charAt(p + 2) != '/' || s.charAt(p + 6) != '/' || s.charAt(p + 11) != ':'
        || s.charAt(p + 14) != ':' || s.charAt(p + 17) != ':' || s.charAt(p + 20) != ' ') {
      return null;
    }
    final int day = number(s, p, 2);
    final int month = month(s, p + 3);
    final int year = number(s, p + 7, 4);
    final int hour = number(s, p + 12, 2);
    final int minute = number(s, p + 15, 2);
    final int second = number(s, p + 18, 2);
    final char sign = s.charAt(p + 21);
    final int offHours = number(s, p + 22, 2);
    final int offMinutes = number(s, p + 24, 2);
    if (day < 1 || month < 1 || year < 0 || hour < 0 || hour > 23 || minute < 0 || minute > 59
        || second < 0 || second > 59 || (sign != '+' && sign != '-') || offHours < 0
        || offMinutes < 0 || offMinutes > 59 || offHours * 60 + offMinutes > 18 * 60
        || day > daysInMonth(year, month)) {
      return null;
    }
    final int offset = (sign == '+' ? 1 : -1) * (offHours * 3600 + offMinutes * 60);
    final long seconds =
        epochDay(year, month, day) * 86400L + hour * 3600L + minute * 60L + second - offset;
    return Instant.ofEpochSecond(seconds);
  }

  private static int digit(String s, int i) {
    final char c = s.charAt(i);
    return c >= '0' && c <= '9' ? c - '0' : -1;
  }

  /** The non-negative number in {@code width} digits at {@code i}, or -1. */
  private static int number(String s, int i, int width) {
    int v = 0;
    for (int k = i; k < i + width; k++) {
      final int d = digit(s, k);
      if (d < 0) return -1;
      v = v * 10 + d;
    }
    return v;
  }

  private static int month(String s, int i) {
    for (int m = 0; m < 12; m++) {
      final String name = MONTHS[m];
      if (Character.toLowerCase(s.charAt(i)) == name.charAt(0)
          && Character.toLowerCase(s.charAt(i + 1)) == name.charAt(1)
          && Character.toLowerCase(s.charAt(i + 2)) == name.charAt(2)) {
        return m + 1;
      }
    }
    return -1;
  }

  private static int daysInMonth(int year, int month) {
    switch (month) {
      case 2:
        final boolean leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
        return leap ? 29 : 28;
      case 4:
      case 6:
      case 9:
      case 11:
        return 30;
      default:
        return 31;
    }
  }

  /** Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's days_from_civil). */
  static long epochDay(int year, int month, int day) {
    final int y = month <= 2 ? year - 1 : year;
    final int era = Math.floorDiv(y, 400);
    final int yoe = y - era * 400;
    final int mp = (month + 9) % 12;
    final int doy = (153 * mp + 2) / 5 + day - 1;
    final int doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097L + doe - 719468;
  }
}
