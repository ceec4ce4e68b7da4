package dev.ember.onnx;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.onnxruntime.OnnxTensor;
import ai.onnxruntime.OrtEnvironment;
import ai.onnxruntime.OrtException;
import ai.onnxruntime.OrtSession;
import dev.ember.autograd.Grad;
import dev.ember.nn.AvgPool2d;
import dev.ember.nn.BatchNorm1d;
import dev.ember.nn.BatchNorm2d;
import dev.ember.nn.Conv1d;
import dev.ember.nn.Conv2d;
import dev.ember.nn.ConvTranspose2d;
import dev.ember.nn.Dropout;
import dev.ember.nn.Dropout2d;
import dev.ember.nn.Embedding;
import dev.ember.nn.Flatten;
import dev.ember.nn.GELU;
import dev.ember.nn.GRU;
import dev.ember.nn.LSTM;
import dev.ember.nn.Identity;
import dev.ember.nn.LayerNorm;
import dev.ember.nn.Linear;
import dev.ember.nn.LogSoftmax;
import dev.ember.nn.MaxPool2d;
import dev.ember.nn.Models;
import dev.ember.nn.Module;
import dev.ember.nn.RNN;
import dev.ember.nn.ReLU;
import dev.ember.nn.Sequential;
import dev.ember.nn.SiLU;
import dev.ember.nn.Sigmoid;
import dev.ember.nn.Softmax;
import dev.ember.nn.Tanh;
import dev.ember.tensor.DType;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import java.nio.FloatBuffer;
import java.nio.LongBuffer;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.IntFunction;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Every exportable layer, and the CLI's three models, exported to ONNX and run by ONNX Runtime: its
 * outputs equal Ember's within 1e-5 (absolute, relative above 1) at two batch sizes, so the batch
 * dimension is really dynamic.
 */
class OnnxRuntimeRoundTripTest {
  private static final double TOL = 1e-5;
  private static final int[] BATCHES = {2, 5};
  private static OrtEnvironment env;

  @TempDir
  Path dir;

  @BeforeAll
  static void ort() {
    env = OrtEnvironment.getEnvironment();
  }

  @Test
  void linear() throws Exception {
    roundTrip(new Linear(6, 4, true, new Generator(1)), 6);
    roundTrip(new Linear(6, 4, false, new Generator(2)), 6);
    roundTrip(new Sequential(new Linear(5, 3, true, new Generator(3))), 7, 5); // rank 3: MatMul + Add
  }

  @Test
  void activations() throws Exception {
    roundTrip(new ReLU(), 3, 4);
    roundTrip(new Sigmoid(), 3, 4);
    roundTrip(new Tanh(), 3, 4);
    roundTrip(new GELU(), 3, 4);
    roundTrip(new GELU(true), 3, 4);
    roundTrip(new SiLU(), 3, 4);
  }

  @Test
  void softmaxes() throws Exception {
    roundTrip(new Softmax(1), 7);
    roundTrip(new Softmax(-1), 3, 4);
    roundTrip(new Softmax(1), 3, 4);
    roundTrip(new LogSoftmax(-1), 6);
    roundTrip(new LogSoftmax(1), 3, 4);
  }

  @Test
  void flattenAndIdentities() throws Exception {
    roundTrip(new Flatten(), 2, 3, 4);
    roundTrip(new Flatten(2, 3), 2, 3, 4);
    roundTrip(new Flatten(1, 2), 2, 3, 4);
    roundTrip(new Sequential(new Dropout(0.5), new Identity(), new Dropout2d(0.3)), 2, 3, 4);
  }

  @Test
  void conv2d() throws Exception {
    Generator g = new Generator(4);
    roundTrip(new Conv2d(3, 4, 3), 3, 8, 8);
    roundTrip(new Conv2d(3, 6, new int[] {3, 2}, new int[] {2, 1}, new int[] {1, 2}, new int[] {1, 2}, 3, true,
        "zeros", g), 3, 9, 10);
    roundTrip(new Conv2d(4, 4, new int[] {4, 3}, new int[] {1, 1}, "same", new int[] {1, 2}, 2, false, "zeros", g),
        4, 7, 8);
    roundTrip(new Conv2d(2, 3, new int[] {3, 3}, new int[] {1, 1}, "valid", new int[] {1, 1}, 1, true, "zeros", g),
        2, 6, 6);
    roundTrip(new Conv2d(2, 3, new int[] {3, 3}, new int[] {2, 1}, new int[] {2, 1}, new int[] {1, 1}, 1, true,
        "reflect", g), 2, 7, 6);
    roundTrip(new Conv2d(2, 3, new int[] {3, 3}, new int[] {1, 1}, new int[] {1, 2}, new int[] {1, 1}, 1, true,
        "replicate", g), 2, 5, 6);
  }

