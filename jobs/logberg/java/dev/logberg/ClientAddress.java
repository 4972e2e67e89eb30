package dev.logberg;

import java.io.Serializable;

/**
 * The client behind trusted proxies: walk from {@code $remote_addr} leftwards through
 * X-Forwarded-For while each address is a trusted proxy; the first that is not is the client
 * (nginx realip's recursive rule). So a client cannot spoof its way past the balancer by
 * sending its own header: entries left of the first untrusted one are never read. When
 * {@code $remote_addr} itself is not trusted, it is the client. An entry that is not an
 * address stops the walk: the client is then the trusted proxy that sent it. IPv6 (also in
 * brackets) and {@code host:port} of IPv4 are understood.
 */
final class ClientAddress implements Serializable {
  private static final long serialVersionUID = 1L;

  private final byte[][] nets; // network address, 4 or 16 bytes
  private final int[] bits;

  /** {@code cidr,cidr,...}, as normalised by logberg.pipeline.logformat.ClientRule. */
  ClientAddress(String spec) {
    final String[] parts = spec.split(",");
    nets = new byte[parts.length][];
    bits = new int[parts.length];
    for (int k = 0; k < parts.length; k++) {
      final String p = parts[k].trim();
      final int slash = p.indexOf('/');
      final byte[] text = p.substring(0, slash).getBytes(java.nio.charset.StandardCharsets.US_ASCII);
      nets[k] = parse(text, 0, text.length);
      bits[k] = Integer.parseInt(p.substring(slash + 1));
      if (nets[k] == null) throw new IllegalArgumentException("not a CIDR: " + p);
    }
  }

  /** Set {@code s.ipStart/ipEnd} to the client's address (peer already in s.peer*). */
  void pick(LineScan s) {
    final byte[] b = s.bytes;
    if (!trusted(parse(b, s.ipStart, s.ipEnd)) || s.fwdStart < 0) return;
    // entries right to left
    int end = s.fwdEnd;
    while (end > s.fwdStart) {
      int start = end;
      while (start > s.fwdStart && b[start - 1] != ',') start--;
      int a = start, z = end;
      while (a < z && (b[a] == ' ' || b[a] == '\t')) a++;
      while (z > a && (b[z - 1] == ' ' || b[z - 1] == '\t')) z--;
      end = start - 1;
      if (a == z) continue; // an empty entry ("a, , b")
      // [v6]:port, [v6], or v4:port
      if (b[a] == '[') {
        final int close = indexOf(b, ']', a, z);
        if (close < 0) return;
        a++;
        z = close;
      } else if (count(b, ':', a, z) == 1) {
        z = indexOf(b, ':', a, z);
      }
      final byte[] ip = parse(b, a, z);
      if (ip == null) return; // not an address: the proxy that sent it is the client
      s.ipStart = a;
      s.ipEnd = z;
      if (!trusted(ip)) return;
    }
  }

  private boolean trusted(byte[] ip) {
    if (ip == null) return false;
    for (int k = 0; k < nets.length; k++) {
      if (nets[k].length == ip.length && prefix(nets[k], ip, bits[k])) return true;
    }
    return false;
  }

  private static boolean prefix(byte[] net, byte[] ip, int bits) {
    int i = 0;
    for (; bits >= 8; bits -= 8, i++) {
      if (net[i] != ip[i]) return false;
    }
    if (bits == 0) return true;
    final int mask = (0xFF << (8 - bits)) & 0xFF;
    return (net[i] & mask) == (ip[i] & mask);
  }

  private static int indexOf(byte[] b, char c, int from, int to) {
    for (int i = from; i < to; i++) if (b[i] == c) return i;
    return -1;
  }

  private static int count(byte[] b, char c, int from, int to) {
    int n = 0;
    for (int i = from; i < to; i++) if (b[i] == c) n++;
    return n;
  }

  /** An IPv4 or IPv6 address in {@code b[from, to)} to 4 or 16 bytes; null when it is not. */
  static byte[] parse(byte[] b, int from, int to) {
    if (to - from < 2 || to - from > 45) return null;
    return indexOf(b, ':', from, to) < 0 ? v4(b, from, to) : v6(b, from, to);
  }

  private static byte[] v4(byte[] b, int from, int to) {
    final byte[] out = new byte[4];
    int part = 0, v = -1;
    for (int i = from; i <= to; i++) {
      if (i == to || b[i] == '.') {
        if (v < 0 || part > 3) return null;
        out[part++] = (byte) v;
        v = -1;
      } else if (b[i] >= '0' && b[i] <= '9') {
        v = (v < 0 ? 0 : v * 10) + (b[i] - '0');
        if (v > 255) return null;
      } else {
        return null;
      }
    }
    return part == 4 ? out : null;
  }

  private static byte[] v6(byte[] b, int from, int to) {
    final int[] groups = new int[8];
    int n = 0, gap = -1, i = from;
    if (to - from >= 2 && b[from] == ':' && b[from + 1] == ':') {
      gap = 0;
      i += 2;
    } else if (b[from] == ':') {
      return null;
    }
    while (i < to) {
      int j = i, v = 0;
      while (j < to && b[j] != ':' && b[j] != '.') {
        final int d = Character.digit(b[j], 16);
        if (d < 0 || j - i >= 4) return null;
        v = v * 16 + d;
        j++;
      }
      if (j < to && b[j] == '.') { // an embedded IPv4 tail
        final byte[] tail = v4(b, i, to);
        if (tail == null || n > 6) return null;
        groups[n++] = ((tail[0] & 0xFF) << 8) | (tail[1] & 0xFF);
        groups[n++] = ((tail[2] & 0xFF) << 8) | (tail[3] & 0xFF);
        i = to;
        break;
      }
      if (j == i || n == 8) return null;
      groups[n++] = v;
      if (j == to) {
        i = j;
        break;
      }
      if (j + 1 < to && b[j + 1] == ':') {
        if (gap >= 0) return null;
        gap = n;
        i = j + 2;
      } else {
        i = j + 1;
        if (i == to) return null; // a trailing single colon
      }
    }
    if (gap < 0 && n != 8) return null;
    if (gap >= 0 && n > 7) return null;
    final byte[] out = new byte[16];
    final int shift = 8 - n;
    for (int k = 0; k < n; k++) {
      final int pos = gap >= 0 && k >= gap ? k + shift : k;
      out[2 * pos] = (byte) (groups[k] >> 8);
      out[2 * pos + 1] = (byte) groups[k];
    }
    return out;
  }
}
