package dev.logberg;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;

/**
 * Byte searches over a line buffer, eight bytes at a time: a word with no byte of interest
 * is passed with one load and a few arithmetic operations, and the byte loop then finds
 * the exact position inside the first word that has one.
 */
final class Bytes {
  private static final VarHandle LONGS =
      MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);
  private static final long ONES = 0x0101010101010101L;
  private static final long HIGHS = 0x8080808080808080L;
  private static final long LFS = 0x0A0A0A0A0A0A0A0AL;
  private static final long CRS = 0x0D0D0D0D0D0D0D0DL;

  private Bytes() {}

  /** Whether some byte of {@code x} is zero (exact: a borrow only moves which bit is set). */
  private static long zeroBytes(long x) {
    return (x - ONES) & ~x & HIGHS;
  }

  /** The first index in [from, to) of a '\n' or '\r' in {@code b}; {@code to} if none. */
  static int lineEnd(byte[] b, int from, int to) {
    int i = from;
    for (final int last = to - 8; i <= last; i += 8) {
      final long x = (long) LONGS.get(b, i);
      if ((zeroBytes(x ^ LFS) | zeroBytes(x ^ CRS)) != 0) break;
    }
    while (i < to && b[i] != '\n' && b[i] != '\r') i++;
    return i;
  }

  /** The first index in [from, to) of a byte that is not ASCII; {@code to} if none. */
  static int nonAscii(byte[] b, int from, int to) {
    int i = from;
    for (final int last = to - 8; i <= last; i += 8) {
      if (((long) LONGS.get(b, i) & HIGHS) != 0) break;
    }
    while (i < to && b[i] >= 0) i++;
    return i;
  }
}
