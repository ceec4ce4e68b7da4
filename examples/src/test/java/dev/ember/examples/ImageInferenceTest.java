package dev.ember.examples;

import dev.ember.data.FashionLike;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.autograd.Grad;
import dev.ember.data.FashionMnist;
import dev.ember.nn.Sequential;
import dev.ember.nn.io.SafeTensors;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import java.awt.image.BufferedImage;
import java.nio.file.Path;
import java.util.Locale;
import java.util.Random;
import javax.imageio.ImageIO;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The example's prediction equals the model's forward on the exact pixels of the image, from a PNG or an IDX file. */
class ImageInferenceTest {
  @TempDir static Path tmp;
  static Path weights;
  static Sequential model;

  @BeforeAll
  static void saveWeights() throws Exception {
    Generator.manualSeed(7);
    model = FashionCnn.cnn();
    model.eval();
    weights = tmp.resolve("cnn.safetensors");
    SafeTensors.save(model.stateDict(), weights);
  }

  @Test
  void classifiesAPng() throws Exception {
    byte[] pixels = new byte[784];
    new Random(3).nextBytes(pixels);
    BufferedImage img = new BufferedImage(28, 28, BufferedImage.TYPE_BYTE_GRAY);
    img.getRaster().setDataElements(0, 0, 28, 28, pixels);
    Path png = tmp.resolve("random.png");
    ImageIO.write(img, "png", png.toFile());

    assertArrayEquals(scaled(pixels), ImageInference.readPicture(png).toFloatArray());
    String out = Output.of(() -> ImageInference.main(new String[] {weights.toString(), png.toString()}));
    assertEquals(expectedFirstLine(pixels), out.lines().filter(l -> l.startsWith("prediction=")).findFirst().orElse(out));
    assertEquals(4, out.lines().count(), out); // the prediction and the top three
  }

  @Test
  void classifiesTheChosenImageOfAnIdxFile() throws Exception {
    byte[] images = new byte[3 * 784];
    new Random(4).nextBytes(images);
    Path idx = tmp.resolve("three-images-idx3-ubyte.gz");
    FashionLike.writeIdx(idx, 0x803, new int[] {3, 28, 28}, images);
    byte[] second = java.util.Arrays.copyOfRange(images, 784, 2 * 784);
    String out = Output.of(() -> ImageInference.main(new String[] {weights.toString(), idx.toString(), "1"}));
    assertEquals(expectedFirstLine(second), out.lines().findFirst().orElse(""));
  }

  @Test
  void theShippedPictureIsAFashionMnistImage() throws Exception {
    Path png = FineTunePyTorch.resource("ankle-boot.png");
    float[] x = ImageInference.readPicture(png).toFloatArray();
    assertEquals(784, x.length);
    double mean = 0;
    for (float v : x) {
      assertTrue(v >= 0 && v <= 1);
      mean += v / 784;
    }
    assertTrue(mean > 0.1 && mean < 0.6, "a light object on a black background: mean " + mean);
  }

  private static float[] scaled(byte[] pixels) {
    float[] x = new float[pixels.length];
    for (int i = 0; i < x.length; i++) x[i] = (pixels[i] & 0xff) / 255f;
    return x;
  }

  /** The line the example should print, from the model run here on the same pixels. */
  private static String expectedFirstLine(byte[] pixels) {
    try (var ignored = Grad.off()) {
      float[] p = model.call(Tensor.of(scaled(pixels), 1, 1, 28, 28)).softmax(1).toFloatArray();
      int best = 0;
      for (int c = 1; c < p.length; c++) if (p[c] > p[best]) best = c;
      return String.format(Locale.ROOT, "prediction=%s (%d) p=%.4f", FashionMnist.CLASSES.get(best), best, p[best]);
    }
  }
}
