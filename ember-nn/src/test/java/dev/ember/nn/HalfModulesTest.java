package dev.ember.nn;

import static dev.ember.testing.HalfBits.bits;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.ember.nn.io.SafeTensors;
import dev.ember.tensor.DType;
import dev.ember.tensor.Generator;
import dev.ember.tensor.HalfFloats;
import dev.ember.tensor.Tensor;
import java.io.IOException;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Whole models in BF16 ({@code Module.to(DType.BF16)}, or BF16 weights from a safetensors file): every layer computes
 * in F32 and rounds its output once to BF16, so the model's output is that of the F32 layers run one by one on the
 * same weights with a rounding after each.
 */
class HalfModulesTest {
  @TempDir Path dir;


  private static Map<String, Tensor> converted(Map<String, Tensor> state, DType dtype) {
    Map<String, Tensor> out = new LinkedHashMap<>();
    for (Map.Entry<String, Tensor> e : state.entrySet()) {
      Tensor t = e.getValue();
      out.put(e.getKey(), t.dtype().isFloatingPoint() ? t.detach().to(dtype) : t);
    }
    return out;
  }

  /** The F32 layers of {@code seq} applied one by one, each output rounded to BF16 (the oracle of a BF16 run). */
  private static Tensor layerByLayer(Sequential seq, Tensor x) {
    for (Module m : seq.children()) x = m.call(x.to(DType.F32)).to(DType.BF16);
    return x;
  }

  @Test
  void aBf16LeNetForwardRoundsOncePerLayer() {
    Module bf = Models.lenet5(10).to(DType.BF16);
    for (Tensor p : bf.parameters()) assertEquals(DType.BF16, p.dtype());
    Module f32 = Models.lenet5(10);
    f32.loadStateDict(converted(bf.stateDict(), DType.F32), true); // the same (BF16-exact) weights in F32
    Tensor x = Tensor.randn(new Generator(3), 4, 1, 28, 28).to(DType.BF16);
    Tensor y = bf.forward(x);
    assertEquals(DType.BF16, y.dtype());
    assertArrayEquals(new int[] {4, 10}, y.shape());
    Tensor ref = layerByLayer((Sequential) f32.child("classifier"), layerByLayer((Sequential) f32.child("features"), x));
    assertArrayEquals(bits(ref), bits(y));
    // and it trains: a backward pass gives BF16 gradients to the BF16 parameters
    dev.ember.nn.functional.F.crossEntropy(y, Tensor.of(new long[] {1, 2, 3, 4}, 4)).backward();
    for (Tensor p : bf.parameters()) assertEquals(DType.BF16, p.grad().dtype());
  }

  @Test
  void aModuleLoadsBf16SafetensorsAndRunsInBf16() throws IOException {
    Sequential src = new Sequential(new Conv2d(2, 4, 3, 1, 1), new BatchNorm2d(4), new ReLU(), new MaxPool2d(2),
        new Flatten(), new Linear(4 * 3 * 3, 5));
    src.train(false);
    Path f = dir.resolve("model-bf16.safetensors");
    SafeTensors.save(converted(src.stateDict(), DType.BF16), f); // as a Hugging Face BF16 checkpoint
    Sequential dst = new Sequential(new Conv2d(2, 4, 3, 1, 1), new BatchNorm2d(4), new ReLU(), new MaxPool2d(2),
        new Flatten(), new Linear(4 * 3 * 3, 5));
    dst.to(DType.BF16);
    dst.train(false);
    LinkedHashMap<String, Tensor> loaded = SafeTensors.load(f);
    assertEquals(DType.BF16, loaded.get("0.weight").dtype());
    dst.loadStateDict(loaded, true);
    Tensor x = Tensor.randn(new Generator(5), 3, 2, 6, 6).to(DType.BF16);
    Tensor y = dst.forward(x);
    assertEquals(DType.BF16, y.dtype());
    Sequential ref = new Sequential(new Conv2d(2, 4, 3, 1, 1), new BatchNorm2d(4), new ReLU(), new MaxPool2d(2),
        new Flatten(), new Linear(4 * 3 * 3, 5));
    ref.loadStateDict(converted(loaded, DType.F32), true);
    ref.train(false);
    assertArrayEquals(bits(layerByLayer(ref, x)), bits(y));
    float[] v = y.toFloatArray();
    for (int i = 0; i < v.length; i++) assertEquals(HalfFloats.bf16ToFloat(bits(y)[i]), v[i]);
  }
}
