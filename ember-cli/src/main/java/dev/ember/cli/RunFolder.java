package dev.ember.cli;

import dev.ember.nn.io.AtomicFiles;
import dev.ember.train.callbacks.ModelCheckpoint;
import java.io.IOException;
import java.io.InputStream;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.OverlappingFileLockException;
import java.nio.file.AccessDeniedException;
import java.nio.file.DirectoryNotEmptyException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Properties;
import java.util.stream.Stream;

/**
 * The folder of one {@code ./ember train} run and what an invocation may do to it. A new run never
 * mixes with an old one: a folder that already holds a run is refused unless {@code --overwrite}
 * asks to delete that run's files (and only those; other files in the folder stay). Temporary files
 * that a killed process left behind (AtomicFiles' {@code .NAME.HEX.tmp}) are removed when a run starts
 * or resumes. A run that fails before it wrote anything worth keeping (a checkpoint or weights)
 * takes its files away again, and the folders this invocation created. While a run uses the folder
 * it holds a lock on {@value #LOCK} in it, so a second {@code ./ember train} on the same folder (two
 * terminals, one {@code --resume} too many) is refused instead of writing into the same files.
 */
final class RunFolder implements AutoCloseable {
  /** The files a run writes directly in its folder. */
  static final List<String> RUN_FILES = List.of("run.properties", "metrics.csv", "model.safetensors", "profile.json",
      "report.html", "confusion_matrix.json");
  /** The subfolder of the checkpoints. */
  static final String CHECKPOINTS = "checkpoints";
  /** The file locked while a run uses the folder; deleted when it ends (a killed run leaves it, unlocked). */
  static final String LOCK = ".ember-train.lock";

  private final Path dir;
  private final List<Path> created; // folders this invocation made, deepest first
  private final FileChannel lock;

  private RunFolder(Path dir, List<Path> created) throws IOException {
    this.dir = dir;
    this.created = created;
    this.lock = lock(dir);
  }

  /** Locks {@code dir}'s {@link #LOCK} file, or says that another run holds it. */
  private static FileChannel lock(Path dir) throws IOException {
    FileChannel ch = FileChannel.open(dir.resolve(LOCK), StandardOpenOption.CREATE, StandardOpenOption.WRITE);
    FileLock held;
    try {
      held = ch.tryLock();
    } catch (OverlappingFileLockException sameProcess) {
      held = null;
    }
    if (held == null) {
      ch.close();
      throw new IllegalArgumentException(dir + " is in use by another ./ember train; wait for it to end or choose another folder");
    }
    return ch;
  }

  /** Releases the lock and deletes its file. */
  @Override
  public void close() throws IOException {
    if (!lock.isOpen()) return;
    Files.deleteIfExists(dir.resolve(LOCK)); // while still held: a run starting now locks a new file
    lock.close();
  }

  Path dir() {
    return dir;
  }

  Path checkpoints() {
    return dir.resolve(CHECKPOINTS);
  }

  /**
   * The folder for a new run: created if missing; an existing folder must not hold a run unless
   * {@code overwrite}, which deletes that run's files first. Stale temporary files are removed.
   *
   * @throws IllegalArgumentException when the folder holds a run and {@code overwrite} is false
   * @throws IOException saying why the folder cannot be created or written
   */
  static RunFolder create(Path dir, boolean overwrite) throws IOException {
    if (Files.exists(dir) && !Files.isDirectory(dir)) throw cannotCreate(dir, "it is a file");
    List<Path> made = new ArrayList<>();
    for (Path p = dir.toAbsolutePath(); p != null && !Files.exists(p); p = p.getParent()) made.add(p);
    try {
      Files.createDirectories(dir);
    } catch (IOException e) {
      throw cannotCreate(dir, why(dir, e));
    }
    if (!Files.isWritable(dir)) throw new IOException("cannot write in run folder " + dir + ": permission denied");
    RunFolder f = new RunFolder(dir, List.copyOf(made)); // locked before anything in it is looked at or deleted
    try {
      if (holdsRun(dir)) {
        if (!overwrite) throw holdsRunError(dir);
        deleteRun(dir);
      }
      f.removeTemporaries();
    } catch (IOException | RuntimeException e) {
      f.close();
      throw e;
    }
    return f;
  }

  /** The folder of a run to continue; stale temporary files are removed. */
  static RunFolder resume(Path dir) throws IOException {
    if (!Files.isDirectory(dir)) throw new IllegalArgumentException("--resume " + dir + ": no such folder");
    RunFolder f = new RunFolder(dir, List.of());
    try {
      f.removeTemporaries(); // safe now: no other run writes here while this one holds the lock
    } catch (IOException | RuntimeException e) {
      f.close();
      throw e;
    }
    return f;
  }

  /** The refusal of a new run in {@code dir}, which holds a run. */
  static IllegalArgumentException holdsRunError(Path dir) throws IOException {
    return new IllegalArgumentException(dir + " already holds a run (" + describe(dir) + "); use --resume " + dir
        + " to continue it or choose another --out (or add --overwrite to delete it and start again)");
  }

  /** Whether {@code dir} holds any file of a run: run.properties, metrics.csv, a checkpoint, ... */
  static boolean holdsRun(Path dir) throws IOException {
    for (String f : RUN_FILES) if (Files.exists(dir.resolve(f))) return true;
    return !checkpointFiles(dir.resolve(CHECKPOINTS)).isEmpty();
  }

