import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.BoolOptional;
import org.bytedeco.pytorch.NoGradGuard;
import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.TensorArrayRefOptional;
import org.bytedeco.pytorch.TensorOptional;
import org.bytedeco.pytorch.global.torch;

/**
 * The nn category's rows in libtorch 2.10 through the JavaCPP presets (the torch210 peer of
 * {@code bench/compare.sh nn --peer torch113,torch210}): the layers of {@code bench/peers/pytorch_ops.py --suite
 * nn} that are one functional call (attention forward and forward+backward, conv2d, conv1d, conv_transpose2d,
 * layer_norm, group_norm, batch_norm, max_pool2d, embedding, cross_entropy), with the same shapes, case names,
 * timing (warm-up, calls per repeat calibrated to --target, repeats disturbed by other processes re-run) and JSON
 * keys. Not here: LSTM and GRU (module objects) and attention memory (torch.profiler), which keep torch113 alone.
 *
 * <p>Bench-time only: bench/build.sh compiles it against the jars of the torch210 peer's build; it is no part of
 * Ember's build. The caller sets OMP_NUM_THREADS / OPENBLAS_NUM_THREADS and the one-OpenMP-pool library path
 * before libtorch loads (bench/compare.py does).
 *
 * <pre>
 * java -cp CLASSES:LIB/* Torch210Nn --threads 2 [--repeats 3] [--only conv2d,layer_norm] [--max-wait 10]
 * </pre>
 */
public final class Torch210Nn {
  static int threads = 2;
  static int repeats = 5;
  static double warmupS = 1.0;
  static double targetS = 0.4;
  static String only = "";
  static double maxWait = 10;
  static double foreignMax = 0.1;
  static int maxAttempts = 4;
  static final int HEADS = 8;
  static final int HEAD_DIM = 64;

  interface Step {
    void run();
  }

  public static void main(String[] args) {
    for (int i = 0; i < args.length; i++) {
      String a = args[i];
      if (i + 1 >= args.length) die("missing value for " + a);
      String v = args[++i];
      switch (a) {
        case "--threads" -> threads = Integer.parseInt(v);
        case "--repeats" -> repeats = Integer.parseInt(v);
        case "--warmup" -> warmupS = Double.parseDouble(v);
        case "--target" -> targetS = Double.parseDouble(v);
        case "--only" -> only = v;
        case "--max-wait" -> maxWait = Double.parseDouble(v);
        case "--foreign-max" -> foreignMax = Double.parseDouble(v);
        case "--max-attempts" -> maxAttempts = Integer.parseInt(v);
        default -> die("Torch210Nn: unknown option " + a);
      }
    }
    torch.set_num_threads(threads);
    System.out.println("{\"workload\": \"_env\", \"side\": \"torch210\", \"torch\": \"2.10.0\", \"threads\": " + threads
        + ", \"openblas\": {\"corename\": " + str(openblasCore()) + "}, \"peer\": \"torch2.10-javacpp\"}");
    torch.manual_seed(0);
    attention();
    conv2d("lenet1", 32, 1, 28, 6, 5, 0, 1, true);
    conv2d("lenet2", 32, 6, 14, 16, 5, 0, 1, true);
    conv2d("vgg", 8, 64, 56, 64, 3, 1, 1, false);
    conv2d("vgg", 8, 64, 56, 64, 3, 1, 1, true);
    conv2d("depthwise", 8, 64, 56, 64, 3, 1, 64, true);
    layers();
    System.exit(0);
  }

  static void die(String msg) {
    System.err.println(msg);
    System.exit(2);
  }

  // ------------------------------------------------------------------ the cases

  static Tensor attn(Tensor q, Tensor k, Tensor v) {
    Tensor s = torch.matmul(q, k.transpose(-2, -1)).mul(new Scalar(1.0 / Math.sqrt(q.size(-1))));
    return torch.matmul(s.softmax(-1), v);
  }

  static String attnShape(int t) {
    return "B=1 H=" + HEADS + " T=" + t + " D=" + HEAD_DIM;
  }