  @Test
  void conv1d() throws Exception {
    Generator g = new Generator(5);
    roundTrip(new Conv1d(3, 4, 3, 2, 1, 2, 1, true, "zeros", g), 3, 11);
    roundTrip(new Conv1d(4, 2, 4, 1, "same", 1, 2, true, "zeros", g), 4, 9);
  }

  @Test
  void pools() throws Exception {
    roundTrip(new MaxPool2d(2), 3, 8, 8);
    roundTrip(new MaxPool2d(new int[] {3, 2}, new int[] {2, 1}, new int[] {1, 1}, new int[] {1, 2}, false), 2, 9, 8);
    roundTrip(new MaxPool2d(new int[] {3}, new int[] {2}, new int[] {1}, new int[] {1}, true), 2, 8, 8);
    roundTrip(new AvgPool2d(2), 3, 8, 8);
    roundTrip(new AvgPool2d(new int[] {3}, new int[] {2}, new int[] {1}, false, false, null), 2, 9, 8);
    roundTrip(new AvgPool2d(new int[] {3}, new int[] {2}, new int[] {1}, false, true, null), 2, 9, 8);
    roundTrip(new AvgPool2d(new int[] {3, 2}, new int[] {2, 2}, new int[] {0, 1}, true, true, null), 2, 8, 7);
    roundTrip(new AvgPool2d(new int[] {3, 2}, new int[] {2, 2}, new int[] {0, 1}, true, false, null), 2, 8, 7);
    roundTrip(new AvgPool2d(new int[] {2}, new int[] {2}, new int[] {1}, false, true, 3), 2, 6, 6);
    roundTrip(new AvgPool2d(new int[] {3}, new int[] {2}, new int[] {1}, true, true, null), 2, 6, 7);
    roundTrip(new AvgPool2d(new int[] {3}, new int[] {2}, new int[] {1}, true, false, null), 2, 6, 7);
    roundTrip(new AvgPool2d(new int[] {3}, new int[] {2}, new int[] {1}, true, true, 5), 2, 8, 7);
  }

  @Test
  void norms() throws Exception {
    roundTrip(new BatchNorm2d(3), 3, 5, 5);
    roundTrip(new BatchNorm2d(3, 1e-3, 0.1, false, true), 3, 4, 4);
    roundTrip(new BatchNorm1d(4), 4);
    roundTrip(new BatchNorm1d(4), 4, 6);
    roundTrip(new LayerNorm(6), 6);
    roundTrip(new LayerNorm(new int[] {3, 4}), 2, 3, 4);
    roundTrip(new LayerNorm(new int[] {4}, 1e-6, false, false), 3, 4);
    roundTrip(new LayerNorm(new int[] {4}, 1e-5, true, false), 3, 4);
  }

  @Test
  void embedding() throws Exception {
    Generator g = new Generator(9);
    Module model = new Sequential(new Embedding(10, 4, 0), new Flatten(), new Linear(12, 3, true, g));
    randomize(model, g);
    roundTrip(model, b -> {
      long[] ids = new long[b * 3];
      for (int i = 0; i < ids.length; i++) ids[i] = (long) (g.nextDouble() * 10);
      return Tensor.of(ids, b, 3);
    });
  }

  @Test
  void recurrent() throws Exception {
    Generator g = new Generator(10);
    roundTrip(new LSTM(5, 6, 2, true, true, 0.3, false, g), false, 4, 5);
    roundTrip(new LSTM(5, 4, 1, false, true, 0, true, g), false, 3, 5);
    roundTrip(new Sequential(new GRU(5, 6, 2, true, true, 0, true, g), new Flatten(), new Linear(24, 3, true, g)),
        false, 2, 5);
    roundTrip(new GRU(3, 4, 1, true, true, 0, false, g), false, 6, 3);
    roundTrip(new RNN(3, 4, 2, "tanh", true, true, 0, true, g), false, 5, 3);
    roundTrip(new RNN(3, 4, 1, "relu", false, true, 0, false, g), false, 5, 3);
  }

