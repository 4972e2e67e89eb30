package dev.logberg;

import java.util.EnumSet;
import java.util.Set;
import org.apache.spark.sql.connector.catalog.Column;
import org.apache.spark.sql.connector.catalog.SupportsRead;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

/**
 * A table logberg's sources read and nothing writes (LogLines' files, KafkaLines' offset
 * ranges, RejectLines' kept rejects): its columns are the schema Spark resolved, and it is
 * read in batches only.
 */
abstract class ReadOnlyTable implements SupportsRead {
  protected final StructType schema;

  ReadOnlyTable(StructType schema) {
    this.schema = schema;
  }

  @Override
  public Column[] columns() {
    final StructField[] fields = schema.fields();
    final Column[] out = new Column[fields.length];
    for (int i = 0; i < fields.length; i++) {
      out[i] = Column.create(fields[i].name(), fields[i].dataType(), fields[i].nullable());
    }
    return out;
  }

  @Override
  public Set<TableCapability> capabilities() {
    return EnumSet.of(TableCapability.BATCH_READ);
  }
}