  static void attention() {
    for (int t : new int[] {128, 256, 512, 1024, 2048, 4096}) {
      String c = "fwd " + attnShape(t);
      if (!selected("attention", c)) continue;
      Tensor q = torch.randn(1, HEADS, t, HEAD_DIM), k = torch.randn(1, HEADS, t, HEAD_DIM), v = torch.randn(1, HEADS, t, HEAD_DIM);
      latency("attention", c, () -> {
        try (NoGradGuard g = new NoGradGuard()) {
          attn(q, k, v);
        }
      });
    }
    for (int t : new int[] {128, 256, 512, 1024}) {
      String c = "fwd+bwd " + attnShape(t);
      Tensor q = leaf(1, HEADS, t, HEAD_DIM), k = leaf(1, HEADS, t, HEAD_DIM), v = leaf(1, HEADS, t, HEAD_DIM);
      fwdBwd("attention", c, () -> attn(q, k, v), q, k, v);
    }
  }

  static void conv2d(String tag, int n, int c, int hw, int o, int k, int pad, int groups, boolean backward) {
    String name = (backward ? "fwd+bwd " : "fwd ") + tag + " N=" + n + " " + c + "x" + hw + "x" + hw + " -> " + o + " k" + k
        + (pad != 0 ? " p" + pad : "") + (groups > 1 ? " g" + groups : "");
    if (!selected("conv2d", name)) return;
    long[] one = {1, 1};
    long[] p = {pad, pad};
    if (!backward) {
      Tensor x = torch.randn(n, c, hw, hw), w = torch.randn(o, c / groups, k, k).mul(new Scalar(0.1)), b = torch.randn(o);
      latency("conv2d", name, () -> {
        try (NoGradGuard g = new NoGradGuard()) {
          torch.conv2d(x, w, new TensorOptional(b), one, p, one, groups);
        }
      });
      return;
    }
    Tensor x = leaf(n, c, hw, hw), w = leaf(0.1, o, c / groups, k, k), b = leaf(o);
    fwdBwd("conv2d", name, () -> torch.conv2d(x, w, new TensorOptional(b), one, p, one, groups), x, w, b);
  }

  static void layers() {
    Tensor x1 = leaf(16, 128, 512), w1 = leaf(0.05, 128, 128, 3), b1 = leaf(128);
    fwdBwd("conv1d", "fwd+bwd N=16 128x512 -> 128 k3 p1",
        () -> torch.conv1d(x1, w1, new TensorOptional(b1), new long[] {1}, new long[] {1}, new long[] {1}, 1), x1, w1, b1);
    Tensor xt = leaf(16, 64, 16, 16), wt = leaf(0.05, 64, 32, 4, 4), bt = leaf(32);
    fwdBwd("conv_transpose2d", "fwd+bwd N=16 64x16x16 -> 32 k4 s2 p1", () -> torch.conv_transpose2d(xt, wt,
        new TensorOptional(bt), new long[] {2, 2}, new long[] {1, 1}, new long[] {0, 0}, 1, 1, 1), xt, wt, bt);
    Tensor xl = leaf(4096, 1024), wl = ones(1024), bl = zeros(1024);
    fwdBwd("layer_norm", "fwd+bwd [4096x1024]", () -> torch.layer_norm(xl, new long[] {1024}, new TensorOptional(wl),
        new TensorOptional(bl), 1e-5, true), xl, wl, bl);
    Tensor xg = leaf(8, 64, 56, 56), wg = ones(64), bg = zeros(64);
    fwdBwd("group_norm", "fwd+bwd N=8 64x56x56 groups=32", () -> torch.group_norm(xg, 32, new TensorOptional(wg),
        new TensorOptional(bg), 1e-5, true), xg, wg, bg);
    Tensor xb = leaf(64, 32, 32, 32), wb = ones(32), bb = zeros(32), mean = torch.zeros(32), var = torch.ones(32);
    fwdBwd("batch_norm", "fwd+bwd train N=64 32x32x32", () -> torch.batch_norm(xb, new TensorOptional(wb),
        new TensorOptional(bb), new TensorOptional(mean), new TensorOptional(var), true, 0.1, 1e-5, true), xb, wb, bb);
    Tensor xp = leaf(64, 32, 32, 32);
    fwdBwd("max_pool2d", "fwd+bwd N=64 32x32x32 k2", () -> torch.max_pool2d(xp, new long[] {2, 2}, new long[] {2, 2},
        new long[] {0, 0}, new long[] {1, 1}, false), xp);
    Tensor table = leaf(32000, 512);
    Tensor tokens = torch.randint(32000, new long[] {4096});
    fwdBwd("embedding", "fwd+bwd vocab=32000 dim=512 tokens=4096", () -> torch.embedding(table, tokens), table);
    Tensor logits = leaf(512, 32000);
    Tensor target = torch.randint(32000, new long[] {512});
    fwdBwd("cross_entropy", "fwd+bwd [512x32000]", () -> torch.cross_entropy_loss(logits, target), logits);
  }

