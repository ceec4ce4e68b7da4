package dev.ember.cli;

import dev.ember.train.callbacks.ModelCheckpoint;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.management.ManagementFactory;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * {@code ./ember train --nproc N}: starts N worker processes on this machine, as {@code torchrun --nproc-per-node N}
 * does: the same JVM (its options, class path and the same {@code train} arguments, with the run folder made
 * explicit), each with {@code MASTER_ADDR=127.0.0.1}, a free {@code MASTER_PORT}, {@code RANK}, {@code WORLD_SIZE},
 * {@code LOCAL_RANK}, {@code LOCAL_WORLD_SIZE} and, unless {@code --threads} or {@code EMBER_NUM_THREADS} says
 * otherwise, {@code EMBER_NUM_THREADS} = cores / N. Rank 0's output is streamed through; the others' last lines are
 * shown when they fail.
 *
 * <p>When a worker fails (a non-zero exit status, a signal), the launcher names it, stops the others and, while
 * {@code --max-restarts} allows, starts the whole group again from the newest checkpoint in the run folder (as
 * {@code --resume} does; the checkpoints are exact, so the run ends with the weights of an uninterrupted one), or
 * from the start when none was written yet. A usage error (status 2) or an interruption (status 130) is not
 * restarted.
 */
final class WorkerLauncher {
  /** The most workers {@code --nproc} starts. */
  static final int MAX_NPROC = 64;
  /** The most restarts {@code --max-restarts} allows. */
  static final int MAX_RESTARTS = 1000;
  /** Lines kept of a worker's output other than rank 0's, shown when it fails. */
  static final int TAIL_LINES = 20;
  /** How long the others may take to end on their own once a worker failed, before they are stopped. */
  static final long GRACE_MILLIS = 10_000;

  /** The line every JVM with the Vector API prints first. */
  static final String INCUBATOR_WARNING = "WARNING: Using incubator modules: jdk.incubator.vector";

  private WorkerLauncher() {}

  /** A running worker: its process and the last lines of its output (ranks other than 0). */
  private record Worker(int rank, Process process, Deque<String> tail, List<Thread> pumps) {}

  /** How one attempt of the group ended: the failing rank (-1: none) and its exit status. */
  private record Outcome(int rank, long pid, int status, String tail) {
    boolean failed() {
      return rank >= 0;
    }
  }

  static int run(TrainCommand.Settings s, String[] args, PrintStream out, PrintStream err) throws IOException {
    Path dir = s.resume != null ? s.resume : s.out;
    // what rank 0 would refuse at once, refused here: before N workers start, and named as a usage error
    if (!s.overwrite && s.resume == null && java.nio.file.Files.isDirectory(dir) && RunFolder.holdsRun(dir)) {
      throw RunFolder.holdsRunError(dir);
    }
    if (s.data != null) {
      String problem = dev.ember.data.FashionMnist.problem(s.data);
      if (problem != null) throw new IllegalArgumentException("--data " + s.data + ": " + problem);
    }
    List<String> first = new ArrayList<>(List.of(args));
    if (s.resume == null && !given(args, "--out")) {
      first.add("--out");
      first.add(s.out.toString()); // every rank, and every restart, uses the same folder
    }
    List<String> current = first;
    int restarts = 0;
    List<Worker> workers = new java.util.concurrent.CopyOnWriteArrayList<>();
    java.util.concurrent.atomic.AtomicBoolean stopping = new java.util.concurrent.atomic.AtomicBoolean();
    Thread hook = new Thread(() -> { // a signal: the workers stop (Ctrl-C reached them too); wait for their last words
      stopping.set(true);
      // SIGTERM through the handle: Process.destroy() would also close the pipes that carry rank 0's last lines
      for (Worker w : workers) w.process().toHandle().destroy();
      for (Worker w : workers) waitFor(w, Interruption.MAX_STOP_WAIT_MILLIS + Interruption.FINISH_WAIT_MILLIS);
    }, "ember-train-launcher-interrupt");
    Runtime.getRuntime().addShutdownHook(hook);
    try {
      while (true) {
        workers.clear();
        Outcome o = attempt(s, current, out, err, workers, stopping);
        if (stopping.get()) return 130; // rank 0 said where the run stopped and how to continue
        if (!o.failed()) return 0;
        err.println("ember train: worker rank " + o.rank() + " (pid " + o.pid() + ") " + describe(o.status()));
        if (!o.tail().isEmpty()) err.print(o.tail());
        if (o.status() == 2 || o.status() == 130) return o.status();
        if (restarts >= s.maxRestarts) {
          err.println("ember train: the group of " + s.nproc + " workers failed" + (s.maxRestarts == 0 ? ""
              : " " + Main.count(restarts + 1, "time") + " (--max-restarts " + s.maxRestarts + ")")
              + "; continue with ./ember train --resume " + dir + " --nproc " + s.nproc
              + (s.data == null ? "" : " --data " + s.data));
          return 1;
        }
        restarts++;
        Optional<Path> latest = ModelCheckpoint.latestValid(dir.resolve(RunFolder.CHECKPOINTS), problem -> { });
        if (latest.isPresent()) {
          current = resumeArgs(args, dir);
        } else { // the folder held no run before this launch (else it was refused): what is there now is this run's
          current = new ArrayList<>(first);
          if (s.resume == null && !given(args, "--overwrite")) current.add("--overwrite");
        }
        err.println("ember train: restarting the " + s.nproc + " workers (restart " + restarts + " of " + s.maxRestarts
            + ") " + latest.map(p -> "from " + p).orElse("from the start"));
      }
    } finally {
      try {
        Runtime.getRuntime().removeShutdownHook(hook);
      } catch (IllegalStateException shuttingDown) {
        // the hook is running: it waits for the workers
      }
    }
  }

