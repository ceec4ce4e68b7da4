package dev.ember.bench;

import dev.ember.autograd.Grad;
import dev.ember.compile.CompiledModule;
import dev.ember.compile.Compiler;
import dev.ember.compile.TrainingStep;
import dev.ember.nn.Linear;
import dev.ember.nn.Models;
import dev.ember.nn.Module;
import dev.ember.nn.ReLU;
import dev.ember.nn.Sequential;
import dev.ember.nn.Transformer;
import dev.ember.nn.loss.CrossEntropyLoss;
import dev.ember.optim.AdamW;
import dev.ember.optim.Optimizer;
import dev.ember.optim.SGD;
import dev.ember.tensor.Generator;
import dev.ember.tensor.MemoryScope;
import dev.ember.tensor.Tensor;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.BiFunction;
import java.util.function.Supplier;

/**
 * The {@code compile} category (issue #37), mirrored by bench/peers/pytorch_compile.py: what compiling a model with
 * {@link Compiler} buys over running it eagerly. Each timed workload has an {@code eager} and a {@code compiled} case;
 * the peer reports PyTorch eager under the first name and its compiled form under the second, so the ratio column
 * compares like with like:
 * <ul>
 *   <li>{@code mlp_infer}: the mlp_mnist model (784-128-10 ReLU) at batch 1, us/batch; the peer's compiled form is
 *       TorchScript, {@code torch.jit.freeze(torch.jit.trace(model.eval(), x))};
 *   <li>{@code lenet_infer}: LeNet-5 ({@code Models.lenet5(10)}) at batch 1 and 64, likewise;
 *   <li>{@code train_step}: one training step (zero_grad, forward, loss, backward, optimizer step), ms/step, of
 *       mlp_mnist at batch 32 (SGD lr 0.01) and of the training category's transformer (TinyLM, batch 16, sequence
 *       128, causal mask, AdamW); compiled means forward, loss and backward run as one joint graph without the tape
 *       with the optimizer's update fused in ({@link TrainingStep#step(Tensor, Tensor, Optimizer)}: no gradient is
 *       stored, so there is no zero_grad); the peer runs PyTorch eager under both names (TorchScript does not
 *       train);
 *   <li>{@code compile_time}: ms from {@link Compiler#compile} to the end of the first call (the trace, which is one
 *       eager forward, and the passes) of mlp_mnist, LeNet-5, the convnet and the transformer; the peer's is the
 *       time of {@code torch.jit.freeze(torch.jit.trace(...))} (Ember only for the transformer, whose TorchScript
 *       trace is in training mode and cannot be frozen);
 *   <li>{@code kernels}: the ops of each of those graphs as traced and after the passes (Ember only).
 * </ul>
 * Inference calls run in their own {@link MemoryScope} with the tape off, steps in one scope each, as the training
 * category's.
 */
final class CompileCases {
  static final int[] LENET_BATCHES = {1, 64};
  /** The models of compile_time and kernels, in order. */
  static final List<String> MODELS = List.of("mlp_mnist", "lenet5", "convnet", "transformer");
  private static volatile Object sink;

  private CompileCases() {}

