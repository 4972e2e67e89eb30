package dev.logberg;

import java.nio.charset.StandardCharsets;
import java.util.Locale;

/**
 * One nginx "combined" line (plus an optional quoted X-Forwarded-For), as UTF-8 bytes, to the
 * positions and values of its fields, in one left-to-right scan: no regex, no intermediate
 * strings, no date formatter. {@link ParseLine} (the UDF) and {@link LogLines} (the source)
 * both read lines through it, so they accept and reject the same lines.
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
 * quoted value is X-Forwarded-For. Every delimiter is ASCII and UTF-8 never uses ASCII bytes
 * inside a multi-byte character, so scanning bytes gives what scanning characters would.
 *
 * <p>After {@link #scan}, {@link #reason} is null for a good line, else the first {@link Reject}
 * that applies: {@code UNPARSEABLE} for a line outside the grammar (then no other field is
 * set), else bad_ip, bad_timestamp, bad_status, bad_size in that order. {@link #emit} then
 * hands the fields to a {@link FieldSink}. A field is the byte range [start, end) of {@link
 * #bytes}; a negative start means null ("-" is null in remote_user, referer, user_agent and
 * forwarded_for, and 0 in response_size).
 *
 * <p>Any other {@code log_format} is scanned by a {@link LogFormat} into the same fields (plus
 * the timing and upstream ones), and {@link #check} then gives the same verdicts; {@link
 * ClientAddress} may replace the client address on either path.
 */
final class LineScan {
  private static final byte[] HTTP = "HTTP/".getBytes(StandardCharsets.US_ASCII);
  private static final String[] MONTHS = {
    "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"
  };

  byte[] bytes;
  Reject reason;
  int ipStart, ipEnd, userStart, userEnd, reqStart, reqEnd;
  int refStart, refEnd, agentStart, agentEnd, fwdStart, fwdEnd;
  /** Request parts; all start at -1 when the request is not {@code METHOD target [HTTP/x]}. */
  int methodStart, methodEnd, urlStart, urlEnd, pathEnd, queryStart, protoStart, protoEnd;
  /** The file extension's range; it is lower-cased by {@link #extension}. */
  int extStart, extEnd;
  /** Microseconds since the epoch, UTC; valid when {@link #timestampOk}. */
  long micros;
  boolean timestampOk;
  int status; // -1: bad
  long size; // -1: bad; -2: the format has no size

  // What only a {@link LogFormat} carries; null (-1) on the combined path.
  int timeKind, timeStart, timeEnd, statusStart, statusEnd, sizeStart, sizeEnd;
  int upAddrStart, upAddrEnd, upStatusStart, upStatusEnd, hostStart, hostEnd;
  int reqIdStart, reqIdEnd, peerStart, peerEnd;
  int reqTimeStart, reqTimeEnd, upTimeStart, upTimeEnd, reqLenStart, reqLenEnd;
  int requestTimeMs, upstreamTimeMs, upstreamAttempts; // -1: null; -2: bad
  long requestLength; // -1: null; -2: bad
  int[] extraStart = new int[0], extraEnd = new int[0];
  /** Which address is the client's; null: $remote_addr. */
  ClientAddress client;

  static final int TIME_LOCAL = 0, TIME_ISO8601 = 1, MSEC = 2;

