package dev.ember.data;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.tensor.DType;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import java.util.HashSet;
import java.util.Set;
import org.junit.jupiter.api.Test;

class TransformTest {
  /** [C, H, W] with value c * 100 + y * 10 + x + 1 (so no pixel is 0 and padding shows). */
  static Tensor image(int c, int h, int w) {
    float[] a = new float[c * h * w];
    for (int k = 0; k < c; k++) for (int y = 0; y < h; y++) for (int x = 0; x < w; x++) a[(k * h + y) * w + x] = k * 100 + y * 10 + x + 1;
    return Tensor.of(a, c, h, w);
  }

  @Test
  void normalizeSubtractsMeanAndDividesByStdPerChannel() {
    Tensor x = image(2, 2, 3);
    Tensor y = new Normalize(new double[] {1, 100}, new double[] {2, 0.5}).apply(x, new Generator(0));
    float[] a = x.toFloatArray(), b = y.toFloatArray();
    for (int i = 0; i < a.length; i++) {
      float m = i < 6 ? 1f : 100f, s = i < 6 ? 2f : 0.5f;
      assertEquals((a[i] - m) / s, b[i], 0f, "element " + i);
    }
    var e = assertThrows(IllegalArgumentException.class,
        () -> new Normalize(new double[] {0, 0, 0}, new double[] {1, 1, 1}).apply(x, new Generator(0)));
    assertEquals("Normalize: image has 2 channels but 3 means/stds were given: x=[2, 2, 3]", e.getMessage());
    assertThrows(IllegalArgumentException.class, () -> new Normalize(new double[] {0}, new double[] {0}));
  }

  @Test
  void randomCropIsAWindowOfTheZeroPaddedImage() {
    Tensor x = image(2, 4, 5);
    int pad = 2, size = 4;
    Set<String> corners = new HashSet<>();
    for (long seed = 0; seed < 200; seed++) {
      Generator g = new Generator(seed);
      Tensor y = new RandomCrop(size, pad).apply(x, g);
      assertArrayEquals(new int[] {2, size, size}, y.shape());
      Generator replay = new Generator(seed); // the crop draws top, then left
      int top = (int) replay.nextLong(4 + 2 * pad - size + 1);
      int left = (int) replay.nextLong(5 + 2 * pad - size + 1);
      assertArrayEquals(replay.state(), g.state(), "exactly two draws");
      corners.add(top + "," + left);
      for (int c = 0; c < 2; c++) {
        for (int i = 0; i < size; i++) {
          for (int j = 0; j < size; j++) {
            int sy = top + i - pad, sx = left + j - pad;
            double want = sy < 0 || sy >= 4 || sx < 0 || sx >= 5 ? 0 : x.getDouble(c, sy, sx);
            assertEquals(want, y.getDouble(c, i, j), "seed " + seed + " at " + c + "," + i + "," + j);
          }
        }
      }
    }
    assertEquals(5 * 6, corners.size(), "every window position is reachable");
    assertArrayEquals(x.toFloatArray(), new RandomCrop(4, 5, 0).apply(x, new Generator(1)).toFloatArray());
    var e = assertThrows(IllegalArgumentException.class, () -> new RandomCrop(9, 0).apply(x, new Generator(0)));
    assertEquals("RandomCrop: crop 9x9 is larger than the padded image 4x5 (padding 0): x=[2, 4, 5]", e.getMessage());
  }

  @Test
  void horizontalFlipMirrorsWithProbabilityP() {
    Tensor x = image(1, 2, 3);
    Tensor y = new RandomHorizontalFlip(1).apply(x, new Generator(0));
    assertArrayEquals(new float[] {3, 2, 1, 13, 12, 11}, y.toFloatArray());
    assertSame(x, new RandomHorizontalFlip(0).apply(x, new Generator(0)));
    Tensor ints = Tensor.of(new long[] {1, 2, 3, 4}, 2, 2);
    assertArrayEquals(new long[] {2, 1, 4, 3}, new RandomHorizontalFlip(1).apply(ints, new Generator(0)).toLongArray());
    int flipped = 0;
    Generator g = new Generator(3);
    for (int i = 0; i < 4000; i++) if (new RandomHorizontalFlip(0.25).apply(x, g) != x) flipped++;
    assertTrue(flipped > 850 && flipped < 1150, "flipped " + flipped + " of 4000 at p=0.25");
    assertThrows(IllegalArgumentException.class, () -> new RandomHorizontalFlip(1.5));
  }

  @Test
  void toTensorScalesUnsignedBytesBy255() {
    byte[] raw = {0, (byte) 128, (byte) 255, 1, 2, 3};
    Tensor t = ToTensor.fromBytes(raw, 0, 1, 2, 3);
    assertEquals(DType.F32, t.dtype());
    assertArrayEquals(new float[] {0f, 128 / 255f, 1f, 1 / 255f, 2 / 255f, 3 / 255f}, t.toFloatArray());
    Tensor hw = new ToTensor().apply(Tensor.of(new int[] {0, 255, 51, 102}, 2, 2), new Generator(0));
    assertArrayEquals(new int[] {1, 2, 2}, hw.shape());
    assertArrayEquals(new float[] {0f, 1f, 0.2f, 0.4f}, hw.toFloatArray());
    var e = assertThrows(IllegalArgumentException.class,
        () -> new ToTensor().apply(Tensor.of(new int[] {0, 256, 1, 2}, 2, 2), new Generator(0)));
    assertEquals("ToTensor: pixel values must be integers in 0..255, got 256.0 at flat index 1: x=[2, 2]", e.getMessage());
    assertThrows(IllegalArgumentException.class, () -> ToTensor.fromBytes(raw, 1, 2, 3));
  }

  @Test
  void composeAppliesInOrderAndIsReproducible() {
    Tensor x = image(1, 6, 6);
    Transform t = new Compose(new RandomCrop(4, 1), new RandomHorizontalFlip(0.5),
        new Normalize(new double[] {0.5}, new double[] {2}));
    Tensor a = t.apply(x, new Generator(11));
    Tensor b = t.apply(x, new Generator(11));
    assertArrayEquals(a.toFloatArray(), b.toFloatArray());
    assertArrayEquals(new int[] {1, 4, 4}, a.shape());
    Generator g = new Generator(11);
    Tensor manual = new Normalize(new double[] {0.5}, new double[] {2})
        .apply(new RandomHorizontalFlip(0.5).apply(new RandomCrop(4, 1).apply(x, g), g), g);
    assertArrayEquals(manual.toFloatArray(), a.toFloatArray());
  }
}
