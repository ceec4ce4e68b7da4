package dev.ember.bench;

import dev.ember.autograd.Grad;
import dev.ember.nn.LSTM;
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
 *       (Ember's default path: plain up to T = 1024, tiled beyond) and T = 128..1024 forward +
 *       backward. Torch 1.13 has no fused SDPA, so its side is the textbook
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
