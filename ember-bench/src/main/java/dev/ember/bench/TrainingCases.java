package dev.ember.bench;

import dev.ember.autograd.Grad;
import dev.ember.nn.Embedding;
import dev.ember.nn.Linear;
import dev.ember.nn.Models;
import dev.ember.nn.Module;
import dev.ember.nn.Sequential;
import dev.ember.nn.Transformer;
import dev.ember.nn.TransformerEncoder;
import dev.ember.nn.TransformerEncoderLayer;
import dev.ember.nn.loss.CrossEntropyLoss;
import dev.ember.optim.Adam;
import dev.ember.optim.AdamW;
import dev.ember.optim.Optimizer;
import dev.ember.optim.SGD;
import dev.ember.tensor.Generator;
import dev.ember.tensor.MemoryScope;
import dev.ember.tensor.Tensor;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;

/**
 * The {@code training} category: samples/s (tokens/s for the transformer) of one full training
 * step, {@code zeroGrad; forward; loss; backward; step}, through ember-nn and ember-optim as a user
 * writes it. The workloads, names and settings are exactly those of the shared PyTorch peer
 * ({@code ../shared/peers/pytorch_bench.py}): same layer sizes, batch sizes, optimizer
 * hyper-parameters, 8 pre-made random batches cycled (2 for the large MLP), labels uniform over
 * the classes. The seed MLPs are also measured on the peers' schedule ({@link #seedCase}): the same steps of the
 * same run.
 *
 * <ul>
 *   <li>mlp_mnist: 784-128-10 ReLU, SGD(lr=0.01), batch 32 and 128, plus batch-1 inference latency
 *       in eval mode without the tape;
 *   <li>seed_small / seed_medium / seed_large: 1024-h-h-h-10 ReLU with h = 512, 2048, 6656, at
 *       batch 32 and 128, with SGD(lr=0.01, momentum=0.9), Adam(lr=1e-3) and AdamW(lr=1e-3,
 *       weight_decay=0.01);
 *   <li>lenet: LeNet-5 on 1x28x28, batch 64, Adam(lr=1e-3);
 *   <li>convnet: conv 32-32-pool-64-64-pool with batch norm, fc 256, 10 on 3x32x32, batch 64,
 *       SGD(lr=0.01, momentum=0.9);
 *   <li>transformer: embedding 256 -> 2 post-norm encoder layers (d_model 256, 4 heads, ff 1024,
 *       ReLU, no dropout) with a causal mask -> linear 256, batch 16, sequence 128, AdamW(lr=1e-3),
 *       in tokens/s.
 * </ul>
 *
 * <p>Models are built lazily (the large MLP holds ~95M parameters plus optimizer state), one case
 * at a time: {@link Compare} drops each case after measuring it.
 */
final class TrainingCases {
  static final int[] BATCHES = {32, 128};
  static final String[] OPTIMS = {"sgd", "adam", "adamw"};
  static final String[][] SEEDS = {{"small", "512"}, {"medium", "2048"}, {"large", "6656"}};
  private static volatile Object sink;

  private TrainingCases() {}

  static List<BenchCase> cases() {
    List<BenchCase> out = new ArrayList<>();
    for (int b : BATCHES) {
      out.add(lazy("mlp_mnist", "train b=" + b, "samples/s", b, () -> mlpMnist(b)));
    }
    out.add(BenchCase.latency("mlp_mnist", "infer b=1 latency", "latency_us", "us/call (lower is better)", 1e6,
        inference()));
    for (String[] s : SEEDS) {
      int h = Integer.parseInt(s[1]);
      for (int b : BATCHES) {
        for (String o : OPTIMS) {
          out.add(seedCase(s[0], h, b, o));
        }
      }
    }
    out.add(lazy("lenet", "train b=64 adam", "samples/s", 64, TrainingCases::lenet));
    out.add(lazy("convnet", "train b=64 sgd-mom", "samples/s", 64, TrainingCases::convnet));
    out.add(lazy("transformer", "train b=16 T=128 adamw", "tokens/s", 16 * 128, TrainingCases::transformer));
    return out;
  }

  /** Parameter count of a workload's model (for model-FLOPs utilisation), or -1 if not an MLP. */
  static long mlpParams(String workload) {
    return switch (workload) {
      case "mlp_mnist" -> 784L * 128 + 128 + 128L * 10 + 10;
      case "seed_small" -> seedParams(512);
      case "seed_medium" -> seedParams(2048);
      case "seed_large" -> seedParams(6656);
      default -> -1;
    };
  }

