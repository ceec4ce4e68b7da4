package dev.ember.bench;

import dev.ember.autograd.Grad;
import dev.ember.nn.AdaptiveAvgPool2d;
import dev.ember.nn.BatchNorm2d;
import dev.ember.nn.Conv2d;
import dev.ember.nn.ConvTranspose2d;
import dev.ember.nn.Embedding;
import dev.ember.nn.Flatten;
import dev.ember.nn.GELU;
import dev.ember.nn.GRU;
import dev.ember.nn.GroupNorm;
import dev.ember.nn.LSTM;
import dev.ember.nn.LayerNorm;
import dev.ember.nn.Linear;
import dev.ember.nn.MaxPool2d;
import dev.ember.nn.Module;
import dev.ember.nn.ReLU;
import dev.ember.nn.Sequential;
import dev.ember.nn.TransformerEncoderLayer;
import dev.ember.nn.Upsample;
import dev.ember.nn.functional.F;
import dev.ember.optim.Adadelta;
import dev.ember.optim.Adagrad;
import dev.ember.optim.Adam;
import dev.ember.optim.AdamW;
import dev.ember.optim.Adamax;
import dev.ember.optim.GradClip;
import dev.ember.optim.LAMB;
import dev.ember.optim.Lion;
import dev.ember.optim.NAdam;
import dev.ember.optim.Optimizer;
import dev.ember.optim.RAdam;
import dev.ember.optim.RMSprop;
import dev.ember.optim.SGD;
import dev.ember.tensor.DType;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import java.nio.ByteBuffer;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.function.Function;

/**
 * Trains a handful of small models for a few steps from fixed seeds and prints, per run, a SHA-256 of every
 * parameter's float bits and the last loss. A refactoring that claims "no behaviour change" runs this before and
 * after, at 1 and 2 threads ({@code -Dember.threads=N}, see {@code bench/checksums.sh}): every line must be equal.
 * The runs together cover linear (with the deferred weight gradient), conv, transposed and depthwise conv,
 * pooling, upsampling, batch/group/layer norm, attention, LSTM/GRU, embedding, dropout and every optimizer
 * whose update has a fused kernel.
 */
public final class TrainChecksums {
  private TrainChecksums() {}

  private record Run(String name, Function<Generator, Module> model, Function<List<Tensor>, Optimizer> optimizer,
      Function<Generator, Tensor> input, int classes, boolean clip) {}

  public static void main(String[] args) throws Throwable {
    BenchArgs.main(args, TrainChecksums::runMain);
  }

  private static void runMain(String[] args) {
    int steps = args.length > 0 ? BenchArgs.positiveInt("TrainChecksums", "STEPS", args[0]) : 6;
    List<Run> runs = List.of(
        new Run("mlp-adam", g -> mlp(g), p -> new Adam(p, 1e-3), g -> Tensor.randn(g, 64, 784), 10, false),
        new Run("mlp-adamw", g -> mlp(g), p -> new AdamW(p, 1e-3), g -> Tensor.randn(g, 64, 784), 10, true),
        new Run("mlp-sgd-nesterov", g -> mlp(g),
            p -> new SGD(p, Map.of("lr", 0.05, "momentum", 0.9, "nesterov", true, "weight_decay", 1e-4)),
            g -> Tensor.randn(g, 64, 784), 10, false),
        new Run("mlp-rmsprop", g -> mlp(g), p -> new RMSprop(p, Map.of("lr", 1e-3, "momentum", 0.5, "centered", true)),
            g -> Tensor.randn(g, 32, 784), 10, false),
        new Run("mlp-lamb", g -> mlp(g), p -> new LAMB(p, 1e-3), g -> Tensor.randn(g, 32, 784), 10, false),
        new Run("mlp-lion", g -> mlp(g), p -> new Lion(p, 1e-4), g -> Tensor.randn(g, 32, 784), 10, false),
        new Run("mlp-adagrad", g -> mlp(g), p -> new Adagrad(p, 1e-2), g -> Tensor.randn(g, 32, 784), 10, false),
        new Run("mlp-adadelta", g -> mlp(g), p -> new Adadelta(p, 1.0), g -> Tensor.randn(g, 32, 784), 10, false),
        new Run("mlp-adamax", g -> mlp(g), p -> new Adamax(p, 2e-3), g -> Tensor.randn(g, 32, 784), 10, false),
        new Run("mlp-nadam", g -> mlp(g), p -> new NAdam(p, 2e-3), g -> Tensor.randn(g, 32, 784), 10, false),
        new Run("mlp-radam", g -> mlp(g), p -> new RAdam(p, 1e-3), g -> Tensor.randn(g, 32, 784), 10, false),
        new Run("cnn-sgd", g -> cnn(g), p -> new SGD(p, Map.of("lr", 0.05, "momentum", 0.9)),
            g -> Tensor.randn(g, 16, 1, 28, 28), 10, false),
        new Run("cnn-adam", g -> cnn(g), p -> new Adam(p, 1e-3), g -> Tensor.randn(g, 8, 1, 28, 28), 10, true),
        new Run("transformer-adamw", g -> transformer(g), p -> new AdamW(p, 1e-3),
            g -> Tensor.randint(g, 0, 50, 8, 12), 5, true),
        new Run("rnn-adam", g -> rnn(g), p -> new Adam(p, 1e-3), g -> Tensor.randn(g, 8, 10, 16), 4, false));
    for (Run r : runs) System.out.println(r.name + " " + checksum(r, steps));
  }