  /** "30 epochs, last checkpoint step 14070", from run.properties and the newest checkpoint's name. */
  static String describe(Path dir) throws IOException {
    List<String> parts = new ArrayList<>();
    Properties p = new Properties();
    try (InputStream in = Files.newInputStream(dir.resolve("run.properties"))) {
      p.load(in);
      String epochs = p.getProperty("epochs");
      if (epochs != null) parts.add(Main.count(Integer.parseInt(epochs.strip()), "epoch"));
    } catch (IOException | NumberFormatException e) {
      // no or unreadable run.properties: the checkpoint still tells what is there
    }
    Optional<Path> latest = ModelCheckpoint.latest(dir.resolve(CHECKPOINTS));
    parts.add(latest.map(c -> "last checkpoint step " + ModelCheckpoint.stepOf(c)).orElse("no checkpoint"));
    return String.join(", ", parts);
  }

  /** Deletes AtomicFiles' temporary files in the folder and in checkpoints/, left by a process that was killed while writing. */
  void removeTemporaries() throws IOException {
    removeTemporaries(dir);
  }

  private static void removeTemporaries(Path dir) throws IOException {
    for (Path folder : List.of(dir, dir.resolve(CHECKPOINTS))) {
      for (Path f : list(folder)) if (AtomicFiles.isTemporary(f) && Files.isRegularFile(f)) Files.deleteIfExists(f);
    }
  }

  /** Whether the folder holds something worth keeping after a failure: a checkpoint or weights. */
  boolean holdsValue() throws IOException {
    return Files.exists(dir.resolve("model.safetensors")) || !checkpointFiles(checkpoints()).isEmpty();
  }

  /**
   * After a failed new run: if nothing worth keeping was written, deletes the run's files and then
   * the folders this invocation created, each only if empty (a folder that existed before stays).
   */
  void discardIfWorthless() throws IOException {
    if (holdsValue()) return;
    close();
    deleteRun(dir);
    for (Path p : created) {
      try {
        Files.deleteIfExists(p);
      } catch (DirectoryNotEmptyException e) {
        return; // something else lives there: keep it and the folders above
      }
    }
  }

  /**
   * Deletes the periodic checkpoints that the checkpoint rotation does not know ({@code kept}), except
   * the newest: those written at an interruption, once a newer checkpoint exists.
   */
  void pruneCheckpoints(List<String> kept) throws IOException {
    Optional<Path> newest = ModelCheckpoint.latest(checkpoints());
    for (Path f : checkpointFiles(checkpoints())) {
      if (ModelCheckpoint.isPeriodic(f) && !kept.contains(f.getFileName().toString()) && !f.equals(newest.orElse(null))) {
        Files.deleteIfExists(f);
      }
    }
  }

  /** Deletes a run's own files in {@code dir}: {@link #RUN_FILES}, checkpoints and temporary files; nothing else. */
  private static void deleteRun(Path dir) throws IOException {
    removeTemporaries(dir);
    Path ckpt = dir.resolve(CHECKPOINTS);
    for (Path f : checkpointFiles(ckpt)) Files.deleteIfExists(f);
    if (Files.isDirectory(ckpt)) {
      try {
        Files.delete(ckpt);
      } catch (DirectoryNotEmptyException e) {
        // files that are not the run's stay, and so does their folder
      }
    }
    for (String f : RUN_FILES) Files.deleteIfExists(dir.resolve(f));
  }

  private static List<Path> checkpointFiles(Path ckpt) throws IOException {
    List<Path> out = new ArrayList<>();
    for (Path f : list(ckpt)) {
      if (ModelCheckpoint.isPeriodic(f) || f.getFileName().toString().equals("best.ckpt")) out.add(f);
    }
    return out;
  }

  private static List<Path> list(Path folder) throws IOException {
    if (!Files.isDirectory(folder)) return List.of();
    try (Stream<Path> s = Files.list(folder)) {
      return s.toList();
    }
  }

  private static IOException cannotCreate(Path dir, String why) {
    return new IOException("cannot create run folder " + dir + ": " + why);
  }

  /**
   * What the file system said, in words: {@code FileSystemException}'s message is often only the
   * path, its reason ("Read-only file system") and its type say what went wrong.
   */
  static String why(Path dir, IOException e) {
    Path file = e instanceof FileSystemException f && f.getFile() != null ? Path.of(f.getFile()) : dir;
    String where = file.toAbsolutePath().equals(dir.toAbsolutePath()) ? "" : " (" + file + ")";
    if (e instanceof AccessDeniedException) return "permission denied" + where;
    if (e instanceof FileAlreadyExistsException) {
      return file.toAbsolutePath().equals(dir.toAbsolutePath()) ? "it is a file" : file + " is a file";
    }
    Path fileAbove = fileAbove(dir);
    if (fileAbove != null) return fileAbove + " is a file";
    if (e instanceof FileSystemException f && f.getReason() != null) {
      String r = f.getReason();
      return (r.length() > 1 && Character.isLowerCase(r.charAt(1)) ? Character.toLowerCase(r.charAt(0)) + r.substring(1) : r) + where;
    }
    if (e instanceof NoSuchFileException) {
      Path parent = file.toAbsolutePath().getParent();
      return parent != null && Files.isDirectory(parent) ? parent + " does not take new folders (no such file or directory)"
          : "no such file or directory" + where;
    }
    return e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage();
  }

  /** The nearest existing ancestor of {@code dir} that is a regular file, or null. */
  private static Path fileAbove(Path dir) {
    for (Path p = dir.toAbsolutePath().getParent(); p != null; p = p.getParent()) {
      if (Files.exists(p)) return Files.isRegularFile(p) ? p : null;
    }
    return null;
  }
}