  /** The arguments that continue the run in {@code dir}: {@code --resume DIR} and the others given, less --out and --overwrite. */
  static List<String> resumeArgs(String[] args, Path dir) {
    List<String> a = new ArrayList<>(List.of("--resume", dir.toString()));
    for (int i = 0; i < args.length; i++) {
      String name = args[i].contains("=") && args[i].startsWith("--") ? args[i].substring(0, args[i].indexOf('=')) : args[i];
      boolean inline = !name.equals(args[i]);
      switch (name) {
        case "--out", "--resume" -> {
          if (!inline) i++; // and its value
        }
        case "--overwrite" -> { }
        default -> a.add(args[i]);
      }
    }
    return a;
  }

  private static boolean given(String[] args, String option) {
    for (String a : args) if (a.equals(option) || a.startsWith(option + "=")) return true;
    return false;
  }

  /** Starts the group, streams rank 0, and waits: for every worker's success, or the first failure. */
  private static Outcome attempt(TrainCommand.Settings s, List<String> trainArgs, PrintStream out, PrintStream err,
      List<Worker> workers, java.util.concurrent.atomic.AtomicBoolean stopping) throws IOException {
    int port = freePort();
    int cores = Runtime.getRuntime().availableProcessors();
    String threads = System.getenv("EMBER_NUM_THREADS");
    List<String> cmd = javaCommand(trainArgs);
    for (int r = 0; r < s.nproc; r++) {
      ProcessBuilder pb = new ProcessBuilder(cmd);
      Map<String, String> env = pb.environment();
      env.put("MASTER_ADDR", "127.0.0.1");
      env.put("MASTER_PORT", Integer.toString(port));
      env.put("RANK", Integer.toString(r));
      env.put("WORLD_SIZE", Integer.toString(s.nproc));
      env.put("LOCAL_RANK", Integer.toString(r));
      env.put("LOCAL_WORLD_SIZE", Integer.toString(s.nproc));
      if (s.threads == 0 && (threads == null || threads.isBlank())) {
        env.put("EMBER_NUM_THREADS", Integer.toString(Math.max(1, cores / s.nproc)));
      }
      pb.redirectInput(ProcessBuilder.Redirect.INHERIT);
      if (r != 0) pb.redirectErrorStream(true);
      Process p = pb.start();
      Deque<String> tail = new ArrayDeque<>();
      List<Thread> pumps = new ArrayList<>();
      if (r == 0) {
        pumps.add(pump(p.getInputStream(), line -> out.println(line), "ember-train-rank-0-out"));
        pumps.add(pump(p.getErrorStream(), line -> {
          if (!line.equals(INCUBATOR_WARNING)) err.println(line); // as ./ember filters it from its own JVM's
        }, "ember-train-rank-0-err"));
      } else {
        int rank = r;
        pumps.add(pump(p.getInputStream(), line -> {
          if (line.equals(INCUBATOR_WARNING)) return;
          synchronized (tail) {
            if (tail.size() == TAIL_LINES) tail.removeFirst();
            tail.addLast("[rank " + rank + "] " + line);
          }
        }, "ember-train-rank-" + r + "-out"));
      }
      workers.add(new Worker(r, p, tail, pumps));
    }
    Worker failed = null;
    while (failed == null) {
      if (stopping.get()) { // a signal: the hook stops the workers; a worker ending now has not failed
        for (Worker w : workers) waitFor(w, Interruption.MAX_STOP_WAIT_MILLIS + Interruption.FINISH_WAIT_MILLIS);
        return new Outcome(-1, -1, 0, "");
      }
      boolean running = false;
      for (Worker w : workers) {
        if (w.process().isAlive()) {
          running = true;
        } else if (w.process().exitValue() != 0 && (failed == null || byASignal(w) && !byASignal(failed))) {
          failed = w; // in one look, a worker a signal ended goes before those that failed because it died
        }
      }
      if (!running && failed == null) break;
      if (failed == null) sleep(20);
    }
    if (failed == null) {
      for (Worker w : workers) waitFor(w, 5_000); // the pumps: rank 0's last lines
      return new Outcome(-1, -1, 0, "");
    }
    long deadline = System.currentTimeMillis() + GRACE_MILLIS; // the others see the lost peer and end with one line
    for (Worker w : workers) {
      if (!waitFor(w, Math.max(1, deadline - System.currentTimeMillis()))) w.process().toHandle().destroy(); // SIGTERM
    }
    for (Worker w : workers) {
      if (!waitFor(w, 5_000)) w.process().toHandle().destroyForcibly();
      waitFor(w, 5_000);
    }
    StringBuilder tail = new StringBuilder();
    synchronized (failed.tail()) {
      for (String line : failed.tail()) tail.append(line).append('\n');
    }
    return new Outcome(failed.rank(), failed.process().pid(), failed.process().exitValue(), tail.toString());
  }

