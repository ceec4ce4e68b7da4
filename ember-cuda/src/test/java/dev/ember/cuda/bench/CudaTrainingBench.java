package dev.ember.cuda.bench;

import dev.ember.amp.Autocast;
import dev.ember.cuda.runtime.CudaContext;
import dev.ember.nn.Embedding;
import dev.ember.nn.Linear;
import dev.ember.nn.Models;
import dev.ember.nn.Module;
import dev.ember.nn.ReLU;
import dev.ember.nn.Sequential;
import dev.ember.nn.Transformer;
import dev.ember.nn.TransformerEncoder;
import dev.ember.nn.TransformerEncoderLayer;
import dev.ember.nn.loss.CrossEntropyLoss;
import dev.ember.optim.Adam;
import dev.ember.optim.AdamW;
import dev.ember.optim.Optimizer;
import dev.ember.optim.SGD;
import dev.ember.cuda.runtime.CudaSettings;
import dev.ember.tensor.DType;
import dev.ember.tensor.Device;
import dev.ember.tensor.Generator;
import dev.ember.tensor.MemoryScope;
import dev.ember.tensor.Tensor;
import java.io.PrintStream;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;

/**
 * {@code java ... dev.ember.cuda.bench.CudaTrainingBench [device] [seconds]}: Ember's training rows of
 * {@code bench/cuda/torch_peer.py}, one JSON object per line, after {@link CudaBench}'s in {@code bench.txt}:
 * samples/s (tokens/s for the transformer) of a full step ({@code zeroGrad; forward; loss; backward; step}) of the
 * CPU suite's workloads (ember-bench's {@code TrainingCases}, the models copied from there) with the model and data
 * on {@code device} (default {@code cuda}), in float32 and under BF16 autocast (forward and loss in the scope, as
 * the peer's {@code torch.autocast}; F32 master weights). Warm-up as the CPU suite's (at
 * least 3 steps and 1 s, so the JIT has compiled the step; one step when a step is slow), then steps for about
 * {@code seconds} (1) between two device synchronisations.
 *
 * <p>It lives in ember-cuda's test tree because it needs ember-nn, which the backend itself does not depend on.
 */
public final class CudaTrainingBench {
  /** A whole run stops measuring (and says so) after this long, so that a slow path cannot eat the GPU time. */
  static final double BUDGET_SECONDS = 200;
  static final double WARMUP_SECONDS = 1.0;

  private CudaTrainingBench() {}

  /** One measured configuration: its names, the units one step processes, and how to build its step. */
  record Workload(String workload, String kase, int batch, int units, String metric, String optimizer,
      Function<DType, Runnable> make) {}

  /** The precisions measured, by the peer's names: float32, and BF16 autocast (null: no autocast). */
  static final Map<String, DType> PRECISIONS = precisions();

  private static Map<String, DType> precisions() {
    Map<String, DType> m = new LinkedHashMap<>();
    m.put("f32", null);
    m.put("bf16", DType.BF16);
    return m;
  }

  public static void main(String[] args) {
    Device device = Device.parse(args.length > 0 ? args[0] : "cuda");
    double seconds = args.length > 1 ? Double.parseDouble(args[1]) : 1.0;
    System.exit(run(System.out, device, seconds, false, args.length > 2 ? args[2] : ""));
  }

  /**
   * Measures every workload whose name starts with one of {@code only} (comma-separated; empty: all) on {@code
   * device}; {@code quick} shrinks the seed MLPs to width 64 (a test of the bench itself). Returns the exit status:
   * 0, or 1 when a workload failed.
   */
  static int run(PrintStream out, Device device, double seconds, boolean quick, String only) {
    if (!device.isAvailable()) {
      out.println(CudaBench.json(Map.of("skipped", "training: device " + device + " is not available")));
      return 0;
    }
    boolean ok = true;
    long deadline = System.nanoTime() + (long) (BUDGET_SECONDS * 1e9);
    for (Workload w : workloads(device, quick)) {
      if (!selected(w.workload(), only)) continue;
      for (Map.Entry<String, DType> p : PRECISIONS.entrySet()) {
        // with cuDNN switched off (-Dember.cuda.cudnn=false) the convolutions run on im2col + cuBLASLt: its own case
        Map<String, Object> rec = CudaBench.record(w.workload(), w.kase() + " " + p.getKey()
            + (CudaSettings.cudnn() ? "" : " im2col"));
        try {
          if (System.nanoTime() > deadline) {
            throw new IllegalStateException("not run: the training bench's " + BUDGET_SECONDS + " s are spent");
          }
          rec.putAll(measure(w, p.getKey(), p.getValue(), device, seconds));
        } catch (RuntimeException | OutOfMemoryError e) {
          rec.put("error", e.toString());
          e.printStackTrace();
          ok = false;
        }
        out.println(CudaBench.json(rec));
      }
    }
    return ok ? 0 : 1;
  }

