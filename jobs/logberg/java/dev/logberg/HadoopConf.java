package dev.logberg;

import java.io.IOException;
import java.io.ObjectInputStream;
import java.io.ObjectOutputStream;
import java.io.Serializable;
import org.apache.hadoop.conf.Configuration;

/**
 * A Hadoop Configuration that travels with the tasks (it is Writable, not Serializable): the
 * session's own, taken on the driver where a scan or a write is planned.
 */
final class HadoopConf implements Serializable {
  private static final long serialVersionUID = 1L;
  transient Configuration conf;

  HadoopConf(Configuration conf) {
    this.conf = conf;
  }

  private void writeObject(ObjectOutputStream out) throws IOException {
    out.defaultWriteObject();
    conf.write(out);
  }

  private void readObject(ObjectInputStream in) throws IOException, ClassNotFoundException {
    in.defaultReadObject();
    conf = new Configuration(false);
    conf.readFields(in);
  }
}
