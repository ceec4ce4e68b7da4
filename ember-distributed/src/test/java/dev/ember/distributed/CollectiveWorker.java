package dev.ember.distributed;

import java.net.InetSocketAddress;
import java.time.Duration;

/**
 * A rank in its own JVM, started by {@link ProcessCollectivesTest}:
 * {@code CollectiveWorker MODE RANK WORLD PORT TIMEOUT_MS [ARG]}. Modes: {@code script} runs
 * {@link CollectiveScript} (exit 0 when every result matches the reference, else 1 with the mismatch);
 * {@code env} does the same in a group made by {@link ProcessGroup#fromEnv()} (RANK .. TIMEOUT_MS ignored); both
 * take the sizes as an optional comma-separated ARG;
 * {@code exitEarly} runs one allreduce and exits without closing its group; {@code idle} joins, prints
 * {@code READY} and sleeps (to be killed); {@code expectDead K} joins, prints
 * {@code READY}, runs a large allreduce and exits 0 when it fails with a {@link PeerLostException} naming rank
 * {@code K} (printing {@code LOST peer}), else 1.
 */
final class CollectiveWorker {
  private CollectiveWorker() {}

  public static void main(String[] args) throws Exception {
    String mode = args[0];
    int rank = Integer.parseInt(args[1]);
    int world = Integer.parseInt(args[2]);
    int port = Integer.parseInt(args[3]);
    Duration timeout = Duration.ofMillis(Long.parseLong(args[4]));
    int exit = 0;
    try (ProcessGroup g = mode.equals("env") ? ProcessGroup.fromEnv()
        : ProcessGroup.connect(rank, world, new InetSocketAddress("127.0.0.1", port), timeout)) {
      switch (mode) {
        case "script", "env" -> {
          int[] sizes = args.length > 5 ? java.util.Arrays.stream(args[5].split(",")).mapToInt(Integer::parseInt).toArray()
              : ProcessCollectivesTest.SIZES;
          String problem = CollectiveScript.run(g, sizes);
          System.out.println(problem == null ? "OK" : "MISMATCH " + problem);
          exit = problem == null ? 0 : 1; // after close: the others must not take this rank for dead
        }
        case "exitEarly" -> {
          float[] x = CollectiveScript.floats(40, rank, 300_001);
          g.allReduce(x, AllReduceOp.SUM);
          System.out.println("DONE");
          System.out.flush();
          System.exit(0); // without closing the group: no goodbye
        }
        case "ddp" -> { // DistributedDataParallelTest's MLP run as this rank (its replica from another seed)
          var params = DistributedDataParallelTest.trainRank(g, DistributedDataParallelTest.mlp(99),
              DistributedDataParallel.DEFAULT_BUCKET_BYTES, DistributedDataParallelTest.PLAIN,
              DistributedDataParallelTest.FEATURES);
          System.out.println("PARAMS " + DistributedDataParallelTest.digest(params));
        }
        case "idle" -> {
          System.out.println("READY");
          System.out.flush();
          Thread.sleep(600_000);
        }
        case "expectDead" -> {
          int dead = Integer.parseInt(args[5]);
          System.out.println("READY");
          System.out.flush();
          try {
            g.allReduce(new float[1 << 20], AllReduceOp.SUM);
            System.out.println("NO FAILURE");
            System.exit(1);
          } catch (PeerLostException e) {
            System.out.println("LOST " + e.peerRank() + " " + e.getMessage());
            System.out.flush();
            System.exit(e.peerRank() == dead ? 0 : 1);
          }
        }
        default -> throw new IllegalArgumentException("CollectiveWorker: unknown mode " + mode);
      }
    }
    System.out.flush();
    System.exit(exit);
  }
}