  /** Scan {@code b[from, to)}; returns true for a good line. */
  boolean scan(byte[] b, int from, int to) {
    bytes = b;
    reason = Reject.UNPARSEABLE;
    ipStart = from;
    int i = from;
    // ip, ident, user: non-blank runs, each followed by one space.
    ipEnd = token(b, i, to);
    if (ipEnd <= i || !at(b, ipEnd, to, ' ')) return false;
    i = ipEnd + 1;
    final int identEnd = token(b, i, to);
    if (identEnd <= i || !at(b, identEnd, to, ' ')) return false;
    final int uStart = identEnd + 1;
    final int uEnd = token(b, uStart, to);
    if (uEnd <= uStart || !at(b, uEnd, to, ' ') || !at(b, uEnd + 1, to, '[')) return false;
    // [time]
    final int timeStart = uEnd + 2;
    final int timeEnd = indexOf(b, ']', timeStart, to);
    if (timeEnd < 0 || !at(b, timeEnd + 1, to, ' ') || !at(b, timeEnd + 2, to, '"')) {
      return false;
    }
    // "request"
    reqStart = timeEnd + 3;
    reqEnd = indexOf(b, '"', reqStart, to);
    if (reqEnd < 0 || !at(b, reqEnd + 1, to, ' ')) return false;
    // status, size
    final int statusStart = reqEnd + 2;
    final int statusEnd = token(b, statusStart, to);
    if (statusEnd <= statusStart || !at(b, statusEnd, to, ' ')) return false;
    final int sizeStart = statusEnd + 1;
    final int sizeEnd = token(b, sizeStart, to);
    if (sizeEnd <= sizeStart || !at(b, sizeEnd, to, ' ') || !at(b, sizeEnd + 1, to, '"')) {
      return false;
    }
    // "referer" "agent"
    final int rStart = sizeEnd + 2;
    final int rEnd = indexOf(b, '"', rStart, to);
    if (rEnd < 0 || !at(b, rEnd + 1, to, ' ') || !at(b, rEnd + 2, to, '"')) return false;
    final int aStart = rEnd + 3;
    final int aEnd = indexOf(b, '"', aStart, to);
    if (aEnd < 0) return false;
    // rest: ` "forwarded-for"` when present; anything else is ignored.
    fwdStart = -1;
    fwdEnd = -1;
    final int restStart = aEnd + 1;
    if (at(b, restStart, to, ' ') && at(b, restStart + 1, to, '"')) {
      final int s = restStart + 2;
      final int close = indexOf(b, '"', s, to);
      dashNull(b, s, close < 0 ? to : close);
      fwdStart = nullStart;
      fwdEnd = nullEnd;
    }
    dashNull(b, uStart, uEnd);
    userStart = nullStart;
    userEnd = nullEnd;
    dashNull(b, rStart, rEnd);
    refStart = nullStart;
    refEnd = nullEnd;
    dashNull(b, aStart, aEnd);
    agentStart = nullStart;
    agentEnd = nullEnd;

    clearFormatFields();
    timeKind = TIME_LOCAL;
    this.timeStart = timeStart;
    this.timeEnd = timeEnd;
    this.statusStart = statusStart;
    this.statusEnd = statusEnd;
    this.sizeStart = sizeStart;
    this.sizeEnd = sizeEnd;
    return check();
  }

  /** Before a {@link LogFormat} scan: every field absent. */
  void clear() {
    reason = Reject.UNPARSEABLE;
    ipStart = ipEnd = userStart = userEnd = reqStart = reqEnd = -1;
    refStart = refEnd = agentStart = agentEnd = fwdStart = fwdEnd = -1;
    timeStart = timeEnd = statusStart = statusEnd = sizeStart = sizeEnd = -1;
    clearFormatFields();
  }

  private void clearFormatFields() {
    upAddrStart = upAddrEnd = upStatusStart = upStatusEnd = hostStart = hostEnd = -1;
    reqIdStart = reqIdEnd = peerStart = peerEnd = -1;
    reqTimeStart = reqTimeEnd = upTimeStart = upTimeEnd = reqLenStart = reqLenEnd = -1;
    requestTimeMs = upstreamTimeMs = upstreamAttempts = -1;
    requestLength = -1;
    for (int k = 0; k < extraStart.length; k++) extraStart[k] = extraEnd[k] = -1;
  }

