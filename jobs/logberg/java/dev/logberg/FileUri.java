package dev.logberg;

import org.apache.hadoop.fs.Path;

/**
 * A listed file's path as ingest names it: Hadoop's {@code new Path(path).toUri().toString()}
 * (spaces, '%' and the like escaped). A static method, so SQL reaches it with {@code
 * reflect('dev.logberg.FileUri', 'of', path)}, in classic Spark and over Spark Connect alike.
 */
public final class FileUri {
  private FileUri() {}

  public static String of(String path) {
    return path == null ? null : new Path(path).toUri().toString();
  }
}
