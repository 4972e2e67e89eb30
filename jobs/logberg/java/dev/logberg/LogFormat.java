package dev.logberg;

import java.io.Serializable;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * A compiled nginx {@code log_format} (from {@code logberg.pipeline.logformat}): literals and
 * variables, scanned left to right, one pass, no regex. A variable ends where the literal after
 * it starts; {@code $time_local} takes its fixed 26 characters (it holds a space); a list
 * variable ({@code $upstream_*}) runs on across nginx's separators {@code ", "} and {@code " :
 * "}; the last variable takes the rest of the line. Under {@code escape=json} a backslash
 * escapes the next byte while scanning, and text values are unescaped ({@code \"}, {@code
 * \\uXXXX}, ...) into a copy of the line, so the raw line stays as read.
 *
 * <p>Spec (one token per line after the escape mode): {@code L<literal>} or {@code V<column>
 * <scan> <variable>}.
 */
final class LogFormat implements Serializable {
  private static final long serialVersionUID = 1L;

  static final int TOKEN = 0, FREE = 1, LIST = 2, TIME_LOCAL = 3;

  final boolean json;
  private final byte[][] literals; // per token; null for a variable
  private final String[] columns; // per token; null for a literal
  private final String[] variables;
  private final int[] kinds;
  private final int[] extraIndex; // per token: its index among the extras, or -1
  final String[] extras; // variables logberg does not know, in order

  LogFormat(String spec) {
    final String[] lines = spec.split("\n", -1);
    json = "json".equals(lines[0]);
    final int n = lines.length - 1;
    literals = new byte[n][];
    columns = new String[n];
    variables = new String[n];
    kinds = new int[n];
    extraIndex = new int[n];
    final List<String> extra = new ArrayList<>();
    for (int k = 0; k < n; k++) {
      final String t = lines[k + 1];
      extraIndex[k] = -1;
      if (t.charAt(0) == 'L') {
        literals[k] = t.substring(1).getBytes(StandardCharsets.UTF_8);
        continue;
      }
      final String[] p = t.substring(1).split(" ");
      columns[k] = p[0];
      kinds[k] = kind(p[1]);
      variables[k] = p[2];
      if (Field.byColumn(p[0]) == null && !"timestamp".equals(p[0])) {
        extraIndex[k] = extra.size();
        extra.add(p[0]);
      }
    }
    extras = extra.toArray(new String[0]);
  }

  private static int kind(String s) {
    switch (s) {
      case "free":
        return FREE;
      case "list":
        return LIST;
      case "time_local":
        return TIME_LOCAL;
      default:
        return TOKEN;
    }
  }

  private byte[] scratch = new byte[0];

  /**
   * Scan {@code b[from, to)} into {@code s}: false (with {@code s.reason} UNPARSEABLE) when the
   * line does not follow the format; else the value ranges are set and {@link LineScan#check}
   * gives the verdict.
   */
  boolean scan(LineScan s, byte[] b, int from, int to) {
    s.clear();
    if (json) {
      if (scratch.length < to - from) scratch = new byte[Math.max(to - from, 2 * scratch.length)];
      System.arraycopy(b, from, scratch, 0, to - from);
      b = scratch;
      to -= from;
      from = 0;
    }
    s.bytes = b;
    int i = from;
    final int n = literals.length;
    for (int k = 0; k < n; k++) {
      final byte[] lit = literals[k];
      if (lit != null) {
        if (!startsWith(b, i, to, lit)) return false;
        i += lit.length;
        continue;
      }
      final byte[] next = k + 1 < n ? literals[k + 1] : null;
      final int end;
      if (kinds[k] == TIME_LOCAL) {
        end = i + 26;
        if (end > to) return false;
      } else if (next == null) {
        end = to;
      } else {
        end = find(b, i, to, next, kinds[k] == LIST);
        if (end < 0) return false;
      }
      int vEnd = end;
      if (json && kinds[k] != TIME_LOCAL) vEnd = unescape(b, i, end);
      if (!s.set(columns[k], variables[k], extraIndex[k], i, vEnd)) return false;
      i = end;
    }
    return true;
  }

  /** Where {@code lit} next starts in {@code b[i, to)}; -1 when it does not. */
  private int find(byte[] b, int i, int to, byte[] lit, boolean list) {
    final byte first = lit[0];
    for (int p = i; p < to; p++) {
      final byte c = b[p];
      if (json && c == '\\') {
        p++;
        continue;
      }
      if (c != first || !startsWith(b, p, to, lit)) continue;
      // "a, b : c": a space after a comma, or " : ", separates list items
      if (list && first == ' ' && ((p > i && b[p - 1] == ',') || separator(b, p, to))) continue;
      return p;
    }
    return -1;
  }

  private static boolean separator(byte[] b, int p, int to) {
    return p + 2 < to && b[p + 1] == ':' && b[p + 2] == ' ';
  }

  static boolean startsWith(byte[] b, int i, int to, byte[] prefix) {
    if (to - i < prefix.length) return false;
    for (int k = 0; k < prefix.length; k++) {
      if (b[i + k] != prefix[k]) return false;
    }
    return true;
  }

  /**
   * JSON string escapes in {@code b[from, to)}, decoded in place (the result is never longer);
   * returns the new end. An invalid escape is kept as written.
   */
  static int unescape(byte[] b, int from, int to) {
    int w = from;
    for (int r = from; r < to; r++) {
      final byte c = b[r];
      if (c != '\\' || r + 1 >= to) {
        b[w++] = c;
        continue;
      }
      final byte e = b[r + 1];
      byte out;
      switch (e) {
        case '"': out = '"'; break;
        case '\\': out = '\\'; break;
        case '/': out = '/'; break;
        case 'b': out = '\b'; break;
        case 'f': out = '\f'; break;
        case 'n': out = '\n'; break;
        case 'r': out = '\r'; break;
        case 't': out = '\t'; break;
        case 'u': {
          int cp = hex4(b, r + 2, to);
          if (cp < 0) {
            b[w++] = c;
            continue;
          }
          int used = 6;
          if (cp >= 0xD800 && cp <= 0xDBFF && r + 11 < to && b[r + 6] == '\\'
              && b[r + 7] == 'u') {
            final int lo = hex4(b, r + 8, to);
            if (lo >= 0xDC00 && lo <= 0xDFFF) {
              cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
              used = 12;
            }
          }
          final byte[] enc = new String(Character.toChars(cp)).getBytes(StandardCharsets.UTF_8);
          for (byte x : enc) b[w++] = x;
          r += used - 1;
          continue;
        }
        default:
          b[w++] = c;
          continue;
      }
      b[w++] = out;
      r++;
    }
    return w;
  }

  private static int hex4(byte[] b, int i, int to) {
    if (i + 4 > to) return -1;
    int v = 0;
    for (int k = i; k < i + 4; k++) {
      final int d = Character.digit(b[k], 16);
      if (d < 0) return -1;
      v = v * 16 + d;
    }
    return v;
  }
}