  static List<BenchCase> cases() {
    List<BenchCase> out = new ArrayList<>();
    Module mlp = mlp(new Generator(0)).eval();
    Tensor x1 = Tensor.randn(new Generator(1), 1, 784);
    out.add(infer("mlp_infer", "784-128-10 b=1 eager", mlp, x1));
    out.add(infer("mlp_infer", "784-128-10 b=1 compiled", Compiler.compile(mlp), x1));
    Module lenet = lenet();
    CompiledModule lenetCompiled = Compiler.compile(lenet);
    for (int b : LENET_BATCHES) {
      Tensor x = Tensor.randn(new Generator(1), b, 1, 28, 28);
      out.add(infer("lenet_infer", "b=" + b + " eager", lenet, x));
      out.add(infer("lenet_infer", "b=" + b + " compiled", lenetCompiled, x));
    }
    for (boolean compiled : new boolean[] {false, true}) {
      String mode = compiled ? "compiled" : "eager";
      out.add(step("mlp_mnist b=32 " + mode, () -> mlpStep(compiled)));
    }
    for (boolean compiled : new boolean[] {false, true}) {
      String mode = compiled ? "compiled" : "eager";
      out.add(step("transformer b=16 T=128 " + mode, () -> transformerStep(compiled)));
    }
    for (String model : MODELS) {
      out.add(BenchCase.probe("compile_time", model, "compile_time", "ms", true, () -> compileMillis(model)));
    }
    for (String model : MODELS) {
      out.add(BenchCase.probe("kernels", model + " traced", "kernels", "ops", true, () -> kernels(model)[0]));
      out.add(BenchCase.probe("kernels", model + " after passes", "kernels", "ops", true, () -> kernels(model)[1]));
    }
    return out;
  }

  /** The mlp_mnist model, 784-128-10 with ReLU, as the training category's (and the peer's) from {@code g}. */
  static Sequential mlp(Generator g) {
    return new Sequential(new Linear(784, 128, true, g), new ReLU(), new Linear(128, 10, true, g));
  }

  /** Models.lenet5(10) from seed 0, in eval mode. */
  static Module lenet() {
    Generator.manualSeed(0);
    return Models.lenet5(10).eval();
  }

  private static BenchCase infer(String workload, String name, Module model, Tensor x) {
    return BenchCase.latency(workload, name, "latency", "us/batch", 1e6, () -> {
      try (MemoryScope call = MemoryScope.open(); Grad ignored = Grad.off()) {
        sink = model.call(x);
      }
    });
  }

  private static BenchCase step(String name, Supplier<Runnable> make) {
    Runnable[] built = new Runnable[1]; // built on the first call: cases are listed before they run
    return BenchCase.latency("train_step", name, "step_time", "ms/step", 1e3, () -> {
      if (built[0] == null) built[0] = make.get();
      built[0].run();
    });
  }

  /**
   * What a compiled training step runs for (input, target): the loss, with the parameters' gradients written, from
   * forward, loss and backward compiled together into one graph ({@link Compiler#compileTraining}).
   */
  static BiFunction<Tensor, Tensor, Tensor> compiledStep(Module model, BiFunction<Tensor, Tensor, Tensor> lossFn) {
    return Compiler.compileTraining(model, lossFn)::run;
  }

  /** The eager step's counterpart of {@link #compiledStep}: forward, loss, backward through the tape. */
  static BiFunction<Tensor, Tensor, Tensor> eagerForward(Module model, BiFunction<Tensor, Tensor, Tensor> lossFn) {
    return (x, y) -> {
      Tensor l = lossFn.apply(model.call(x), y);
      l.backward();
      return l;
    };
  }

  /** A step of {@code model} with {@code opt} over the batches {@code data} (cycled), eager or compiled. */
  private static Runnable trainer(Module model, Optimizer opt, BiFunction<Tensor, Tensor, Tensor> lossFn,
      Tensor[][] data, boolean compiled) {
    int[] i = {0};
    if (compiled) { // forward, loss, backward and the update as one step: no gradient stored, nothing to zero
      TrainingStep fused = Compiler.compileTraining(model, lossFn);
      return () -> {
        Tensor[] d = data[i[0]++ % data.length];
        try (MemoryScope step = MemoryScope.open()) {
          sink = fused.step(d[0], d[1], opt).item();
        }
      };
    }
    BiFunction<Tensor, Tensor, Tensor> lossAndGrads = eagerForward(model, lossFn);
    return () -> {
      Tensor[] d = data[i[0]++ % data.length];
      try (MemoryScope step = MemoryScope.open()) {
        opt.zeroGrad();
        Tensor l = lossAndGrads.apply(d[0], d[1]);
        opt.step();
        sink = l.item();
      }
    };
  }