  static boolean selected(String workload, String only) {
    if (only.isBlank()) return true;
    for (String p : only.split(",")) {
      if (!p.isBlank() && workload.startsWith(p.trim())) return true;
    }
    return false;
  }

  static Map<String, Object> measure(Workload w, String precision, DType autocast, Device device, double seconds) {
    Runnable step = w.make().apply(autocast);
    // the first step compiles the workload's kernels (NVRTC, seconds on a fresh machine) and loads its code:
    // it is not part of the warm-up whose pace sizes the timed run
    step.run();
    synchronize(device);
    long t0 = System.nanoTime();
    int warm = 0;
    // at least 3 steps and WARMUP_SECONDS (less when timing less), but one step only once 2 s have gone (a slow path)
    while ((warm < 3 || elapsed(t0) < Math.min(WARMUP_SECONDS, seconds)) && !(warm >= 1 && elapsed(t0) > 2)) {
      step.run();
      warm++;
      if (warm == 3 || warm % 5 == 0) synchronize(device);
    }
    synchronize(device);
    double perStep = elapsed(t0) / warm;
    int steps = perStep >= seconds ? 1 : (int) Math.max(3, Math.ceil(seconds / perStep));
    long t = System.nanoTime();
    for (int i = 0; i < steps; i++) step.run();
    synchronize(device);
    double secs = elapsed(t);
    Map<String, Object> rec = new LinkedHashMap<>();
    rec.put("batch", w.batch());
    rec.put("precision", precision);
    rec.put("optimizer", w.optimizer());
    rec.put("metric", w.metric());
    rec.put("value", w.units() * steps / secs);
    rec.put("steps", steps);
    rec.put("seconds", secs);
    rec.put("ms_per_step", 1e3 * secs / steps);
    rec.put("warmup_steps", warm);
    rec.put("device", device.toString());
    return rec;
  }

  private static double elapsed(long t0) {
    return (System.nanoTime() - t0) / 1e9;
  }

  /** Waits for the device's queued work (every stream of the context); the CPU computes synchronously. */
  static void synchronize(Device device) {
    if (device.type().equals("cuda")) {
      CudaContext ctx = CudaContext.of(device.index());
      ctx.makeCurrent();
      ctx.driver().synchronize();
    }
  }

  // ---- the workloads of ember-bench's TrainingCases (the CPU suite), as torch_peer.py runs them ----

  static List<Workload> workloads(Device device, boolean quick) {
    List<Workload> out = new ArrayList<>();
    for (int b : new int[] {32, 128}) {
      out.add(new Workload("mlp_mnist", "train b=" + b, b, b, "samples/s", "SGD(lr=0.01)", ac -> {
        Generator g = new Generator(0);
        Module model = new Sequential(new Linear(784, 128, true, g), new ReLU(), new Linear(128, 10, true, g));
        model.to(device);
        return classifierStep(model, new SGD(model.parameters(), 0.01), batches(device, g, 8, 10, b, 784), ac);
      }));
    }
    String[][] seeds = {{"small", "512"}, {"medium", "2048"}, {"large", "6656"}};
    for (String[] s : seeds) {
      int h = quick ? 64 : Integer.parseInt(s[1]);
      for (int b : new int[] {32, 128}) {
        for (String o : new String[] {"sgd", "adam"}) {
          out.add(new Workload("seed_" + s[0], "train b=" + b + " " + o, b, b, "samples/s", describe(o), ac -> {
            Generator g = new Generator(0);
            Module model = new Sequential(new Linear(1024, h, true, g), new ReLU(), new Linear(h, h, true, g),
                new ReLU(), new Linear(h, h, true, g), new ReLU(), new Linear(h, 10, true, g));
            model.to(device);
            return classifierStep(model, optimizer(o, model), batches(device, g, h == 6656 ? 2 : 8, 10, b, 1024), ac);
          }));
        }
      }
    }
    out.add(new Workload("lenet", "train b=64 adam", 64, 64, "samples/s", describe("adam"), ac -> {
      Generator.manualSeed(0);
      Module model = Models.lenet5(10);
      model.to(device);
      return classifierStep(model, new Adam(model.parameters(), 1e-3),
          batches(device, new Generator(0), 8, 10, 64, 1, 28, 28), ac);
    }));
    out.add(new Workload("convnet", "train b=64 sgd-mom", 64, 64, "samples/s", describe("sgd"), ac -> {
      Generator.manualSeed(0);
      Module model = Models.convnet(3, 32, 10);
      model.train();
      model.to(device);
      return classifierStep(model, optimizer("sgd", model), batches(device, new Generator(0), 8, 10, 64, 3, 32, 32),
          ac);
    }));
    out.add(new Workload("transformer", "train b=16 T=128 adamw", 16, 16 * 128, "tokens/s", describe("adamw"),
        ac -> transformer(device, ac)));
    return out;
  }

