package dev.ember.bench;

import dev.ember.autograd.Grad;
import dev.ember.nn.GRU;
import dev.ember.nn.LSTM;
import dev.ember.nn.functional.F;
import dev.ember.nn.functional.Attention;
import dev.ember.nn.functional.Convolution;
import dev.ember.tensor.Generator;
import dev.ember.tensor.MemoryScope;
import dev.ember.tensor.Tensor;
import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Supplier;

/**
 * The {@code nn} category: layer workloads through ember-nn as a user would call them, mirrored
 * by bench/peers/pytorch_ops.py {@code --suite nn}. Each timed Ember call runs in its own
 * {@link MemoryScope}, with the leaves' gradients handed back to the pool, as the ops cases and
 * {@code Trainer.fit} do (PyTorch's caching allocator gives its loop the same reuse).
 *
 * <ul>
 *   <li>attention: scaled dot-product attention, B=1, H=8, head dim 64, T = 128..4096 forward
 *       (Ember's default path: plain up to T = 512, then the fused float32 tiled forward) and T = 128..1024
 *       forward + backward (plain: with a gradient to follow, tiled only beyond T = 1024). Torch 1.13 has no fused SDPA, so its side is the textbook
 *       softmax(q k^T / sqrt(d)) v that models of that version run.
 *   <li>attention memory: megabytes per forward call at T = 1024..4096. Ember's figure is every
 *       byte the JVM allocated on all threads during one call: an upper bound of the call's peak
 *       (it counts tiles that were dropped long before the end). Torch's is the true peak of
 *       bytes allocated and not yet freed during the call, from torch.profiler's memory records
 *       (its allocator keeps freed pages, so the resident set does not show it).
 *   <li>lstm: one LSTM layer, input 128, hidden 256, batch 32, 32 steps: inference, and forward +
 *       backward.
 *   <li>conv2d: LeNet-5's two convolutions at batch 32 (1x28x28 -> 6, 6x14x14 -> 16, 5x5) and a
 *       VGG block's 3x3 convolution at batch 8 (64x56x56 -> 64, padding 1), forward + backward
 *       (input, weight and bias gradients), the VGG one also forward only; and a depthwise 3x3
 *       (groups 64) forward + backward.
 *   <li>the layers issue #40 found missing, each forward + backward (every input's gradient) with a gradient of
 *       ones (a plain backward() for the scalar loss): GRU (as the LSTM row), conv1d, ConvTranspose2d (a 2x
 *       upsampling), LayerNorm over 1024 features, GroupNorm (32 groups), BatchNorm2d in training mode and a 2x2
 *       max pool at the convnet's first block (64x32x32x32), an embedding's backward (32k x 512 table, 4096 tokens)
 *       and cross-entropy over a 32k vocabulary (512 tokens).
 * </ul>
 */
final class NnCases {
  static final int HEADS = 8;
  static final int HEAD_DIM = 64;
  static final int[] ATTN_FWD_T = {128, 256, 512, 1024, 2048, 4096};
  static final int[] ATTN_BWD_T = {128, 256, 512, 1024};
  static final int[] ATTN_MEM_T = {1024, 2048, 4096};
  private static volatile Object sink;

  private NnCases() {}

  static List<BenchCase> cases() {
    List<BenchCase> out = new ArrayList<>();
    for (int t : ATTN_FWD_T) out.add(attentionFwd(t));
    for (int t : ATTN_BWD_T) out.add(attentionFwdBwd(t));
    for (int t : ATTN_MEM_T) out.add(attentionMemory(t));
    out.add(lstm(false));
    out.add(lstm(true));
    out.add(conv("lenet1", 32, 1, 28, 6, 5, 0, 1, true));
    out.add(conv("lenet2", 32, 6, 14, 16, 5, 0, 1, true));
    out.add(conv("vgg", 8, 64, 56, 64, 3, 1, 1, false));
    out.add(conv("vgg", 8, 64, 56, 64, 3, 1, 1, true));
    out.add(conv("depthwise", 8, 64, 56, 64, 3, 1, 64, true));
    out.addAll(layers());
    return out;
  }