  static Tensor leaf(long... shape) {
    return leaf(1.0, shape);
  }

  static Tensor leaf(double scale, long... shape) {
    Tensor t = torch.randn(shape);
    if (scale != 1.0) t = t.mul(new Scalar(scale));
    return t.set_requires_grad(true);
  }

  static Tensor ones(long n) {
    return torch.ones(n).set_requires_grad(true);
  }

  static Tensor zeros(long n) {
    return torch.zeros(n).set_requires_grad(true);
  }

  interface Forward {
    Tensor run();
  }

  /**
   * Forward + backward in ms/call, as pytorch_ops.py's fwd_bwd and NnCases.fwdBwd: the leaves' gradients dropped,
   * then backward with a gradient of ones (made from one untimed forward), or backward() of a scalar.
   */
  static void fwdBwd(String workload, String c, Forward f, Tensor... leaves) {
    if (!selected(workload, c)) return;
    Tensor y0 = f.run();  // outside any pointer scope: the gradient of ones lives as long as the leaves
    Tensor up = y0.numel() == 1 ? null : torch.ones_like(y0);
    for (Tensor t : leaves) t.mutable_grad().reset();
    latency(workload, c, () -> {
      for (Tensor t : leaves) t.mutable_grad().reset();
      Tensor y = f.run();
      if (up == null) y.backward();
      else y.backward(up, new BoolOptional(), false, new TensorArrayRefOptional());
    });
  }

  // ------------------------------------------------------------------ timing (as shared_peers.measure)

  static boolean selected(String workload, String c) {
    if (only.isBlank()) return true;
    for (String p : only.split(",")) {
      p = p.strip();
      if (!p.isEmpty() && (workload.startsWith(p) || (workload + "/" + c).startsWith(p))) return true;
    }
    return false;
  }

  static double now() {
    return System.nanoTime() / 1e9;
  }

  /** Runs one call inside a pointer scope, so the call's native temporaries are released as Python's would be. */
  static void call(Step fn) {
    try (PointerScope s = new PointerScope()) {
      fn.run();
    }
  }

