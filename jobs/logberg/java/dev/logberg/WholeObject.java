package dev.logberg;

import java.io.IOException;
import java.io.OutputStream;
import java.util.EnumSet;
import java.util.Map;
import java.util.Set;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.classic.SparkSession;
import org.apache.spark.sql.connector.catalog.Column;
import org.apache.spark.sql.connector.catalog.SupportsWrite;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.catalog.TableProvider;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.connector.write.BatchWrite;
import org.apache.spark.sql.connector.write.DataWriter;
import org.apache.spark.sql.connector.write.DataWriterFactory;
import org.apache.spark.sql.connector.write.LogicalWriteInfo;
import org.apache.spark.sql.connector.write.PhysicalWriteInfo;
import org.apache.spark.sql.connector.write.Write;
import org.apache.spark.sql.connector.write.WriteBuilder;
import org.apache.spark.sql.connector.write.WriterCommitMessage;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * A data source that writes one object whole, through the Hadoop file system of its URI with
 * the session's own configuration and credentials (s3a://, file://, ...): {@code
 * df.write.format("dev.logberg.WholeObject").mode("append").save(uri)}, with {@code df} one
 * row of one BINARY column {@code value}, the object's bytes. The object is created (replacing
 * one there) and closed by the task that holds the row: on S3A one PUT, visible only whole.
 * More than one row is an error.
 */
public final class WholeObject implements TableProvider {
  static final StructType SCHEMA = new StructType().add("value", DataTypes.BinaryType, true);

  @Override
  public StructType inferSchema(CaseInsensitiveStringMap options) {
    return SCHEMA;
  }

  @Override
  public Table getTable(StructType schema, Transform[] partitioning, Map<String, String> props) {
    return new Target();
  }

  private static final class Target implements SupportsWrite {
    @Override
    public String name() {
      return "logberg whole object";
    }

    @Override
    public Column[] columns() {
      return new Column[] {Column.create("value", DataTypes.BinaryType, true)};
    }

    @Override
    public Set<TableCapability> capabilities() {
      return EnumSet.of(TableCapability.BATCH_WRITE);
    }

    @Override
    public WriteBuilder newWriteBuilder(LogicalWriteInfo info) {
      final String uri = info.options().get("path");
      if (uri == null || uri.isBlank()) {
        throw new IllegalArgumentException("dev.logberg.WholeObject: give the object's URI");
      }
      return new WriteBuilder() {
        @Override
        public Write build() {
          return new Write() {
            @Override
            public BatchWrite toBatch() {
              return new Objects(uri);
            }
          };
        }
      };
    }
  }

  private static final class Objects implements BatchWrite {
    private final String uri;

    Objects(String uri) {
      this.uri = uri;
    }

    @Override
    public DataWriterFactory createBatchWriterFactory(PhysicalWriteInfo info) {
      final HadoopConf conf =
          new HadoopConf(SparkSession.active().sessionState().newHadoopConf());
      return new Writers(uri, conf);
    }

    @Override
    public void commit(WriterCommitMessage[] messages) {
      long written = 0;
      for (WriterCommitMessage m : messages) written += ((Written) m).objects;
      if (written != 1) {
        throw new IllegalStateException(
            "dev.logberg.WholeObject: " + written + " objects written to " + uri + ", not 1");
      }
    }

    @Override
    public void abort(WriterCommitMessage[] messages) {}
  }

  private static final class Written implements WriterCommitMessage {
    private static final long serialVersionUID = 1L;
    final long objects;

    Written(long objects) {
      this.objects = objects;
    }
  }

  private static final class Writers implements DataWriterFactory {
    private static final long serialVersionUID = 1L;
    private final String uri;
    private final HadoopConf conf;

    Writers(String uri, HadoopConf conf) {
      this.uri = uri;
      this.conf = conf;
    }

    @Override
    public DataWriter<InternalRow> createWriter(int partitionId, long taskId) {
      return new DataWriter<>() {
        private long objects;

        @Override
        public void write(InternalRow row) throws IOException {
          if (objects++ > 0) {
            throw new IllegalArgumentException(
                "dev.logberg.WholeObject: more than one row for " + uri);
          }
          final byte[] body = row.isNullAt(0) ? new byte[0] : row.getBinary(0);
          final Path target = new Path(uri);
          final FileSystem fs = target.getFileSystem(conf.conf);
          try (OutputStream out = fs.create(target, true)) {
            out.write(body);
          }
        }

        @Override
        public WriterCommitMessage commit() {
          return new Written(objects);
        }

        @Override
        public void abort() {}

        @Override
        public void close() {}
      };
    }
  }
}
