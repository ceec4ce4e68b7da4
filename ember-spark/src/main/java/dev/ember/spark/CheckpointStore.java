package dev.ember.spark;

import dev.ember.train.Checkpoint;
import java.io.IOException;
import java.io.Serializable;
import java.io.UncheckedIOException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.UUID;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;

/**
 * The checkpoints of a {@link SparkTrainer} run in one directory, one {@link Checkpoint} file per finished epoch
 * ({@code epoch-0003.ckpt} after the fourth epoch), of which the newest {@value #KEEP} are kept. A plain path is
 * written with {@link Checkpoint#write} (a temporary file in the same directory, renamed over the target); a URI
 * with a scheme ({@code hdfs://}, {@code s3a://}, {@code file://}) goes through Hadoop's {@link FileSystem}: the
 * file is written locally, copied to a hidden temporary name in the directory and renamed, so a reader never sees
 * part of one.
 */
final class CheckpointStore implements Serializable {
  private static final long serialVersionUID = 1L;
  /** How many of the newest checkpoints stay; older ones are deleted after a write. */
  static final int KEEP = 2;
  private static final Pattern NAME = Pattern.compile("epoch-(\\d{4,})\\.ckpt");

  private final String dir;
  /** Hadoop's settings from the driver, for URIs with a scheme; null for a plain path. */
  private final Map<String, String> hadoop;

  CheckpointStore(String dir, Map<String, String> hadoop) {
    this.dir = dir;
    this.hadoop = hadoop;
  }

  /** Whether {@code dir} names a Hadoop file system location (a URI with a scheme) rather than a local path. */
  static boolean isUri(String dir) {
    return dir.matches("[a-zA-Z][a-zA-Z0-9+.-]+:.*") && !dir.matches("[a-zA-Z]:[\\\\/].*"); // not C:\ (Windows)
  }

  String dir() {
    return dir;
  }

  static String fileName(int epoch) {
    return String.format("epoch-%04d.ckpt", epoch);
  }

  /** The newest epoch with a checkpoint that reads and verifies, or empty when there is none. */
  Optional<Integer> latest() throws IOException {
    TreeMap<Integer, String> found = new TreeMap<>();
    for (String name : list()) {
      Matcher m = NAME.matcher(name);
      if (m.matches()) found.put(Integer.parseInt(m.group(1)), name);
    }
    for (int epoch : found.descendingKeySet()) {
      if (read(epoch).isPresent()) return Optional.of(epoch);
    }
    return Optional.empty();
  }

  /** The state of epoch {@code epoch}'s checkpoint, or empty when it is missing or does not verify. */
  Optional<Map<String, Object>> read(int epoch) throws IOException {
    if (hadoop == null) {
      Path file = Path.of(dir, fileName(epoch));
      if (!Files.isRegularFile(file) || Checkpoint.verify(file).isPresent()) return Optional.empty();
      return Optional.of(Checkpoint.read(file));
    }
    FileSystem fs = fs();
    org.apache.hadoop.fs.Path remote = new org.apache.hadoop.fs.Path(dir, fileName(epoch));
    if (!fs.exists(remote)) return Optional.empty();
    Path local = Files.createTempFile("ember-spark-", ".ckpt");
    try {
      fs.copyToLocalFile(false, remote, new org.apache.hadoop.fs.Path(local.toUri()), true);
      if (Checkpoint.verify(local).isPresent()) return Optional.empty();
      return Optional.of(Checkpoint.read(local));
    } finally {
      Files.deleteIfExists(local);
    }
  }

  /** Writes epoch {@code epoch}'s checkpoint atomically, then deletes all but the newest {@value #KEEP}. */
  void write(int epoch, Map<String, Object> state) throws IOException {
    if (hadoop == null) {
      Path d = Path.of(dir);
      Files.createDirectories(d);
      Checkpoint.write(d.resolve(fileName(epoch)), state);
    } else {
      FileSystem fs = fs();
      org.apache.hadoop.fs.Path d = new org.apache.hadoop.fs.Path(dir);
      fs.mkdirs(d);
      Path local = Files.createTempFile("ember-spark-", ".ckpt");
      org.apache.hadoop.fs.Path tmp = new org.apache.hadoop.fs.Path(d, "." + fileName(epoch) + "." + UUID.randomUUID() + ".tmp");
      try {
        Checkpoint.write(local, state);
        fs.copyFromLocalFile(false, true, new org.apache.hadoop.fs.Path(local.toUri()), tmp);
        org.apache.hadoop.fs.Path target = new org.apache.hadoop.fs.Path(d, fileName(epoch));
        fs.delete(target, false);                    // HDFS's rename does not replace an existing file
        if (!fs.rename(tmp, target)) throw new IOException("SparkTrainer: cannot rename " + tmp + " to " + target);
      } finally {
        Files.deleteIfExists(local);
        if (fs.exists(tmp)) fs.delete(tmp, false);
      }
    }
    for (int old = epoch - KEEP; old >= 0; old--) {
      if (!delete(fileName(old))) break;             // older ones went with earlier writes
    }
  }

  private boolean delete(String name) throws IOException {
    if (hadoop == null) return Files.deleteIfExists(Path.of(dir, name));
    return fs().delete(new org.apache.hadoop.fs.Path(dir, name), false);
  }

  private List<String> list() throws IOException {
    List<String> names = new ArrayList<>();
    if (hadoop == null) {
      Path d = Path.of(dir);
      if (!Files.isDirectory(d)) return names;
      try (var s = Files.list(d)) {
        s.forEach(p -> names.add(p.getFileName().toString()));
      }
      return names;
    }
    FileSystem fs = fs();
    org.apache.hadoop.fs.Path d = new org.apache.hadoop.fs.Path(dir);
    if (!fs.exists(d)) return names;
    for (FileStatus s : fs.listStatus(d)) names.add(s.getPath().getName());
    return names;
  }

  private FileSystem fs() throws IOException {
    Configuration conf = new Configuration(false);
    hadoop.forEach(conf::set);
    try {
      return FileSystem.get(URI.create(dir), conf);
    } catch (IllegalArgumentException e) {
      throw new UncheckedIOException(new IOException("SparkTrainer: checkpoint directory '" + dir
          + "' is not a usable Hadoop URI: " + e.getMessage(), e));
    }
  }
}