  static void latency(String workload, String c, Step fn) {
    double waited = waitQuiet(maxWait);
    double t0 = now();
    int n = 0;
    while (n < 2 || now() - t0 < warmupS) {
      call(fn);
      n++;
    }
    int k = 1;
    double dt;
    while (true) {
      double t = now();
      for (int i = 0; i < k; i++) call(fn);
      dt = now() - t;
      if (dt >= targetS * 0.5) break;
      k = Math.max(k + 1, Math.min(k * 10, (int) (k * targetS / Math.max(dt, 1e-9))));
    }
    k = Math.max(1, (int) Math.round(k * targetS / dt));
    List<Double> vals = new ArrayList<>(), dirty = new ArrayList<>();
    int attempts = 0;
    boolean lastDirty = false;
    while (vals.size() < repeats && attempts < repeats * maxAttempts) {
      attempts++;
      if (lastDirty && waited < maxWait) waited += waitQuiet(maxWait - waited);
      double[] w0 = cpu();
      double t = now();
      for (int i = 0; i < k; i++) call(fn);
      double el = now() - t;
      double[] w1 = cpu();
      double foreign = ((w1[0] - w0[0]) - (w1[1] - w0[1])) / el;
      double ms = 1e3 * el / k;
      lastDirty = foreign > foreignMax;
      if (lastDirty) {
        dirty.add(ms);
        if (waited >= maxWait && dirty.size() >= repeats) break;
      } else {
        vals.add(ms);
      }
    }
    boolean contaminated = vals.size() < Math.max(1, (repeats + 1) / 2);
    if (contaminated) vals.addAll(dirty);
    List<Double> sorted = new ArrayList<>(vals);
    Collections.sort(sorted);
    int m = sorted.size();
    double median = m % 2 == 1 ? sorted.get(m / 2) : (sorted.get(m / 2 - 1) + sorted.get(m / 2)) / 2;
    StringBuilder sb = new StringBuilder("{\"workload\": ").append(str(workload)).append(", \"case\": ").append(str(c))
        .append(", \"side\": \"torch210\", \"threads\": ").append(threads)
        .append(", \"metric\": \"latency_ms\", \"unit\": \"ms/call\", \"lower_is_better\": true, \"median\": ").append(median)
        .append(", \"min\": ").append(sorted.getFirst()).append(", \"max\": ").append(sorted.getLast())
        .append(", \"repeats\": ").append(m).append(", \"calls_per_repeat\": ").append(k)
        .append(", \"discarded_repeats\": ").append(dirty.size()).append(", \"quiet_wait_s\": ")
        .append(Math.round(waited * 100) / 100.0);
    if (contaminated) sb.append(", \"contaminated\": true");
    sb.append(", \"values\": ").append(vals).append(", \"peer\": \"torch2.10-javacpp\"}");
    System.out.println(sb);
    System.out.flush();
    System.err.printf(Locale.ROOT, "%-16s %-40s thr=%d median=%10.3f  min=%10.3f  max=%10.3f  ms/call%s%n", workload, c,
        threads, median, sorted.getFirst(), sorted.getLast(), dirty.isEmpty() ? "" : "  [discarded " + dirty.size() + " busy repeats]");
  }

  /** {all CPUs' busy seconds (/proc/stat), this process's CPU seconds}: their difference is other processes' time. */
  static double[] cpu() {
    double busy = 0;
    try {
      String[] f = Files.readAllLines(Path.of("/proc/stat")).getFirst().trim().split("\\s+");
      busy = (Long.parseLong(f[1]) + Long.parseLong(f[2]) + Long.parseLong(f[3]) + Long.parseLong(f[6])
          + Long.parseLong(f[7])) / 100.0;  // USER_HZ: 100 on Linux
    } catch (Exception e) {
      busy = 0;
    }
    double own = ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean()).getProcessCpuTime() / 1e9;
    return new double[] {busy, own};
  }

  /** Waits (at most max seconds) until other processes use less than --foreign-max CPUs over 0.5 s; the time waited. */
  static double waitQuiet(double max) {
    double t0 = now();
    while (now() - t0 < max) {
      double[] a = cpu();
      double t = now();
      try {
        Thread.sleep(500);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        break;
      }
      double[] b = cpu();
      if (((b[0] - a[0]) - (b[1] - a[1])) / (now() - t) < foreignMax) break;
    }
    return now() - t0;
  }

  static String str(String s) {
    return s == null ? "null" : "\"" + s.replace("\\", "\\\\").replace("\"", "\\\"") + "\"";
  }

  /** The core type the loaded OpenBLAS chose (openblas_get_corename), or null. */
  static String openblasCore() {
    try {
      for (String line : Files.readAllLines(Path.of("/proc/self/maps"))) {
        int i = line.indexOf('/');
        if (i < 0 || !line.substring(i).matches(".*/libopenblas[^/]*\\.so[^/]*")) continue;
        SymbolLookup lk = SymbolLookup.libraryLookup(Path.of(line.substring(i)), Arena.global());
        var fn = lk.find("openblas_get_corename").orElse(null);
        if (fn == null) return null;
        MemorySegment s = (MemorySegment) Linker.nativeLinker().downcallHandle(fn, FunctionDescriptor.of(ValueLayout.ADDRESS))
            .invoke();
        return s.reinterpret(256).getString(0);
      }
    } catch (Throwable e) {
      return null;
    }
    return null;
  }
}