  static long seedParams(long h) {
    return 1024 * h + h + 2 * (h * h + h) + h * 10 + 10;
  }

  /**
   * pytorch_bench.py's {@code bench_seed} schedule (torch210's {@code benchSeed} is the same): the warm-up is its
   * default {@code --warmup} of 1 s (at least 2 steps), the repeats its default {@code --target}; seed_large is
   * measured from its third step, {@code warmup=0.0} and {@code target=0.3}. Neither runner passes them.
   */
  static final double PEER_WARMUP_S = 1.0;
  static final double LARGE_WARMUP_S = 0.0;
  static final double LARGE_TARGET_S = 0.3;

  /**
   * A seed MLP case on the peers' schedule ({@link BenchCase.PeerSchedule}): the model fits its few cycled batches
   * within a few hundred steps, after which the gradients of dead units are 0 and Adam's first moments (and SGD's
   * momentum) decay through the subnormal floats, so the steps measured must be the same steps as the peer's. The
   * JIT warms up on a throwaway model; a fresh model then runs the peer's warm-up, calibration and repeats.
   */
  static BenchCase seedCase(String size, int h, int batch, String optim) {
    boolean large = "large".equals(size);
    BenchCase.PeerSchedule schedule = new BenchCase.PeerSchedule(large ? LARGE_WARMUP_S : PEER_WARMUP_S,
        large ? LARGE_TARGET_S : Double.NaN, () -> seed(h, batch, optim));
    return BenchCase.scheduled("seed_" + size, "train b=" + batch + " " + optim, "samples/s", batch,
        onFirstCall(schedule.make()), schedule);
  }

  /** A throughput case whose step (model, optimizer, data) is built on its first call. */
  private static BenchCase lazy(String workload, String name, String unit, int unitsPerStep, Supplier<Runnable> make) {
    return BenchCase.throughput(workload, name, unit, unit, unitsPerStep, onFirstCall(make));
  }

  /** Runs the Runnable {@code make} returns, building it on the first call (cases are listed before they run). */
  private static Runnable onFirstCall(Supplier<Runnable> make) {
    return new Runnable() {
      private Runnable step;

      @Override
      public void run() {
        if (step == null) step = make.get();
        step.run();
      }
    };
  }

  /** The peer's mlp_mnist model, 784-128-10 with ReLU, initialised from {@code g}. */
  private static Sequential mnistMlp(Generator g) {
    return new Sequential(new Linear(784, 128, true, g), new dev.ember.nn.ReLU(), new Linear(128, 10, true, g));
  }

  static Runnable mlpMnist(int batch) {
    Generator g = new Generator(0);
    Sequential model = mnistMlp(g);
    return classifierStep(model, new SGD(model.parameters(), 0.01), batches(g, 8, 10, batch, 784));
  }

  static Runnable seed(int h, int batch, String optim) {
    Generator g = new Generator(0);
    Sequential model = seedModel(h, g);
    return classifierStep(model, optimizer(optim, model), batches(g, h == 6656 ? 2 : 8, 10, batch, 1024));
  }

  /** The peer's seed MLP 1024-h-h-h-10 with ReLU, initialised from {@code g}. */
  static Sequential seedModel(int h, Generator g) {
    return new Sequential(new Linear(1024, h, true, g), new dev.ember.nn.ReLU(), new Linear(h, h, true, g),
        new dev.ember.nn.ReLU(), new Linear(h, h, true, g), new dev.ember.nn.ReLU(), new Linear(h, 10, true, g));
  }

  static Optimizer optimizer(String name, Module model) {
    return switch (name) {
      case "sgd" -> new SGD(model.parameters(), Map.of("lr", 0.01, "momentum", 0.9));
      case "adam" -> new Adam(model.parameters(), 1e-3);
      case "adamw" -> new AdamW(model.parameters(), Map.of("lr", 1e-3, "weight_decay", 0.01));
      default -> throw new IllegalArgumentException("unknown optimizer " + name);
    };
  }

  static Runnable lenet() {
    Generator.manualSeed(0);
    Module model = Models.lenet5(10);
    return classifierStep(model, new Adam(model.parameters(), 1e-3), batches(new Generator(0), 8, 10, 64, 1, 28, 28));
  }