  private static boolean byASignal(Worker w) {
    return w.process().exitValue() > 128;
  }

  /** {@code killed by signal 9 (SIGKILL)} or {@code failed with exit status 1}. */
  static String describe(int status) {
    if (status > 128 && status < 128 + 65) {
      int sig = status - 128;
      String name = switch (sig) {
        case 1 -> "SIGHUP";
        case 2 -> "SIGINT";
        case 6 -> "SIGABRT";
        case 9 -> "SIGKILL";
        case 11 -> "SIGSEGV";
        case 15 -> "SIGTERM";
        default -> null;
      };
      return "was killed by signal " + sig + (name == null ? "" : " (" + name + ")");
    }
    return "failed with exit status " + status;
  }

  /** This JVM's command for a worker: its java, its options (less an ahead-of-time recording's), class path and main. */
  static List<String> javaCommand(List<String> trainArgs) {
    List<String> cmd = new ArrayList<>();
    cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    for (String a : ManagementFactory.getRuntimeMXBean().getInputArguments()) {
      // one recording per cache: the workers use a cache the launcher's JVM maps, but do not record one
      if (a.startsWith("-XX:AOTMode=") || a.startsWith("-XX:AOTConfiguration=")) continue;
      cmd.add(a);
    }
    cmd.add("-cp");
    cmd.add(System.getProperty("java.class.path"));
    cmd.add(Main.class.getName());
    cmd.add("train");
    cmd.addAll(trainArgs);
    return cmd;
  }

  private static int freePort() throws IOException {
    try (ServerSocket socket = new ServerSocket(0)) {
      return socket.getLocalPort();
    }
  }

  private static Thread pump(InputStream in, java.util.function.Consumer<String> sink, String name) {
    Thread t = new Thread(() -> {
      try (BufferedReader r = new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8))) {
        for (String line; (line = r.readLine()) != null; ) sink.accept(line);
      } catch (IOException ended) {
        // the worker is gone
      }
    }, name);
    t.setDaemon(true);
    t.start();
    return t;
  }

  /** Waits up to {@code millis} for the worker and its output; true if it ended. */
  private static boolean waitFor(Worker w, long millis) {
    try {
      if (!w.process().waitFor(millis, java.util.concurrent.TimeUnit.MILLISECONDS)) return false;
      for (Thread t : w.pumps()) t.join(millis);
      return true;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    }
  }

  private static void sleep(long millis) {
    try {
      Thread.sleep(millis);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
