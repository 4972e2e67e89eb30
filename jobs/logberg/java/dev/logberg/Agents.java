package dev.logberg;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.ConcurrentHashMap;
import ua_parser.Client;
import ua_parser.Parser;

/**
 * Device class, browser and OS of a user agent: ua-parser (uap-core's rules, through its JVM
 * port, uap-java) gives the families, and {@code agents.rules} (beside this class in the jar)
 * maps them to logberg's classes, with logberg's own bot and app markers checked first. The
 * file's header states the order; logberg.pipeline.agent_rules is the same procedure in
 * Python.
 *
 * <p>ua-parser tries a few hundred regexes per agent, so each distinct agent is classified
 * once per JVM and remembered (bounded: past {@link #CACHE_LIMIT} agents the memory starts
 * over, so a flood of random agents costs time, never memory).
 */
public final class Agents {
  static final int CACHE_LIMIT = 100_000;
  private static final String OTHER = "Other";

  /** device_type, browser, os of an agent; {@code null} agent is "other". */
  public static final class Classes {
    public final String deviceType;
    public final String browser;
    public final String os;

    Classes(String deviceType, String browser, String os) {
      this.deviceType = deviceType;
      this.browser = browser;
      this.os = os;
    }
  }

  private static final Classes NONE = new Classes("other", OTHER, OTHER);
  private static final ConcurrentHashMap<String, Classes> CACHE = new ConcurrentHashMap<>();

  /** The rules file, parsed once; and the parser, built once (it compiles its regexes). */
  private static final class Loaded {
    static final Rules RULES = Rules.load();
    static final Parser PARSER = new Parser();
  }

  private Agents() {}

  public static Classes classify(String agent) {
    if (agent == null) {
      return NONE;
    }
    Classes found = CACHE.get(agent);
    if (found == null) {
      found = compute(agent);
      if (CACHE.size() >= CACHE_LIMIT) {
        CACHE.clear();
      }
      CACHE.put(agent, found);
    }
    return found;
  }

  static Classes compute(String agent) {
    final Client c = Loaded.PARSER.parse(agent);
    final String browser = family(c.userAgent == null ? null : c.userAgent.family);
    final String os = family(c.os == null ? null : c.os.family);
    final String device = family(c.device == null ? null : c.device.family);
    return new Classes(deviceType(agent, browser, os, device, Loaded.RULES), browser, os);
  }

  private static String family(String f) {
    return f == null || f.isEmpty() ? OTHER : f;
  }

  /** The procedure of agents.rules' header, given ua-parser's three families. */
  static String deviceType(String agent, String browser, String os, String device, Rules r) {
    final String lower = agent.toLowerCase(Locale.ROOT);
    for (String[] m : r.markers) {
      if (lower.contains(m[1])) {
        return m[0];
      }
    }
    if (device.equals("Spider")) {
      return "bot";
    }
    if (startsWithAny(device, r.tabletDevices)) {
      return "tablet";
    }
    if (os.equals("Android")) {
      return agent.startsWith("Mozilla/") && !agent.contains("Mobile") ? "tablet" : "mobile";
    }
    if (startsWithAny(device, r.mobileDevices) || startsWithAny(os, r.mobileOs)) {
      return "mobile";
    }
    if (os.equals(OTHER) && device.equals(OTHER)) {
      if (!browser.equals(OTHER)) {
        return "bot";
      }
      for (String m : r.unknownBots) {
        if (lower.contains(m)) {
          return "bot";
        }
      }
    }
    if (startsWithAny(os, r.desktopOs)) {
      return "desktop";
    }
    return "other";
  }

  private static boolean startsWithAny(String family, List<String> prefixes) {
    for (String p : prefixes) {
      if (family.startsWith(p)) {
        return true;
      }
    }
    return false;
  }

  /** agents.rules, parsed. */
  static final class Rules {
    /** {class, lower-case marker}, in file order. */
    final List<String[]> markers = new ArrayList<>();

    final List<String> tabletDevices = new ArrayList<>();
    final List<String> mobileDevices = new ArrayList<>();
    final List<String> mobileOs = new ArrayList<>();
    final List<String> desktopOs = new ArrayList<>();
    final List<String> unknownBots = new ArrayList<>();

    static Rules load() {
      final Rules r = new Rules();
      try (InputStream in = Agents.class.getResourceAsStream("agents.rules")) {
        if (in == null) {
          throw new IllegalStateException("dev/logberg/agents.rules is missing from the jar");
        }
        final BufferedReader lines =
            new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8));
        int n = 0;
        for (String line = lines.readLine(); line != null; line = lines.readLine()) {
          n++;
          final String t = line.strip();
          if (t.isEmpty() || t.startsWith("#")) {
            continue;
          }
          final int sp = t.indexOf(' ');
          final String kind = sp < 0 ? t : t.substring(0, sp);
          final String text = sp < 0 ? "" : t.substring(sp + 1).strip();
          if (text.isEmpty()) {
            throw new IllegalStateException("agents.rules line " + n + ": no text: " + line);
          }
          switch (kind) {
            case "bot", "mobile" -> r.markers.add(
                new String[] {kind, text.toLowerCase(Locale.ROOT)});
            case "tablet-device" -> r.tabletDevices.add(text);
            case "mobile-device" -> r.mobileDevices.add(text);
            case "mobile-os" -> r.mobileOs.add(text);
            case "desktop-os" -> r.desktopOs.add(text);
            case "unknown-bot" -> r.unknownBots.add(text.toLowerCase(Locale.ROOT));
            default -> throw new IllegalStateException(
                "agents.rules line " + n + ": unknown kind '" + kind + "'");
          }
        }
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
      return r;
    }
  }
}