  static String attnShape(int t) {
    return "B=1 H=" + HEADS + " T=" + t + " D=" + HEAD_DIM;
  }

  private static Supplier<Tensor[]> qkv(int t, boolean grad) {
    return new Supplier<>() {
      private Tensor[] x;

      @Override
      public Tensor[] get() {
        if (x == null) {
          Generator g = new Generator(t);
          x = new Tensor[3];
          for (int i = 0; i < 3; i++) x[i] = MemoryScope.escape(Tensor.randn(g, 1, HEADS, t, HEAD_DIM)).requiresGrad(grad);
        }
        return x;
      }
    };
  }

  private static BenchCase attentionFwd(int t) {
    Supplier<Tensor[]> x = qkv(t, false);
    return BenchCase.latency("attention", "fwd " + attnShape(t), "latency_ms", "ms/call", 1e3, () -> {
      Tensor[] q = x.get();
      try (MemoryScope call = MemoryScope.open(); Grad g = Grad.off()) {
        sink = Attention.scaledDotProductAttention(q[0], q[1], q[2]);
      }
    });
  }

  private static BenchCase attentionFwdBwd(int t) {
    Supplier<Tensor[]> x = qkv(t, true);
    Tensor up = Tensor.ones(1, HEADS, t, HEAD_DIM);
    return BenchCase.latency("attention", "fwd+bwd " + attnShape(t), "latency_ms", "ms/call", 1e3, () -> {
      Tensor[] q = x.get();
      try (MemoryScope call = MemoryScope.open()) {
        for (Tensor p : q) OpsCases.dropGrad(p);
        Attention.scaledDotProductAttention(q[0], q[1], q[2]).backward(up);
        sink = q[0].grad();
      }
    });
  }

  private static BenchCase attentionMemory(int t) {
    Supplier<Tensor[]> x = qkv(t, false);
    return BenchCase.probe("attention_mem", "fwd " + attnShape(t), "megabytes", "MB", true, () -> {
      Tensor[] q = x.get();
      try (Grad g = Grad.off()) {
        sink = Attention.scaledDotProductAttention(q[0], q[1], q[2]); // warm: JIT, worker threads
        long before = allocatedBytes();
        sink = Attention.scaledDotProductAttention(q[0], q[1], q[2]);
        return (allocatedBytes() - before) / 1e6;
      }
    });
  }

  /** Bytes allocated so far by all live threads (the pool's workers included). */
  static long allocatedBytes() {
    var mx = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
    long sum = 0;
    for (long b : mx.getThreadAllocatedBytes(mx.getAllThreadIds())) if (b > 0) sum += b;
    return sum;
  }

  static String convName(String tag, int n, int c, int hw, int o, int k, int pad, int groups, boolean backward) {
    return (backward ? "fwd+bwd " : "fwd ") + tag + " N=" + n + " " + c + "x" + hw + "x" + hw + " -> " + o + " k" + k
        + (pad > 0 ? " p" + pad : "") + (groups > 1 ? " g" + groups : "");
  }

  private static BenchCase conv(String tag, int n, int c, int hw, int o, int k, int pad, int groups, boolean backward) {
    Generator g = new Generator(21);
    Tensor x = Tensor.randn(g, n, c, hw, hw).requiresGrad(backward);
    Tensor w = Tensor.randn(g, o, c / groups, k, k).mul(0.1).detach().requiresGrad(backward);
    Tensor b = Tensor.randn(g, o).requiresGrad(backward);
    int[] stride = {1, 1}, padding = {pad, pad}, dilation = {1, 1};
    int outHw = hw + 2 * pad - k + 1;
    Tensor up = Tensor.ones(n, o, outHw, outHw);
    String name = convName(tag, n, c, hw, o, k, pad, groups, backward);
    if (!backward) {
      return BenchCase.latency("conv2d", name, "latency_ms", "ms/call", 1e3, () -> {
        try (MemoryScope call = MemoryScope.open(); Grad off = Grad.off()) {
          sink = Convolution.conv2d(x, w, b, stride, padding, dilation, groups);
        }
      });
    }
    return BenchCase.latency("conv2d", name, "latency_ms", "ms/call", 1e3, () -> {
      try (MemoryScope call = MemoryScope.open()) {
        OpsCases.dropGrad(x);
        OpsCases.dropGrad(w);
        OpsCases.dropGrad(b);
        Convolution.conv2d(x, w, b, stride, padding, dilation, groups).backward(up);
        sink = w.grad();
      }
    });
  }