  /**
   * A {@link LogFormat} variable's value {@code bytes[from, to)} for {@code column}; false when
   * it cannot be (a time variable of the wrong width). "-" and "" are null in text columns.
   */
  boolean set(String column, String variable, int extra, int from, int to) {
    if (extra >= 0) {
      dashNull(bytes, from, to);
      if (from == to) nullStart = nullEnd = -1;
      extraStart[extra] = nullStart;
      extraEnd[extra] = nullEnd;
      return true;
    }
    switch (column) {
      case "ip_address":
        ipStart = from;
        ipEnd = to;
        return true;
      case "timestamp":
        timeKind = variable.equals("msec") ? MSEC : variable.equals("time_iso8601") ? TIME_ISO8601 : TIME_LOCAL;
        timeStart = from;
        timeEnd = to;
        return true;
      case "request":
        reqStart = from;
        reqEnd = to;
        return true;
      case "status_code":
        statusStart = from;
        statusEnd = to;
        return true;
      case "response_size":
        sizeStart = from;
        sizeEnd = to;
        return true;
      case "request_time_ms":
        reqTimeStart = from;
        reqTimeEnd = to;
        return true;
      case "upstream_response_time_ms":
        upTimeStart = from;
        upTimeEnd = to;
        return true;
      case "request_length":
        reqLenStart = from;
        reqLenEnd = to;
        return true;
      default:
        break;
    }
    dashNull(bytes, from, to);
    if (from == to) nullStart = nullEnd = -1; // escape=json writes "" for an unset variable
    final int a = nullStart, z = nullEnd;
    switch (column) {
      case "remote_user": userStart = a; userEnd = z; break;
      case "referer": refStart = a; refEnd = z; break;
      case "user_agent": agentStart = a; agentEnd = z; break;
      case "forwarded_for": fwdStart = a; fwdEnd = z; break;
      case "upstream_addr": upAddrStart = a; upAddrEnd = z; break;
      case "upstream_status": upStatusStart = a; upStatusEnd = z; break;
      case "host": hostStart = a; hostEnd = z; break;
      case "request_id": reqIdStart = a; reqIdEnd = z; break;
      default: throw new IllegalArgumentException("LogFormat: unknown column " + column);
    }
    return true;
  }

  /** Size the extras for a format (before its first scan). */
  void extras(int n) {
    if (extraStart.length != n) {
      extraStart = new int[n];
      extraEnd = new int[n];
    }
  }

  /**
   * The verdict on the fields in place: {@link #reason} null for a good line, else the first
   * of bad_ip, bad_timestamp, bad_status, bad_size, bad_request_time, bad_upstream_time,
   * bad_request_length that applies. Then the client address and the request's parts.
   */
  boolean check() {
    final byte[] b = bytes;
    final boolean ipOk = ipChars(b, ipStart, ipEnd);
    timestampOk = timeKind == MSEC ? msec(b, timeStart, timeEnd)
        : timeKind == TIME_ISO8601 ? iso8601(b, timeStart, timeEnd)
        : timestamp(b, timeStart, timeEnd);
    status = status(b, statusStart, statusEnd);
    size = sizeStart < 0 ? -2 : size(b, sizeStart, sizeEnd);
    if (reqTimeStart >= 0) requestTimeMs = seconds(b, reqTimeStart, reqTimeEnd);
    if (upTimeStart >= 0) secondsList(b, upTimeStart, upTimeEnd);
    if (reqLenStart >= 0) requestLength = count(b, reqLenStart, reqLenEnd);
    if (!ipOk) {
      reason = Reject.BAD_IP;
    } else if (!timestampOk) {
      reason = Reject.BAD_TIMESTAMP;
    } else if (status < 0) {
      reason = Reject.BAD_STATUS;
    } else if (size == -1) {
      reason = Reject.BAD_SIZE;
    } else if (requestTimeMs == -2) {
      reason = Reject.BAD_REQUEST_TIME;
    } else if (upstreamTimeMs == -2) {
      reason = Reject.BAD_UPSTREAM_TIME;
    } else if (requestLength == -2) {
      reason = Reject.BAD_REQUEST_LENGTH;
    } else {
      reason = null;
    }
    if (ipOk && client != null) {
      peerStart = ipStart;
      peerEnd = ipEnd;
      client.pick(this);
    }
    request(b, reqStart, reqEnd); // a format always has $request (logformat.REQUIRED)
    return reason == null;
  }