  private static String checksum(Run r, int steps) {
    Generator.manualSeed(1234); // modules built without a generator and dropout draw from the global one
    Generator g = new Generator(1234);
    Module model = r.model.apply(g);
    model.train();
    Optimizer opt = r.optimizer.apply(model.parameters());
    Tensor x = r.input.apply(g);
    Tensor y = Tensor.randint(g, 0, r.classes, x.size(0));
    double last = Double.NaN;
    for (int s = 0; s < steps; s++) {
      opt.zeroGrad();
      Tensor loss = F.crossEntropy(model.forward(x), y);
      loss.backward();
      if (r.clip) GradClip.clipGradNorm(model.parameters(), 1.0);
      opt.step();
      last = loss.item();
    }
    return digest(model.parameters()) + " loss=" + last;
  }

  private static String digest(List<Tensor> params) {
    try {
      MessageDigest md = MessageDigest.getInstance("SHA-256");
      try (Grad ignored = Grad.off()) {
        for (Tensor p : params) {
          float[] v = p.detach().to(DType.F32).toFloatArray();
          ByteBuffer b = ByteBuffer.allocate(4 * v.length);
          for (float f : v) b.putInt(Float.floatToRawIntBits(f));
          md.update(b.array());
        }
      }
      return HexFormat.of().formatHex(md.digest()).substring(0, 16);
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }

  private static Module mlp(Generator g) {
    return new Sequential(new Linear(784, 256, true, g), new ReLU(), new Linear(256, 128, true, g), new GELU(),
        new Linear(128, 10, true, g));
  }

  private static Module cnn(Generator g) {
    return new Sequential(new Conv2d(1, 8, 3, 1, 1), new BatchNorm2d(8), new ReLU(), new MaxPool2d(2),
        new Conv2d(8, 8, new int[] {3, 3}, new int[] {1, 1}, new int[] {1, 1}, new int[] {1, 1}, 8, true, "zeros", g),
        new GroupNorm(2, 8), new ReLU(), new ConvTranspose2d(8, 4, 2, 2, 0), new Upsample(0.5, "bilinear"),
        new AdaptiveAvgPool2d(4), new Flatten(), new Linear(64, 10, true, g));
  }

  private static Module transformer(Generator g) {
    Embedding emb = new Embedding(50, 32);
    TransformerEncoderLayer layer = new TransformerEncoderLayer(32, 4, 64, 0.1, "gelu", 1e-5, true, false, true, g);
    LayerNorm norm = new LayerNorm(32);
    Linear head = new Linear(32, 5, true, g);
    return new Module() {
      {
        registerModule("emb", emb);
        registerModule("layer", layer);
        registerModule("norm", norm);
        registerModule("head", head);
      }

      @Override
      public Tensor forward(Tensor tokens) {
        return head.forward(norm.forward(layer.forward(emb.forward(tokens))).mean(1, false));
      }
    };
  }

  private static Module rnn(Generator g) {
    LSTM lstm = new LSTM(16, 24, 1, true, true, 0.0, false, g);
    GRU gru = new GRU(24, 24, 1, true, true, 0.0, false, g);
    Linear head = new Linear(24, 4, true, g);
    return new Module() {
      {
        registerModule("lstm", lstm);
        registerModule("gru", gru);
        registerModule("head", head);
      }

      @Override
      public Tensor forward(Tensor x) {
        Tensor h = gru.forward(lstm.forward(x));
        return head.forward(h.select(1, h.size(1) - 1));
      }
    };
  }
}