  static String describe(String optimizer) {
    return switch (optimizer) {
      case "sgd" -> "SGD(lr=0.01, momentum=0.9)";
      case "adam" -> "Adam(lr=1e-3)";
      case "adamw" -> "AdamW(lr=1e-3, weight_decay=0.01)";
      default -> throw new IllegalArgumentException("CudaTrainingBench: unknown optimizer " + optimizer);
    };
  }

  static Optimizer optimizer(String name, Module model) {
    return switch (name) {
      case "sgd" -> new SGD(model.parameters(), Map.of("lr", 0.01, "momentum", 0.9));
      case "adam" -> new Adam(model.parameters(), 1e-3);
      case "adamw" -> new AdamW(model.parameters(), Map.of("lr", 1e-3, "weight_decay", 0.01));
      default -> throw new IllegalArgumentException("CudaTrainingBench: unknown optimizer " + name);
    };
  }

  /** {@code count} batches of {@code batch} standard-normal inputs of {@code shape} and uniform labels, on device. */
  static Tensor[][] batches(Device device, Generator g, int count, int classes, int batch, int... shape) {
    int[] full = new int[shape.length + 1];
    full[0] = batch;
    System.arraycopy(shape, 0, full, 1, shape.length);
    Tensor[][] out = new Tensor[count][];
    for (int i = 0; i < count; i++) {
      out[i] = new Tensor[] {Tensor.randn(g, full).to(device), Tensor.randint(g, 0, classes, batch).to(device)};
    }
    return out;
  }

  /**
   * One step over the next batch, forward and loss under autocast to {@code autocast} (none when null); the step's
   * temporaries go back to the pool, as the Trainer does.
   */
  static Runnable classifierStep(Module model, Optimizer opt, Tensor[][] data, DType autocast) {
    CrossEntropyLoss loss = new CrossEntropyLoss();
    int[] i = {0};
    return () -> {
      Tensor[] d = data[i[0]++ % data.length];
      try (MemoryScope step = MemoryScope.open()) {
        opt.zeroGrad();
        Tensor l;
        try (Autocast ac = autocast == null ? Autocast.disable() : Autocast.enable(autocast)) {
          l = loss.forward(model.call(d[0]), d[1]);
        }
        l.backward();
        opt.step();
      }
    };
  }

  static Runnable transformer(Device device, DType autocast) {
    int b = 16;
    int t = 128;
    int v = 256;
    Generator g = new Generator(0);
    TinyLm model = new TinyLm(v, 256, 4, 1024, 2, g);
    model.train();
    model.to(device);
    Optimizer opt = optimizer("adamw", model);
    CrossEntropyLoss loss = new CrossEntropyLoss();
    Tensor mask = Transformer.generateSquareSubsequentMask(t).to(device);
    Tensor[] xs = new Tensor[8];
    Tensor[] ys = new Tensor[8];
    for (int i = 0; i < 8; i++) {
      Tensor s = Tensor.randint(g, 0, v, b, t + 1);
      xs[i] = s.narrow(1, 0, t).contiguous().to(device);
      ys[i] = s.narrow(1, 1, t).contiguous().reshape(-1).to(device);
    }
    int[] i = {0};
    return () -> {
      int k = i[0]++ % xs.length;
      try (MemoryScope step = MemoryScope.open()) {
        opt.zeroGrad();
        Tensor l;
        try (Autocast ac = autocast == null ? Autocast.disable() : Autocast.enable(autocast)) {
          l = loss.forward(model.forward(xs[k], mask).reshape(-1, v), ys[k]);
        }
        l.backward();
        opt.step();
      }
    };
  }

  /** Embedding, a post-norm TransformerEncoder (batch first, no dropout) and a linear head: the peer's TinyLM. */
  static final class TinyLm extends Module {
    private final Embedding emb;
    private final TransformerEncoder enc;
    private final Linear head;

    TinyLm(int vocab, int d, int nhead, int ff, int layers, Generator g) {
      emb = registerModule("emb", new Embedding(vocab, d));
      enc = registerModule("enc", new TransformerEncoder(
          new TransformerEncoderLayer(d, nhead, ff, 0.0, "relu", 1e-5, true, false, true, g), layers));
      head = registerModule("head", new Linear(d, vocab, true, g));
    }

    @Override
    public String name() {
      return "TinyLM";
    }

    @Override
    public Tensor forward(Tensor x) {
      return forward(x, null);
    }

    Tensor forward(Tensor x, Tensor mask) {
      return head.call(enc.forward(emb.call(x), mask, null, false));
    }
  }
}
