package dev.ember.nn;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.autograd.TapeStorages;
import dev.ember.nn.functional.Activations;
import dev.ember.nn.functional.Dropouts;
import dev.ember.tensor.DType;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import dev.ember.testing.GradCheck;
import java.util.List;
import java.util.function.Function;
import org.junit.jupiter.api.Test;

/** Modules with {@code inplace=true}: the same bits as without, less activation memory kept for backward. */
class InplaceModulesTest {

  /** An MLP with every activation kind; {@code inplace} for all of them and the dropout. */
  private static Sequential mlp(boolean inplace, long seed) {
    Generator g = new Generator(seed);
    return new Sequential(
        new Linear(12, 16, true, g), new ReLU(inplace),
        new Linear(16, 16, true, g), new LeakyReLU(0.1, inplace),
        new Linear(16, 16, true, g), new Dropout(0.3, inplace, new Generator(seed + 1)),
        new Linear(16, 16, true, g), new ELU(1.0, inplace),
        new Linear(16, 16, true, g), new SiLU(inplace),
        new Linear(16, 16, true, g), new Mish(inplace),
        new Linear(16, 16, true, g), new Hardswish(inplace),
        new Linear(16, 16, true, g), new Dropout2d(0.25, inplace, new Generator(seed + 2)),
        new Linear(16, 4, true, g));
  }

  private static int[] bits(Tensor t) {
    float[] f = t.toFloatArray();
    int[] b = new int[f.length];
    for (int i = 0; i < f.length; i++) b[i] = Float.floatToRawIntBits(f[i]);
    return b;
  }

  @Test
  void inplaceActivationsGiveTheSameBitsForOutputsAndGradients() {
    Sequential plain = mlp(false, 7);
    Sequential inplace = mlp(true, 7);
    Tensor x = Tensor.randn(new Generator(3), 2, 4, 12);
    for (int step = 0; step < 2; step++) { // the second step draws new dropout masks from both generators
      Tensor a = plain.forward(x);
      Tensor b = inplace.forward(x);
      assertArrayEquals(bits(a), bits(b), "outputs, step " + step);
      a.square().sum().backward();
      b.square().sum().backward();
      List<Tensor> pa = plain.parameters();
      List<Tensor> pb = inplace.parameters();
      for (int i = 0; i < pa.size(); i++) {
        assertArrayEquals(bits(pa.get(i).grad()), bits(pb.get(i).grad()), "gradient of parameter " + i);
      }
    }
    assertTrue(inplace.toString().contains("(1): ReLU(inplace=True)"), inplace.toString());
  }

  @Test
  void inplaceActivationsKeepFewerActivationBuffersForBackward() {
    Tensor x = Tensor.randn(new Generator(3), 2, 4, 12);
    TapeStorages plain = TapeStorages.of(mlp(false, 7).forward(x).sum());
    TapeStorages inplace = TapeStorages.of(mlp(true, 7).forward(x).sum());
    // ReLU, LeakyReLU, ELU and both dropouts write into the Linear output they read: one [2, 4, 16] F32 buffer
    // (512 bytes) fewer each. SiLU and Mish keep a copy of their input in place of their output (no saving);
    // Hardswish, a composite of four ops, runs them on a copy of its input (one buffer more).
    assertEquals(plain.count() - 4, inplace.count());
    assertEquals(plain.bytes() - 4 * 2 * 4 * 16 * 4, inplace.bytes());
  }

  /** Models.mlp's layers with ReLU(inplace) or not. */
  private static Sequential fashionMlp(boolean inplace) {
    Generator g = new Generator(11);
    return new Sequential(new Flatten(), new Linear(784, 256, true, g), new ReLU(inplace),
        new Linear(256, 128, true, g), new ReLU(inplace), new Linear(128, 10, true, g));
  }