  /** The rows of {@link #cases()} for the layers issue #40 found missing (see the class comment). */
  static List<BenchCase> layers() {
    Generator g = new Generator(31);
    List<BenchCase> out = new ArrayList<>();
    out.add(gru(false));
    out.add(gru(true));
    Tensor x1 = Tensor.randn(g, 16, 128, 512).requiresGrad(true);
    Tensor w1 = Tensor.randn(g, 128, 128, 3).mul(0.05).detach().requiresGrad(true);
    Tensor b1 = Tensor.randn(g, 128).requiresGrad(true);
    out.add(fwdBwd("conv1d", "fwd+bwd N=16 128x512 -> 128 k3 p1", () -> F.conv1d(x1, w1, b1, 1, 1, 1, 1),
        x1, w1, b1));
    Tensor xt = Tensor.randn(g, 16, 64, 16, 16).requiresGrad(true);
    Tensor wt = Tensor.randn(g, 64, 32, 4, 4).mul(0.05).detach().requiresGrad(true);
    Tensor bt = Tensor.randn(g, 32).requiresGrad(true);
    int[] two = {2, 2}, one = {1, 1}, zero = {0, 0};
    out.add(fwdBwd("conv_transpose2d", "fwd+bwd N=16 64x16x16 -> 32 k4 s2 p1",
        () -> F.convTranspose2d(xt, wt, bt, two, one, zero, 1, one), xt, wt, bt));
    Tensor xl = Tensor.randn(g, 4096, 1024).requiresGrad(true);
    Tensor wl = Tensor.ones(1024).requiresGrad(true);
    Tensor bl = Tensor.zeros(1024).requiresGrad(true);
    out.add(fwdBwd("layer_norm", "fwd+bwd [4096x1024]", () -> F.layerNorm(xl, new int[] {1024}, wl, bl), xl, wl, bl));
    Tensor xg = Tensor.randn(g, 8, 64, 56, 56).requiresGrad(true);
    Tensor wg = Tensor.ones(64).requiresGrad(true);
    Tensor bg = Tensor.zeros(64).requiresGrad(true);
    out.add(fwdBwd("group_norm", "fwd+bwd N=8 64x56x56 groups=32", () -> F.groupNorm(xg, 32, wg, bg), xg, wg, bg));
    Tensor xb = Tensor.randn(g, 64, 32, 32, 32).requiresGrad(true);
    Tensor wb = Tensor.ones(32).requiresGrad(true);
    Tensor bb = Tensor.zeros(32).requiresGrad(true);
    Tensor mean = Tensor.zeros(32);
    Tensor var = Tensor.ones(32);
    out.add(fwdBwd("batch_norm", "fwd+bwd train N=64 32x32x32",
        () -> F.batchNorm(xb, mean, var, wb, bb, true, 0.1, 1e-5), xb, wb, bb));
    Tensor xp = Tensor.randn(g, 64, 32, 32, 32).requiresGrad(true);
    out.add(fwdBwd("max_pool2d", "fwd+bwd N=64 32x32x32 k2", () -> F.maxPool2d(xp, 2), xp));
    Tensor table = Tensor.randn(g, 32000, 512).requiresGrad(true);
    Tensor tokens = Tensor.randint(g, 0, 32000, 4096);
    out.add(fwdBwd("embedding", "fwd+bwd vocab=32000 dim=512 tokens=4096", () -> F.embedding(tokens, table), table));
    Tensor logits = Tensor.randn(g, 512, 32000).requiresGrad(true);
    Tensor target = Tensor.randint(g, 0, 32000, 512);
    out.add(fwdBwd("cross_entropy", "fwd+bwd [512x32000]", () -> F.crossEntropy(logits, target), logits));
    return out;
  }

