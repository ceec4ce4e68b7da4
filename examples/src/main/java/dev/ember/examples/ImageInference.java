package dev.ember.examples;

import dev.ember.autograd.Grad;
import dev.ember.data.FashionMnist;
import dev.ember.data.Idx;
import dev.ember.nn.Sequential;
import dev.ember.nn.io.SafeTensors;
import dev.ember.tensor.Tensor;
import java.awt.Graphics2D;
import java.awt.RenderingHints;
import java.awt.image.BufferedImage;
import java.io.IOException;
import java.nio.file.Path;
import java.util.Locale;
import javax.imageio.ImageIO;

/**
 * Classifies one image with weights trained by {@link FashionCnn}: loads the safetensors file into
 * the same architecture, reads the image, and prints the predicted class and the top three
 * probabilities.
 *
 * <p>IMAGE is a PNG (or JPEG, GIF, BMP: what {@link ImageIO} reads), turned to gray and scaled to
 * 28x28; Fashion-MNIST's pictures are light clothes on a black background, so a photo of a dark
 * object on white needs inverting first. Or IMAGE is an IDX file such as
 * {@code t10k-images-idx3-ubyte.gz}, and INDEX picks the image (0 by default). The repository ships
 * one picture, {@code examples/src/main/resources/dev/ember/examples/ankle-boot.png} (the first
 * Fashion-MNIST test image).
 *
 * <p>Run from the repository root, after {@link FashionCnn} has written its weights:
 * <pre>
 * scripts/mvn -q -pl examples -am test-compile exec:exec -Dexample=ImageInference \
 *     -Dargs="runs/fashion-cnn.safetensors examples/src/main/resources/dev/ember/examples/ankle-boot.png"
 * </pre>
 * The first line printed is {@code prediction=CLASS (INDEX) p=0.xxxx}.
 */
public final class ImageInference {
  private ImageInference() {}

  public static void main(String[] args) throws IOException {
    if (args.length < 2) {
      System.err.println("usage: ImageInference WEIGHTS.safetensors IMAGE.png|IMAGES-idx3-ubyte[.gz] [INDEX]");
      System.exit(2);
    }
    Path weights = Path.of(args[0]);
    Path image = Path.of(args[1]);
    int index = args.length > 2 ? Integer.parseInt(args[2]) : 0;

    Sequential model = FashionCnn.cnn();
    model.loadStateDict(SafeTensors.load(weights)); // strict: fails naming missing or unexpected keys
    model.eval();                                   // inference mode (matters for dropout and batch norm)

    Tensor x = isIdx(image) ? Idx.readImages(image).narrow(0, index, 1) : readPicture(image);   // [1, 1, 28, 28]
    try (var ignored = Grad.off()) {                // no autograd tape for inference
      float[] p = model.call(x).softmax(1).toFloatArray();
      int[] order = topK(p, 3);
      System.out.printf(Locale.ROOT, "prediction=%s (%d) p=%.4f%n", FashionMnist.CLASSES.get(order[0]), order[0], p[order[0]]);
      for (int c : order) System.out.printf(Locale.ROOT, "  %-12s %.4f%n", FashionMnist.CLASSES.get(c), p[c]);
    }
  }

  static boolean isIdx(Path file) {
    String name = file.getFileName().toString();
    return name.contains("idx") || name.endsWith("ubyte") || name.endsWith("ubyte.gz");
  }

  /** A picture as F32 [1, 1, 28, 28] in [0, 1]: the gray level of each pixel after scaling to 28x28. */
  static Tensor readPicture(Path file) throws IOException {
    BufferedImage src = ImageIO.read(file.toFile());
    if (src == null) throw new IOException("ImageInference: " + file + " is not an image ImageIO can read");
    BufferedImage gray = src;
    if (src.getType() != BufferedImage.TYPE_BYTE_GRAY || src.getWidth() != 28 || src.getHeight() != 28) {
      gray = new BufferedImage(28, 28, BufferedImage.TYPE_BYTE_GRAY);   // a 28x28 gray picture is read as it is
      Graphics2D g = gray.createGraphics();
      g.setRenderingHint(RenderingHints.KEY_INTERPOLATION, RenderingHints.VALUE_INTERPOLATION_BILINEAR);
      g.drawImage(src, 0, 0, 28, 28, null);
      g.dispose();
    }
    float[] pixels = new float[28 * 28];
    for (int y = 0; y < 28; y++) {
      for (int x = 0; x < 28; x++) pixels[y * 28 + x] = gray.getRaster().getSample(x, y, 0) / 255f;
    }
    return Tensor.of(pixels, 1, 1, 28, 28);
  }

  /** The indices of the k largest values, largest first. */
  static int[] topK(float[] p, int k) {
    int[] order = new int[Math.min(k, p.length)];
    boolean[] taken = new boolean[p.length];
    for (int i = 0; i < order.length; i++) {
      int best = -1;
      for (int c = 0; c < p.length; c++) if (!taken[c] && (best < 0 || p[c] > p[best])) best = c;
      taken[best] = true;
      order[i] = best;
    }
    return order;
  }
}