  /** The fields of the last {@link #scan}, each to {@code sink} by its {@link Field}. */
  void emit(FieldSink sink) {
    if (reason == Reject.UNPARSEABLE) {
      for (Field f : FIELDS) {
        if (f != Field.REJECT_REASON) sink.setNull(f);
      }
      for (int k = 0; k < extraStart.length; k++) sink.extra(k, bytes, -1, -1);
      sink.reject(Field.REJECT_REASON, reason);
      return;
    }
    final byte[] b = bytes;
    sink.text(Field.IP_ADDRESS, b, ipStart, ipEnd);
    sink.text(Field.REMOTE_USER, b, userStart, userEnd);
    if (timestampOk) sink.timestamp(Field.TIMESTAMP, micros);
    else sink.setNull(Field.TIMESTAMP);
    sink.text(Field.REQUEST, b, reqStart, reqEnd);
    if (status >= 0) sink.integer(Field.STATUS_CODE, status);
    else sink.setNull(Field.STATUS_CODE);
    if (size >= 0) sink.bigint(Field.RESPONSE_SIZE, size); // -2: the format has none
    else sink.setNull(Field.RESPONSE_SIZE);
    sink.text(Field.REFERER, b, refStart, refEnd);
    sink.text(Field.USER_AGENT, b, agentStart, agentEnd);
    sink.text(Field.FORWARDED_FOR, b, fwdStart, fwdEnd);
    sink.text(Field.METHOD, b, methodStart, methodEnd);
    sink.text(Field.URL, b, urlStart, urlEnd);
    sink.text(Field.URL_PATH, b, urlStart, pathEnd);
    sink.text(Field.QUERY_STRING, b, queryStart, urlEnd);
    sink.text(Field.PROTOCOL, b, protoStart, protoEnd);
    final byte[] ext = extension();
    if (ext == null) sink.setNull(Field.FILE_EXTENSION);
    else sink.text(Field.FILE_EXTENSION, ext, 0, ext.length);
    optional(sink, Field.REQUEST_TIME_MS, requestTimeMs);
    optional(sink, Field.UPSTREAM_RESPONSE_TIME_MS, upstreamTimeMs);
    optional(sink, Field.UPSTREAM_ATTEMPTS, upstreamAttempts);
    if (requestLength >= 0) sink.bigint(Field.REQUEST_LENGTH, requestLength);
    else sink.setNull(Field.REQUEST_LENGTH);
    sink.text(Field.UPSTREAM_ADDR, b, upAddrStart, upAddrEnd);
    sink.text(Field.UPSTREAM_STATUS, b, upStatusStart, upStatusEnd);
    sink.text(Field.HOST, b, hostStart, hostEnd);
    sink.text(Field.REQUEST_ID, b, reqIdStart, reqIdEnd);
    sink.text(Field.REMOTE_ADDR, b, peerStart, peerEnd);
    for (int k = 0; k < extraStart.length; k++) sink.extra(k, b, extraStart[k], extraEnd[k]);
    if (reason == null) sink.setNull(Field.REJECT_REASON);
    else sink.reject(Field.REJECT_REASON, reason);
  }

  private static void optional(FieldSink sink, Field f, int v) {
    if (v >= 0) sink.integer(f, v);
    else sink.setNull(f);
  }

  private static final Field[] FIELDS = Field.values();