  /** The training category's mlp_mnist step at batch 32: SGD(lr 0.01), 8 batches from Generator(0). */
  static Runnable mlpStep(boolean compiled) {
    Generator g = new Generator(0);
    Sequential model = mlp(g);
    Tensor[][] data = new Tensor[8][];
    for (int k = 0; k < data.length; k++) data[k] = new Tensor[] {Tensor.randn(g, 32, 784), Tensor.randint(g, 0, 10, 32)};
    CrossEntropyLoss loss = new CrossEntropyLoss();
    return trainer(model, new SGD(model.parameters(), 0.01), loss::forward, data, compiled);
  }

  /** The training category's transformer step: TinyLM with its causal mask, batch 16, sequence 128, AdamW. */
  static Runnable transformerStep(boolean compiled) {
    int b = 16;
    int t = 128;
    int v = 256;
    Generator g = new Generator(0);
    Module model = new MaskedLm(new TrainingCases.TinyLm(v, 256, 4, 1024, 2, g), Transformer.generateSquareSubsequentMask(t));
    model.train();
    Tensor[][] data = new Tensor[8][];
    for (int k = 0; k < data.length; k++) {
      Tensor s = Tensor.randint(g, 0, v, b, t + 1);
      data[k] = new Tensor[] {s.narrow(1, 0, t).contiguous(), s.narrow(1, 1, t).contiguous().reshape(-1)};
    }
    CrossEntropyLoss loss = new CrossEntropyLoss();
    Optimizer opt = new AdamW(model.parameters(), Map.of("lr", 1e-3, "weight_decay", 0.01));
    return trainer(model, opt, (logits, y) -> loss.forward(logits.reshape(-1, v), y), data, compiled);
  }

  /** TinyLM applied with a fixed mask: a module of one input, as the compilers take. */
  static final class MaskedLm extends Module {
    private final TrainingCases.TinyLm lm;
    private final Tensor mask;

    MaskedLm(TrainingCases.TinyLm lm, Tensor mask) {
      this.lm = registerModule("lm", lm);
      this.mask = mask;
    }

    @Override
    public Tensor forward(Tensor x) {
      return lm.forward(x, mask);
    }
  }

  /** The model {@code name} of compile_time and kernels and an input for it. */
  private static Object[] modelAndInput(String name) {
    return switch (name) {
      case "mlp_mnist" -> new Object[] {mlp(new Generator(0)), Tensor.randn(new Generator(1), 32, 784)};
      case "lenet5" -> new Object[] {lenet(), Tensor.randn(new Generator(1), 64, 1, 28, 28)};
      case "convnet" -> new Object[] {CompressionCases.convnet(), Tensor.randn(new Generator(1), 64, 3, 32, 32)};
      case "transformer" -> new Object[] {new MaskedLm(new TrainingCases.TinyLm(256, 256, 4, 1024, 2, new Generator(0)),
          Transformer.generateSquareSubsequentMask(128)), Tensor.randint(new Generator(1), 0, 256, 16, 128)};
      default -> throw new IllegalArgumentException("CompileCases: unknown model " + name);
    };
  }

  /** The model compiled and called once (a trace and the passes), with the milliseconds that took. */
  private static CompiledModule compiled(String name, double[] millis) {
    Object[] mi = modelAndInput(name);
    Module model = (Module) mi[0];
    Tensor x = (Tensor) mi[1];
    try (MemoryScope call = MemoryScope.open(); Grad ignored = Grad.off()) {
      long t0 = System.nanoTime();
      CompiledModule c = Compiler.compile(model);
      sink = c.call(x);
      millis[0] = (System.nanoTime() - t0) / 1e6;
      return c;
    }
  }

  static double compileMillis(String name) {
    double[] ms = new double[1];
    compiled(name, ms);
    return ms[0];
  }

  /** The ops of model {@code name}'s graph as traced and after the passes. */
  static double[] kernels(String name) {
    CompiledModule c = compiled(name, new double[1]);
    return new double[] {c.lastTracedGraph().opCount(), c.lastGraph().opCount()};
  }
}