  static Runnable convnet() {
    Generator.manualSeed(0);
    Module model = Models.convnet(3, 32, 10);
    model.train();
    return classifierStep(model, new SGD(model.parameters(), Map.of("lr", 0.01, "momentum", 0.9)),
        batches(new Generator(0), 8, 10, 64, 3, 32, 32));
  }

  static Runnable transformer() {
    return transformerStep(null).step();
  }

  /** A training workload with its model and optimizer exposed (for {@link MemoryProbe}'s checkpointing runs). */
  record TrainStep(Module model, Optimizer optimizer, Runnable step) {}

  /**
   * The transformer case's model, optimizer and step; {@code afterForward} (may be null) runs in each step between
   * the forward and the loss, inside the step's scope.
   */
  static TrainStep transformerStep(Runnable afterForward) {
    int b = 16;
    int t = 128;
    int v = 256;
    Generator g = new Generator(0);
    TinyLm model = new TinyLm(v, 256, 4, 1024, 2, g);
    model.train();
    Optimizer opt = new AdamW(model.parameters(), Map.of("lr", 1e-3, "weight_decay", 0.01));
    CrossEntropyLoss loss = new CrossEntropyLoss();
    Tensor mask = Transformer.generateSquareSubsequentMask(t);
    Tensor[] xs = new Tensor[8];
    Tensor[] ys = new Tensor[8];
    for (int i = 0; i < 8; i++) {
      Tensor s = Tensor.randint(g, 0, v, b, t + 1);
      xs[i] = s.narrow(1, 0, t).contiguous();
      ys[i] = s.narrow(1, 1, t).contiguous().reshape(-1);
    }
    int[] i = {0};
    return new TrainStep(model, opt, () -> {
      int k = i[0]++ % xs.length;
      try (MemoryScope step = MemoryScope.open()) {
        opt.zeroGrad();
        Tensor logits = model.forward(xs[k], mask);
        if (afterForward != null) afterForward.run();
        Tensor l = loss.forward(logits.reshape(-1, v), ys[k]);
        l.backward();
        opt.step();
        sink = l.item();
      }
    });
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

  private static Runnable inference() {
    return onFirstCall(() -> {
      Generator g = new Generator(0);
      Sequential model = mnistMlp(g);
      model.eval();
      Tensor x = Tensor.randn(g, 1, 784);
      return () -> {
        try (Grad ignored = Grad.off(); MemoryScope call = MemoryScope.open()) {
          sink = model.call(x);
        }
      };
    });
  }

  /** {@code count} batches of {@code batch} inputs of {@code shape} (standard normal) with uniform labels. */
  private static Tensor[][] batches(Generator g, int count, int classes, int batch, int... shape) {
    int[] full = new int[shape.length + 1];
    full[0] = batch;
    System.arraycopy(shape, 0, full, 1, shape.length);
    Tensor[][] out = new Tensor[count][];
    for (int i = 0; i < count; i++) out[i] = new Tensor[] {Tensor.randn(g, full), Tensor.randint(g, 0, classes, batch)};
    return out;
  }

  private static Runnable classifierStep(Module model, Optimizer opt, Tensor[][] data) {
    return classifierStep(model, opt, data, null);
  }

  /**
   * seed MLP {@code h} at {@code batch} with optimizer {@code optim}, its forward and loss under autocast to
   * {@code autocast} (null: F32), as the Trainer runs a BF16/F16 step.
   */
  static Runnable seed(int h, int batch, String optim, dev.ember.tensor.DType autocast) {
    Generator g = new Generator(0);
    Sequential model = seedModel(h, g);
    return classifierStep(model, optimizer(optim, model), batches(g, h == 6656 ? 2 : 8, 10, batch, 1024), autocast);
  }

  private static Runnable classifierStep(Module model, Optimizer opt, Tensor[][] data, dev.ember.tensor.DType autocast) {
    CrossEntropyLoss loss = new CrossEntropyLoss();
    int[] i = {0};
    return () -> {
      Tensor[] d = data[i[0]++ % data.length];
      try (MemoryScope step = MemoryScope.open()) { // the step's tensors back to the pool, as the Trainer does
        opt.zeroGrad();
        Tensor l;
        try (var ac = autocast == null ? dev.ember.amp.Autocast.disable() : dev.ember.amp.Autocast.enable(autocast)) {
          l = loss.forward(model.call(d[0]), d[1]);
        }
        l.backward();
        opt.step();
        sink = l.item();
      }
    };
  }
}