  /**
   * {@code METHOD target HTTP/x.y} to method, url, url_path, query_string, protocol and
   * file_extension. HTTP/0.9 {@code GET /} has a null protocol; anything else (a TLS handshake,
   * {@code -}) gives all nulls. The extension is the text after the last dot of the path's
   * last segment.
   */
  private void request(byte[] b, int from, int to) {
    methodStart = methodEnd = urlStart = urlEnd = pathEnd = queryStart = -1;
    protoStart = protoEnd = extStart = extEnd = -1;
    final int sp1 = indexOf(b, ' ', from, to);
    if (sp1 < from + 1 || sp1 > from + 20) return;
    for (int i = from; i < sp1; i++) {
      if (b[i] < 'A' || b[i] > 'Z') return;
    }
    final int sp2 = indexOf(b, ' ', sp1 + 1, to);
    final int uEnd;
    if (sp2 < 0) {
      uEnd = to; // HTTP/0.9
    } else {
      if (indexOf(b, ' ', sp2 + 1, to) >= 0 || !startsWith(b, sp2 + 1, to, HTTP)) return;
      uEnd = sp2;
      protoStart = sp2 + 1;
      protoEnd = to;
    }
    methodStart = from;
    methodEnd = sp1;
    urlStart = sp1 + 1;
    urlEnd = uEnd;
    final int q = indexOf(b, '?', urlStart, urlEnd);
    pathEnd = q < 0 ? urlEnd : q;
    queryStart = q < 0 ? -1 : q + 1;
    int dot = -1;
    for (int i = pathEnd - 1; i >= urlStart; i--) {
      if (b[i] == '/') break;
      if (b[i] == '.') {
        dot = i;
        break;
      }
    }
    if (dot >= 0) {
      extStart = dot + 1;
      extEnd = pathEnd;
    }
  }

  /** The file extension, lower-cased (Locale.ROOT), as UTF-8; null when there is none. */
  byte[] extension() {
    if (extStart < 0) return null;
    final byte[] out = new byte[extEnd - extStart];
    for (int i = extStart; i < extEnd; i++) {
      final byte c = bytes[i];
      if (c < 0) { // not ASCII: lower-case it as text
        return new String(bytes, extStart, extEnd - extStart, StandardCharsets.UTF_8)
            .toLowerCase(Locale.ROOT)
            .getBytes(StandardCharsets.UTF_8);
      }
      out[i - extStart] = c >= 'A' && c <= 'Z' ? (byte) (c + 32) : c;
    }
    return out;
  }

  private int nullStart, nullEnd;

  private void dashNull(byte[] b, int from, int to) {
    final boolean dash = to - from == 1 && b[from] == '-';
    nullStart = dash ? -1 : from;
    nullEnd = dash ? -1 : to;
  }

  private static boolean at(byte[] b, int i, int to, char c) {
    return i < to && b[i] == c;
  }

  private static boolean startsWith(byte[] b, int i, int to, byte[] prefix) {
    if (to - i < prefix.length) return false;
    for (int k = 0; k < prefix.length; k++) {
      if (b[i + k] != prefix[k]) return false;
    }
    return true;
  }

  private static int indexOf(byte[] b, char c, int from, int to) {
    for (int i = from; i < to; i++) {
      if (b[i] == c) return i;
    }
    return -1;
  }

  /** End of the run of non-blank bytes from {@code i} ({@code i} itself when none). */
  private static int token(byte[] b, int i, int to) {
    while (i < to) {
      final byte c = b[i];
      if (c == ' ' || (c >= '\t' && c <= '\r')) break;
      i++;
    }
    return i;
  }

