package dev.logberg;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.attribute.PosixFilePermission;
import java.util.EnumSet;
import java.util.Set;
import org.apache.hadoop.fs.LocalFileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RawLocalFileSystem;
import org.apache.hadoop.fs.permission.FsPermission;

/**
 * Hadoop's local file system (checksums and all), except that it sets a file's or a
 * directory's mode through java.nio instead of running {@code chmod}.
 *
 * <p>Without Hadoop's native library (Spark's jars do not ship it), {@code
 * RawLocalFileSystem.setPermission} starts a {@code chmod} process, and every new directory
 * gets one: each Iceberg table's metadata and data folders and each partition folder. A
 * local lakehouse's tests started about 17 a second from one JVM (JFR's {@code
 * jdk.ProcessStart}). The local sessions select this class for {@code file:} paths ({@code
 * fs.file.impl}); a mode beyond the nine permission bits (sticky, setuid) still goes to
 * Hadoop's own way.
 */
public final class NioLocalFileSystem extends LocalFileSystem {

  public NioLocalFileSystem() {
    super(new Raw());
  }

  /** RawLocalFileSystem with setPermission through java.nio. */
  static final class Raw extends RawLocalFileSystem {
    private static final PosixFilePermission[] BITS = {
      PosixFilePermission.OTHERS_EXECUTE, PosixFilePermission.OTHERS_WRITE,
      PosixFilePermission.OTHERS_READ, PosixFilePermission.GROUP_EXECUTE,
      PosixFilePermission.GROUP_WRITE, PosixFilePermission.GROUP_READ,
      PosixFilePermission.OWNER_EXECUTE, PosixFilePermission.OWNER_WRITE,
      PosixFilePermission.OWNER_READ,
    };

    @Override
    public void setPermission(Path p, FsPermission permission) throws IOException {
      int mode = permission.toShort();
      if ((mode & ~0777) != 0) {
        super.setPermission(p, permission);
        return;
      }
      Files.setPosixFilePermissions(pathToFile(p).toPath(), posix(mode));
    }

    static Set<PosixFilePermission> posix(int mode) {
      Set<PosixFilePermission> set = EnumSet.noneOf(PosixFilePermission.class);
      for (int bit = 0; bit < BITS.length; bit++) {
        if ((mode & (1 << bit)) != 0) {
          set.add(BITS[bit]);
        }
      }
      return set;
    }
  }
}