  @Test
  void convTranspose2d() throws Exception {
    Generator g = new Generator(11);
    roundTrip(new ConvTranspose2d(3, 4, 3), 3, 5, 5);
    roundTrip(new ConvTranspose2d(4, 6, new int[] {3, 2}, new int[] {2, 3}, new int[] {1, 0}, new int[] {1, 2}, 2, true,
        new int[] {1, 1}, g), 4, 5, 4);
    roundTrip(new ConvTranspose2d(2, 2, new int[] {3, 3}, new int[] {2, 2}, new int[] {1, 1}, new int[] {0, 0}, 1, false,
        new int[] {2, 1}, g), 2, 4, 5);
  }

  @Test
  void cliModels() throws Exception {
    // their own initialisation (as trained), with the convnet's running statistics moved by two batches
    roundTrip(Models.mlp(784, 256, 128, 10), false, 1, 28, 28);
    roundTrip(Models.lenet5(10), false, 1, 28, 28);
    Module convnet = Models.convnet(1, 28, 10);
    Generator g = new Generator(7);
    try (Grad off = Grad.off()) {
      for (int i = 0; i < 2; i++) convnet.call(Tensor.randn(g, 16, 1, 28, 28).mul(2).add(0.3));
    }
    roundTrip(convnet, false, 1, 28, 28);
  }

  /**
   * Randomizes the model's floating-point state (running variances positive), exports it, and compares
   * ONNX Runtime's output with Ember's eval-mode output at each batch size.
   */
  private void roundTrip(Module model, int... sample) throws Exception {
    roundTrip(model, true, sample);
  }

  private void roundTrip(Module model, boolean randomState, int... sample) throws Exception {
    Generator g = new Generator(Arrays.hashCode(sample) + model.getClass().getName().hashCode());
    if (randomState) randomize(model, g);
    roundTrip(model, b -> Tensor.randn(g, withBatch(b, sample)));
  }

  /** Exports on a batch of 3 from {@code inputs}, then compares at each of {@link #BATCHES}. */
  private void roundTrip(Module model, IntFunction<Tensor> inputs) throws Exception {
    Path file = dir.resolve("model" + System.nanoTime() + ".onnx");
    Onnx.export(model, inputs.apply(3), file);
    model.eval();
    try (OrtSession session = env.createSession(file.toString(), new OrtSession.SessionOptions())) {
      for (int b : BATCHES) {
        Tensor x = inputs.apply(b);
        Tensor expected;
        try (Grad off = Grad.off()) {
          expected = model.call(x);
        }
        float[] actual = run(session, x, expected.shape(), model);
        float[] want = expected.toFloatArray();
        double worst = 0;
        for (int i = 0; i < want.length; i++) {
          worst = Math.max(worst, Math.abs(actual[i] - want[i]) / Math.max(1, Math.abs(want[i])));
        }
        assertTrue(worst <= TOL, model + " at batch " + b + ": ORT differs from Ember by " + worst);
      }
    }
  }

  private static float[] run(OrtSession session, Tensor x, int[] expectedShape, Module model) throws OrtException {
    long[] shape = Arrays.stream(x.shape()).asLongStream().toArray();
    try (OnnxTensor in = x.dtype() == DType.I64
            ? OnnxTensor.createTensor(env, LongBuffer.wrap(x.toLongArray()), shape)
            : OnnxTensor.createTensor(env, FloatBuffer.wrap(x.toFloatArray()), shape);
        OrtSession.Result r = session.run(Map.of(Onnx.INPUT, in))) {
      OnnxTensor out = (OnnxTensor) r.get(0);
      long[] want = Arrays.stream(expectedShape).asLongStream().toArray();
      assertArrayEquals(want, out.getInfo().getShape(), model + ": output shape");
      FloatBuffer buf = out.getFloatBuffer();
      float[] v = new float[buf.remaining()];
      buf.get(v);
      return v;
    }
  }

  static int[] withBatch(int b, int... sample) {
    int[] s = new int[sample.length + 1];
    s[0] = b;
    System.arraycopy(sample, 0, s, 1, sample.length);
    return s;
  }

  static void randomize(Module model, Generator g) {
    Map<String, Tensor> state = new LinkedHashMap<>();
    for (var e : model.stateDict().entrySet()) {
      Tensor t = e.getValue();
      if (!t.dtype().isFloatingPoint()) continue;
      Tensor r = e.getKey().endsWith("running_var")
          ? Tensor.rand(g, t.shape()).add(0.5)
          : Tensor.randn(g, t.shape()).mul(e.getKey().endsWith("weight") && t.dim() >= 2 ? 0.2 : 0.5);
      state.put(e.getKey(), r);
    }
    model.loadStateDict(state, false);
  }
}
