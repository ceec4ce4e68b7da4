package dev.ember.cli;

import dev.ember.autograd.Grad;
import dev.ember.ops.ReduceOps;
import dev.ember.tensor.DType;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import java.io.PrintStream;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * End-to-end demo of the core API until the Trainer exists: a 2-H-H-3 MLP learns the classic
 * three-arm spiral (not linearly separable), with mini-batch SGD + momentum written as the
 * explicit loop, and reports loss and accuracy per epoch on train and held-out points.
 */
final class SpiralDemo {
  private SpiralDemo() {}

  static int run(String[] args, PrintStream out) {
    int epochs = 60;
    long seed = 7;
    int hidden = 64;
    double lr = 0.1;
    int batch = 32;
    for (int i = 0; i < args.length; i++) {
      String a = args[i];
      if (i + 1 >= args.length) throw new IllegalArgumentException("option " + a + " needs a value");
      String v = args[++i];
      switch (a) {
        case "--epochs" -> epochs = positive(a, Integer.parseInt(v));
        case "--seed" -> seed = Long.parseLong(v);
        case "--hidden" -> hidden = positive(a, Integer.parseInt(v));
        case "--lr" -> lr = Double.parseDouble(v);
        case "--batch" -> batch = positive(a, Integer.parseInt(v));
        default -> throw new IllegalArgumentException("unknown option " + a + " (see ./ember help)");
      }
    }
    Generator gen = new Generator(seed);
    Tensor[] train = spiral(gen, 600);
    Tensor[] test = spiral(gen, 300);
    List<Tensor> params = new ArrayList<>();
    Tensor w1 = param(gen, 2, hidden, params);
    Tensor b1 = bias(hidden, params);
    Tensor w2 = param(gen, hidden, hidden, params);
    Tensor b2 = bias(hidden, params);
    Tensor w3 = param(gen, hidden, 3, params);
    Tensor b3 = bias(3, params);
    List<Tensor> velocity = new ArrayList<>();
    for (Tensor p : params) velocity.add(Tensor.zerosLike(p));

    out.printf(Locale.ROOT, "ember train: MLP 2-%d-%d-3 on a 3-arm spiral (%d train / %d test points), SGD lr=%.3g momentum=0.9, batch %d%n",
        hidden, hidden, train[0].size(0), test[0].size(0), lr, batch);
    int n = train[0].size(0);
    long t0 = System.nanoTime();
    double firstLoss = Double.NaN;
    double lastLoss = Double.NaN;
    for (int epoch = 1; epoch <= epochs; epoch++) {
      Tensor perm = Tensor.randperm(gen, n);
      double lossSum = 0;
      int batches = 0;
      for (int s = 0; s < n; s += batch) {
        Tensor idx = perm.slice(0, s, Math.min(n, s + batch), 1);
        Tensor x = train[0].indexSelect(0, idx);
        Tensor y = train[1].indexSelect(0, idx);
        Tensor logits = forward(x, w1, b1, w2, b2, w3, b3);
        Tensor loss = crossEntropy(logits, y);
        for (Tensor p : params) p.setGrad(null);
        loss.backward();
        try (var ignored = Grad.off()) {
          for (int i = 0; i < params.size(); i++) {
            Tensor v = velocity.get(i);
            v.mul_(0.9).add_(params.get(i).grad());
            params.get(i).sub_(v.mul(lr));
          }
        }
        lossSum += loss.item();
        batches++;
      }
      lastLoss = lossSum / batches;
      if (epoch == 1) firstLoss = lastLoss;
      if (epoch == 1 || epoch % 10 == 0 || epoch == epochs) {
        out.printf(Locale.ROOT, "epoch %3d  loss %.4f  train acc %.1f%%  test acc %.1f%%%n", epoch, lastLoss,
            100 * accuracy(train, w1, b1, w2, b2, w3, b3), 100 * accuracy(test, w1, b1, w2, b2, w3, b3));
      }
    }
    double secs = (System.nanoTime() - t0) / 1e9;
    double testAcc = accuracy(test, w1, b1, w2, b2, w3, b3);
    out.printf(Locale.ROOT, "done in %.1f s: loss %.4f -> %.4f, test accuracy %.1f%%%n", secs, firstLoss, lastLoss,
        100 * testAcc);
    return lastLoss < firstLoss ? 0 : 1;
  }

  private static int positive(String name, int v) {
    if (v <= 0) throw new IllegalArgumentException(name + " must be positive, got " + v);
    return v;
  }

  static Tensor forward(Tensor x, Tensor w1, Tensor b1, Tensor w2, Tensor b2, Tensor w3, Tensor b3) {
    return x.matmul(w1).add(b1).relu().matmul(w2).add(b2).relu().matmul(w3).add(b3);
  }

  /** Mean cross entropy from logits [B, C] and I64 labels [B]: logsumexp(z) - z[y]. */
  static Tensor crossEntropy(Tensor logits, Tensor labels) {
    Tensor picked = logits.gather(1, labels.unsqueeze(1)).squeeze(1);
    return ReduceOps.logsumexp(logits, new int[] {1}, false).sub(picked).mean();
  }

  private static double accuracy(Tensor[] data, Tensor w1, Tensor b1, Tensor w2, Tensor b2, Tensor w3, Tensor b3) {
    try (var ignored = Grad.off()) {
      Tensor pred = forward(data[0], w1, b1, w2, b2, w3, b3).argmax(1, false);
      return pred.eq(data[1]).to(DType.F32).mean().item();
    }
  }

  /** Kaiming-uniform weights, as PyTorch's nn.Linear default (bound 1/sqrt(fanIn)). */
  private static Tensor param(Generator gen, int fanIn, int fanOut, List<Tensor> params) {
    double bound = 1 / Math.sqrt(fanIn);
    Tensor w = Tensor.rand(gen, fanIn, fanOut).mul(2 * bound).sub(bound).requiresGrad(true);
    params.add(w);
    return w;
  }

  private static Tensor bias(int n, List<Tensor> params) {
    Tensor b = Tensor.zeros(n).requiresGrad(true);
    params.add(b);
    return b;
  }

  /** Three interleaved spiral arms with noise: x [n, 2] F32, labels [n] I64. */
  static Tensor[] spiral(Generator gen, int n) {
    float[] xs = new float[2 * n];
    long[] ys = new long[n];
    for (int i = 0; i < n; i++) {
      int c = i % 3;
      double r = gen.nextDouble();
      double theta = c * 2 * Math.PI / 3 + 4 * r + 0.2 * gen.nextGaussian();
      xs[2 * i] = (float) (r * Math.cos(theta));
      xs[2 * i + 1] = (float) (r * Math.sin(theta));
      ys[i] = c;
    }
    return new Tensor[] {Tensor.of(xs, n, 2), Tensor.of(ys, n)};
  }
}