  /**
   * Forward + backward of {@code f} in ms/call: the leaves' gradients dropped first, then f's output backward with a
   * gradient of ones (made once, on the first call), or backward() for a scalar.
   */
  private static BenchCase fwdBwd(String workload, String name, Supplier<Tensor> f, Tensor... leaves) {
    Tensor[] up = new Tensor[1];
    return BenchCase.latency(workload, name, "latency_ms", "ms/call", 1e3, () -> {
      try (MemoryScope call = MemoryScope.open()) {
        for (Tensor leaf : leaves) OpsCases.dropGrad(leaf);
        Tensor y = f.get();
        if (y.numel() == 1) {
          y.backward();
        } else {
          if (up[0] == null) up[0] = MemoryScope.escape(Tensor.ones(y.shape()));
          y.backward(up[0]);
        }
        sink = leaves[0].grad();
      }
    });
  }

  private static BenchCase gru(boolean backward) {
    Generator g = new Generator(13);
    GRU layer = new GRU(LSTM_IN, LSTM_HIDDEN, 1, true, false, 0.0, false, g);
    Tensor in = Tensor.randn(g, LSTM_STEPS, LSTM_BATCH, LSTM_IN).requiresGrad(backward);
    Tensor up = Tensor.ones(LSTM_STEPS, LSTM_BATCH, LSTM_HIDDEN);
    String shape = "in=" + LSTM_IN + " hidden=" + LSTM_HIDDEN + " batch=" + LSTM_BATCH + " steps=" + LSTM_STEPS;
    if (!backward) {
      return BenchCase.latency("gru", "fwd " + shape, "latency_ms", "ms/call", 1e3, () -> {
        try (MemoryScope call = MemoryScope.open(); Grad off = Grad.off()) {
          sink = layer.forward(in, null).output();
        }
      });
    }
    return BenchCase.latency("gru", "fwd+bwd " + shape, "latency_ms", "ms/call", 1e3, () -> {
      try (MemoryScope call = MemoryScope.open()) {
        layer.zeroGrad();
        OpsCases.dropGrad(in);
        layer.forward(in, null).output().backward(up);
        sink = in.grad();
      }
    });
  }

  static final int LSTM_IN = 128;
  static final int LSTM_HIDDEN = 256;
  static final int LSTM_BATCH = 32;
  static final int LSTM_STEPS = 32;

  private static BenchCase lstm(boolean backward) {
    Generator g = new Generator(11);
    LSTM layer = new LSTM(LSTM_IN, LSTM_HIDDEN, 1, true, false, 0.0, false, g);
    Tensor in = Tensor.randn(g, LSTM_STEPS, LSTM_BATCH, LSTM_IN).requiresGrad(backward);
    Tensor up = Tensor.ones(LSTM_STEPS, LSTM_BATCH, LSTM_HIDDEN);
    String shape = "in=" + LSTM_IN + " hidden=" + LSTM_HIDDEN + " batch=" + LSTM_BATCH + " steps=" + LSTM_STEPS;
    if (!backward) {
      return BenchCase.latency("lstm", "fwd " + shape, "latency_ms", "ms/call", 1e3, () -> {
        try (MemoryScope call = MemoryScope.open(); Grad off = Grad.off()) {
          sink = layer.forward(in, null, null).output();
        }
      });
    }
    return BenchCase.latency("lstm", "fwd+bwd " + shape, "latency_ms", "ms/call", 1e3, () -> {
      try (MemoryScope call = MemoryScope.open()) {
        layer.zeroGrad();
        OpsCases.dropGrad(in);
        layer.forward(in, null, null).output().backward(up);
        sink = in.grad();
      }
    });
  }
}