  /** 2 to 45 of [0-9A-Fa-f:.]: an IPv4 or IPv6 address's characters. */
  static boolean ipChars(byte[] b, int from, int to) {
    final int len = to - from;
    if (len < 2 || len > 45) return false;
    for (int i = from; i < to; i++) {
      final byte c = b[i];
      final boolean ok =
          (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
              || c == ':' || c == '.';
      if (!ok) return false;
    }
    return true;
  }

  /** Three digits, 100 to 599; else -1. */
  static int status(byte[] b, int from, int to) {
    if (to - from != 3) return -1;
    final int x = digit(b, from), y = digit(b, from + 1), z = digit(b, from + 2);
    if (x < 1 || x > 5 || y < 0 || z < 0) return -1;
    return x * 100 + y * 10 + z;
  }

  /** {@code -} is 0; else 1 to 18 digits; else -1. */
  static long size(byte[] b, int from, int to) {
    final int len = to - from;
    if (len == 1 && b[from] == '-') return 0L;
    if (len < 1 || len > 18) return -1;
    long v = 0;
    for (int i = from; i < to; i++) {
      final int d = digit(b, i);
      if (d < 0) return -1;
      v = v * 10 + d;
    }
    return v;
  }

  /**
   * nginx's seconds with millisecond resolution ({@code 0.123}, {@code 12}) to milliseconds;
   * {@code -} or empty is null (-1); anything else, or over 2^31 ms, is bad (-2).
   */
  static int seconds(byte[] b, int from, int to) {
    if (to == from || (to - from == 1 && b[from] == '-')) return -1;
    long whole = 0;
    int i = from, digits = 0;
    while (i < to && b[i] >= '0' && b[i] <= '9') {
      whole = whole * 10 + (b[i++] - '0');
      if (++digits > 9) return -2;
    }
    if (digits == 0) return -2;
    long ms = whole * 1000;
    if (i < to) {
      if (b[i++] != '.' || i == to) return -2;
      int scale = 100;
      for (; i < to; i++) {
        final int d = digit(b, i);
        if (d < 0) return -2;
        ms += d * scale; // digits past the third (never written by nginx) are dropped
        scale /= 10;
      }
    }
    return ms > Integer.MAX_VALUE ? -2 : (int) ms;
  }

  /**
   * A list of seconds as nginx writes it for retries and internal redirects ({@code 0.002,
   * 0.004 : 0.010}; {@code -} for an attempt that got no answer) to {@link #upstreamTimeMs}
   * (their sum in ms; null when no attempt has a time) and {@link #upstreamAttempts} (the
   * entries). A single {@code -} is null for both; a bad entry makes the sum bad (-2).
   */
  private void secondsList(byte[] b, int from, int to) {
    if (to == from || (to - from == 1 && b[from] == '-')) return;
    long sum = -1;
    int n = 0, i = from;
    while (i <= to) {
      int e = i;
      while (e < to && b[e] != ',' && b[e] != ' ') e++;
      final int v = seconds(b, i, e);
      n++;
      if (v == -2 || e == i) {
        upstreamTimeMs = -2;
        return;
      }
      if (v >= 0) sum = Math.max(sum, 0) + v;
      if (e == to) break;
      // ", " or " : "
      if (b[e] == ',' && e + 1 < to && b[e + 1] == ' ') i = e + 2;
      else if (b[e] == ' ' && e + 2 < to && b[e + 1] == ':' && b[e + 2] == ' ') i = e + 3;
      else {
        upstreamTimeMs = -2;
        return;
      }
    }
    upstreamTimeMs = sum > Integer.MAX_VALUE ? -2 : (int) sum;
    upstreamAttempts = n;
  }

  /** A byte count: {@code -} or empty is null (-1); 1 to 18 digits; else bad (-2). */
  static long count(byte[] b, int from, int to) {
    if (to == from || (to - from == 1 && b[from] == '-')) return -1;
    final long v = size(b, from, to);
    return v < 0 ? -2 : v;
  }

  /** nginx's $msec ({@code 1700000000.123}, seconds since the epoch) to {@link #micros}. */
  private boolean msec(byte[] b, int from, int to) {
    final int dot = indexOf(b, '.', from, to);
    if (dot < from + 1 || dot > from + 12 || to - dot != 4) return false;
    long sec = 0;
    for (int i = from; i < dot; i++) {
      final int d = digit(b, i);
      if (d < 0) return false;
      sec = sec * 10 + d;
    }
    final int ms = number(b, dot + 1, 3);
    if (ms < 0) return false;
    micros = sec * 1_000_000L + ms * 1000L;
    return true;
  }

  /** nginx's $time_iso8601 ({@code 2026-11-24T13:55:36+01:00}) to {@link #micros}. */
  private boolean iso8601(byte[] b, int from, int to) {
    if (to - from != 25) return false;
    final int p = from;
    if (b[p + 4] != '-' || b[p + 7] != '-' || b[p + 10] != 'T' || b[p + 13] != ':'
        || b[p + 16] != ':' || b[p + 22] != ':') {
      return false;
    }
    final int year = number(b, p, 4), month = number(b, p + 5, 2), day = number(b, p + 8, 2);
    final int hour = number(b, p + 11, 2), minute = number(b, p + 14, 2);
    final int second = number(b, p + 17, 2);
    final byte sign = b[p + 19];
    final int offHours = number(b, p + 20, 2), offMinutes = number(b, p + 23, 2);
    return civil(year, month, day, hour, minute, second, sign, offHours, offMinutes);
  }

  /**
   * {@code dd/Mon/yyyy:HH:mm:ss +hhmm} (nginx's $time_local) to {@link #micros}; false when it
   * is not exactly that or names no real time. Month names are English, any case; the offset
   * is at most 18 hours, as java.time allows.
   */
  private boolean timestamp(byte[] b, int from, int to) {
    if (to - from != 26) return false;
    final int p = from;
    if (b[p + 2] != '/' || b[p + 6] != '/' || b[p + 11] != ':' || b[p + 14] != ':'
        || b[p + 17] != ':' || b[p + 20] != ' ') {
      return false;
    }
    final int day = number(b, p, 2);
    final int month = month(b, p + 3);
    final int year = number(b, p + 7, 4);
    final int hour = number(b, p + 12, 2);
    final int minute = number(b, p + 15, 2);
    final int second = number(b, p + 18, 2);
    final byte sign = b[p + 21];
    final int offHours = number(b, p + 22, 2);
    final int offMinutes = number(b, p + 24, 2);
    return civil(year, month, day, hour, minute, second, sign, offHours, offMinutes);
  }

  /** A civil time with a UTC offset to {@link #micros}; false when it names no real time. */
  private boolean civil(int year, int month, int day, int hour, int minute, int second,
      byte sign, int offHours, int offMinutes) {
    if (day < 1 || month < 1 || month > 12 || year < 0 || hour < 0 || hour > 23 || minute < 0
        || minute > 59 || second < 0 || second > 59 || (sign != '+' && sign != '-')
        || offHours < 0 || offMinutes < 0 || offMinutes > 59
        || offHours * 60 + offMinutes > 18 * 60 || day > daysInMonth(year, month)) {
      return false;
    }
    final int offset = (sign == '+' ? 1 : -1) * (offHours * 3600 + offMinutes * 60);
    final long seconds =
        epochDay(year, month, day) * 86400L + hour * 3600L + minute * 60L + second - offset;
    micros = seconds * 1_000_000L;
    return true;
  }

  private static int digit(byte[] b, int i) {
    final byte c = b[i];
    return c >= '0' && c <= '9' ? c - '0' : -1;
  }

  /** The non-negative number in {@code width} digits at {@code i}, or -1. */
  private static int number(byte[] b, int i, int width) {
    int v = 0;
    for (int k = i; k < i + width; k++) {
      final int d = digit(b, k);
      if (d < 0) return -1;
      v = v * 10 + d;
    }
    return v;
  }

  private static int month(byte[] b, int i) {
    final int c0 = b[i] | 0x20, c1 = b[i + 1] | 0x20, c2 = b[i + 2] | 0x20;
    for (int m = 0; m < 12; m++) {
      final String name = MONTHS[m];
      if (c0 == name.charAt(0) && c1 == name.charAt(1) && c2 == name.charAt(2)) return m + 1;
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
