package dev.logberg;

import java.nio.charset.StandardCharsets;
import java.time.LocalDate;
import java.time.temporal.IsoFields;
import java.util.Arrays;
import java.util.HashMap;
import org.apache.spark.sql.catalyst.expressions.Hex$;
import org.apache.spark.sql.catalyst.expressions.XXH64;
import org.apache.spark.sql.catalyst.expressions.codegen.UnsafeRowWriter;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * The access_logs columns that follow from a parsed line alone, computed while {@link LogLines}
 * reads it instead of by Spark expressions after it: the same values as {@code
 * logberg.pipeline.parse.enrich} and {@code event_id} (tests/unit/parser/test_log_lines.py compares them
 * line by line), without a generated projection that copies every row once more.
 *
 * <p>Times are UTC, logberg's session time zone. Each file has one reader, so the event id's
 * prefix is hashed once per file, the calendar fields once per day, and each distinct agent
 * is classified once per reader (by {@link Agents}, as the {@link ClassifyAgent} UDF does).
 */
final class Derived {
  /** Name and Spark SQL type of each column, in the order they are written. */
  static final String[][] COLUMNS = {
    {"event_id", "string"},
    {"date", "date"},
    {"hour", "int"},
    {"year", "int"},
    {"month", "int"},
    {"day", "int"},
    {"week_year", "int"},
    {"week_of_year", "int"},
    {"status_category", "string"},
    {"device_type", "string"},
    {"browser", "string"},
    {"os", "string"},
    {"is_bot", "boolean"},
  };

  private static final long MICROS_PER_DAY = 86_400_000_000L;
  private static final long MICROS_PER_HOUR = 3_600_000_000L;
  private static final long XXHASH_SEED = 42L; // Spark's xxhash64()
  /** An agent map grows by the distinct agents of one file; past this it starts over. */
  static final int AGENT_LIMIT = 20_000;

  private static final UTF8String INFORMATIONAL = UTF8String.fromString("Informational");
  private static final UTF8String SUCCESS = UTF8String.fromString("Success");
  private static final UTF8String REDIRECT = UTF8String.fromString("Redirect");
  private static final UTF8String CLIENT_ERROR = UTF8String.fromString("Client Error");
  private static final UTF8String SERVER_ERROR = UTF8String.fromString("Server Error");
  private static final UTF8String BOT = UTF8String.fromString("bot");

  /** One agent's classes as they go into rows. */
  private static final class Agent {
    final UTF8String deviceType;
    final UTF8String browser;
    final UTF8String os;
    final boolean bot;

    Agent(Agents.Classes c) {
      deviceType = UTF8String.fromString(c.deviceType);
      browser = UTF8String.fromString(c.browser);
      os = UTF8String.fromString(c.os);
      bot = deviceType.equals(BOT);
    }
  }

  private final byte[] id; // the event id: its per-file prefix, then the line number
  private final int prefix;
  private final HashMap<UTF8String, Agent> agents = new HashMap<>();
  private Agent noAgent;
  private long day = Long.MIN_VALUE; // the epoch day the calendar fields below are of
  private int year, month, dayOfMonth, weekYear, week;

  /** For the lines of {@code sourceFile}, the URI as the rows' source_file carries it. */
  Derived(byte[] sourceFile) {
    // lpad(hex(xxhash64(source_file)), 16, '0') || '-'
    final long hash = XXH64.hashUTF8String(UTF8String.fromBytes(sourceFile), XXHASH_SEED);
    final UTF8String hex = Hex$.MODULE$.hex(hash).lpad(16, UTF8String.fromString("0"));
    final byte[] head = (hex.toString() + "-").getBytes(StandardCharsets.UTF_8);
    prefix = head.length;
    id = Arrays.copyOf(head, prefix + 20); // room for any long
  }

  static int width() {
    return COLUMNS.length;
  }

  static void setNull(UnsafeRowWriter w, int[] at) {
    for (int i : at) {
      if (i >= 0) w.setNullAt(i);
    }
  }

  /**
   * The columns of the good line {@code s} just scanned, each at the row ordinal {@code at[k]}
   * (k: its index in {@link #COLUMNS}); a negative ordinal leaves that column out.
   */
  void write(UnsafeRowWriter w, int[] at, LineScan s, long lineNumber) {
    if (at[0] >= 0) w.write(at[0], id, 0, prefix + digits(lineNumber));
    if (s.timestampOk) {
      final long d = Math.floorDiv(s.micros, MICROS_PER_DAY);
      if (d != day) calendar(d);
      if (at[1] >= 0) w.write(at[1], (int) d);
      if (at[2] >= 0) {
        w.write(at[2], (int) (Math.floorMod(s.micros, MICROS_PER_DAY) / MICROS_PER_HOUR));
      }
      if (at[3] >= 0) w.write(at[3], year);
      if (at[4] >= 0) w.write(at[4], month);
      if (at[5] >= 0) w.write(at[5], dayOfMonth);
      if (at[6] >= 0) w.write(at[6], weekYear);
      if (at[7] >= 0) w.write(at[7], week);
    } else {
      for (int i = 1; i <= 7; i++) {
        if (at[i] >= 0) w.setNullAt(at[i]);
      }
    }
    if (at[8] >= 0) w.write(at[8], statusCategory(s.status));
    final Agent a = agent(s.bytes, s.agentStart, s.agentEnd);
    if (at[9] >= 0) w.write(at[9], a.deviceType);
    if (at[10] >= 0) w.write(at[10], a.browser);
    if (at[11] >= 0) w.write(at[11], a.os);
    if (at[12] >= 0) w.write(at[12], a.bot);
  }

  /** As `CASE WHEN status < 200 ... ELSE 'Server Error'`: a missing status (a format
   * without one; scanned as negative) falls through to the ELSE, as NULL does there. */
  static UTF8String statusCategory(int status) {
    if (status < 0) return SERVER_ERROR;
    if (status < 200) return INFORMATIONAL;
    if (status < 300) return SUCCESS;
    if (status < 400) return REDIRECT;
    if (status < 500) return CLIENT_ERROR;
    return SERVER_ERROR;
  }

  /** Writes the line number's decimal digits after the prefix; returns how many. */
  private int digits(long n) {
    final String s = Long.toString(n); // line numbers are positive: ASCII digits
    for (int i = 0; i < s.length(); i++) id[prefix + i] = (byte) s.charAt(i);
    return s.length();
  }

  /** date's year, month, day and its ISO week (Spark's year(), month(), dayofmonth(),
   * weekofyear(), and the year of the week's Thursday). */
  private void calendar(long epochDay) {
    final LocalDate d = LocalDate.ofEpochDay(epochDay);
    day = epochDay;
    year = d.getYear();
    month = d.getMonthValue();
    dayOfMonth = d.getDayOfMonth();
    final int weekday = d.getDayOfWeek().getValue() - 1; // Monday 0
    weekYear = d.minusDays(weekday).plusDays(3).getYear();
    week = d.get(IsoFields.WEEK_OF_WEEK_BASED_YEAR);
  }

  private Agent agent(byte[] b, int from, int to) {
    if (from < 0) {
      if (noAgent == null) noAgent = new Agent(Agents.classify(null));
      return noAgent;
    }
    final UTF8String view = UTF8String.fromBytes(b, from, to - from);
    Agent a = agents.get(view);
    if (a == null) {
      a = new Agent(Agents.classify(view.toString()));
      if (agents.size() >= AGENT_LIMIT) agents.clear();
      agents.put(UTF8String.fromBytes(Arrays.copyOfRange(b, from, to)), a);
    }
    return a;
  }
}