  @Test
  void inplaceReluSavesOneHiddenActivationPerLayerInAFashionMnistMlpStep() {
    Tensor x = Tensor.randn(new Generator(4), 64, 1, 28, 28);
    Tensor y = Tensor.of(new long[64]);
    long plain = TapeStorages.of(dev.ember.nn.functional.Losses.crossEntropy(fashionMlp(false).forward(x), y))
        .bytes();
    long inplace = TapeStorages.of(dev.ember.nn.functional.Losses.crossEntropy(fashionMlp(true).forward(x), y))
        .bytes();
    assertEquals(64 * (256 + 128) * 4, plain - inplace); // the two ReLU outputs: 98,304 bytes
    System.out.printf("784-256-128-10 MLP, batch 64: activations kept for backward %d bytes, %d with"
        + " ReLU(inplace=True)%n", plain, inplace);
  }

  @Test
  void reprsFollowPyTorch() {
    assertEquals("ReLU(inplace=True)", new ReLU(true).toString());
    assertEquals("ReLU()", new ReLU().toString());
    assertEquals("LeakyReLU(negative_slope=0.2, inplace=True)", new LeakyReLU(0.2, true).toString());
    assertEquals("LeakyReLU(negative_slope=0.01)", new LeakyReLU().toString());
    assertEquals("ELU(alpha=1.0, inplace=True)", new ELU(1.0, true).toString());
    assertEquals("Hardswish()", new Hardswish(true).toString());
    assertEquals("SiLU(inplace=True)", new SiLU(true).toString());
    assertEquals("SiLU()", new SiLU().toString());
    assertEquals("Mish(inplace=True)", new Mish(true).toString());
    assertEquals("Dropout(p=0.3, inplace=True)", new Dropout(0.3, true).toString());
    assertEquals("Dropout2d(p=0.5, inplace=True)", new Dropout2d(0.5, true).toString());
    assertEquals("Dropout(p=0.5, inplace=False)", new Dropout().toString());
    assertTrue(new ReLU(true).inplace());
  }

  @Test
  void anInplaceModuleWritesIntoItsInputAndRejectsALeafThatRequiresGrad() {
    Tensor h = Tensor.of(new float[] {-1, 2, -3}).mul(1);
    assertSame(h, new ReLU(true).forward(h));
    assertArrayEquals(new float[] {0, 2, 0}, h.toFloatArray());
    assertEquals(1, h.version());
    Tensor leaf = Tensor.of(new float[] {-1, 2}).requiresGrad(true);
    IllegalStateException ex = assertThrows(IllegalStateException.class, () -> new SiLU(true).forward(leaf));
    assertTrue(ex.getMessage().startsWith("silu_: a leaf Variable that requires grad is being used in an in-place"
        + " operation"), ex.getMessage());
    assertThrows(IllegalStateException.class, () -> new Hardswish(true).forward(leaf));
    // in eval a dropout is the identity: nothing is written
    Dropout d = new Dropout(0.5, true);
    d.eval();
    Tensor e = Tensor.of(new float[] {1, 2});
    assertSame(e, d.forward(e));
    assertEquals(0, e.version());
  }

  @Test
  void functionalInplaceFormsPassGradcheckOnANonLeaf() {
    for (var f : List.<Function<Tensor, Tensor>>of(
        t -> Activations.relu(t, true), t -> Activations.leakyRelu(t, 0.2, true), t -> Activations.elu(t, 0.7, true),
        t -> Activations.silu(t, true), t -> Activations.mish(t, true), t -> Activations.hardswish(t, true),
        t -> Dropouts.dropout(t, 0.4, true, true, new Generator(5)),
        t -> Dropouts.alphaDropout(t, 0.4, true, true, new Generator(6)))) {
      Tensor x = Tensor.of(new double[] {-2.5, -1.2, -0.4, 0.3, 1.1, 2.7}, 2, 3).requiresGrad(true);
      GradCheck.check("inplace", in -> f.apply(in.get(0).mul(1)), List.of(x));
    }
    // and the in-place alpha dropout gives the out-of-place bits
    Tensor x = Tensor.randn(new Generator(1), 4, 5);
    Tensor a = Dropouts.alphaDropout(x, 0.3, true, false, new Generator(9));
    Tensor b = Dropouts.alphaDropout(x.cloneContiguous(), 0.3, true, true, new Generator(9));
    assertArrayEquals(bits(a), bits(b));
    assertEquals(DType.F32, b.dtype());
  }
}
