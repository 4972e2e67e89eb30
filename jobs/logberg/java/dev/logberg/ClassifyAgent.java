package dev.logberg;

import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.api.java.UDF1;

/**
 * A Spark Java UDF: a user agent to {@link #RETURN_TYPE} by {@link Agents} (ua-parser plus
 * logberg's rules), each distinct agent computed once per JVM. Registered by {@code
 * logberg.pipeline.devices.register}; a null agent is "other".
 */
public final class ClassifyAgent implements UDF1<String, Row> {
  private static final long serialVersionUID = 1L;

  public static final String RETURN_TYPE = "struct<device_type:string,browser:string,os:string>";

  /**
   * {@link #RETURN_TYPE}, for SQL: {@code reflect('dev.logberg.ClassifyAgent', 'returnType')}
   * (a static field is out of SQL's reach; Spark Connect has no other way into the JVM).
   */
  public static String returnType() {
    return RETURN_TYPE;
  }

  @Override
  public Row call(String agent) {
    final Agents.Classes c = Agents.classify(agent);
    return RowFactory.create(c.deviceType, c.browser, c.os);
  }
}
