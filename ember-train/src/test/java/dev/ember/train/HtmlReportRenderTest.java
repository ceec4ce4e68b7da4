package dev.ember.train;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import dev.ember.train.report.HtmlReport;
import java.awt.image.BufferedImage;
import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import javax.imageio.ImageIO;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/**
 * Renders the report with headless Chromium and checks the picture: the train and validation
 * curves' stroke colors must be on screen, inside the chart area. Without a Chromium binary the
 * test is skipped, except on CI ({@code CI=true}), where it must run.
 */
class HtmlReportRenderTest {
  static final List<String> BINARIES = List.of("chromium", "chromium-browser", "google-chrome", "google-chrome-stable");

  /** $CHROMIUM, else the first of {@link #BINARIES} on the PATH, else null. */
  static Path findChromium() {
    String env = System.getenv("CHROMIUM");
    if (env != null && !env.isBlank() && Files.isExecutable(Path.of(env))) return Path.of(env);
    String path = System.getenv("PATH");
    if (path == null) return null;
    for (String name : BINARIES) {
      for (String d : path.split(File.pathSeparator)) {
        if (d.isEmpty()) continue;
        Path p = Path.of(d, name);
        if (Files.isRegularFile(p) && Files.isExecutable(p)) return p;
      }
    }
    return null;
  }

  /** Pixels within {@code tol} of {@code hex} per channel, and how many columns of the picture hold one. */
  static int[] count(BufferedImage img, String hex, int tol) {
    int c = Integer.parseInt(hex.substring(1), 16);
    int r = c >> 16 & 0xff;
    int g = c >> 8 & 0xff;
    int b = c & 0xff;
    int n = 0;
    boolean[] column = new boolean[img.getWidth()];
    for (int y = 0; y < img.getHeight(); y++) {
      for (int x = 0; x < img.getWidth(); x++) {
        int p = img.getRGB(x, y);
        if (Math.abs((p >> 16 & 0xff) - r) <= tol && Math.abs((p >> 8 & 0xff) - g) <= tol && Math.abs((p & 0xff) - b) <= tol) {
          n++;
          column[x] = true;
        }
      }
    }
    int cols = 0;
    for (boolean k : column) if (k) cols++;
    return new int[] {n, cols};
  }

  @Test
  void chromiumDrawsTheTrainAndValidationCurves() throws Exception {
    Path chromium = findChromium();
    if (chromium == null) {
      if ("true".equals(System.getenv("CI"))) {
        fail("HtmlReportRenderTest: no Chromium found (looked for $CHROMIUM and " + BINARIES
            + " on the PATH) and CI=true requires this test; hint: apt-get install -y chromium");
      }
      Assumptions.abort("no Chromium binary on the PATH (" + BINARIES + "); install it (apt-get install -y chromium) to run this test");
    }
    // the picture stays under target/ so that a person can look at it
    Path dir = Path.of("target", "report-render").toAbsolutePath();
    if (Files.exists(dir)) {
      try (var s = Files.walk(dir)) {
        for (Path p : s.sorted(java.util.Comparator.reverseOrder()).toList()) Files.delete(p);
      }
    }
    Path run = dir.resolve("run");
    SampleRun.write(run);
    Path html = HtmlReport.write(run, SampleRun.info());
    Path png = dir.resolve("report.png");
    List<String> cmd = new ArrayList<>(List.of(chromium.toString(), "--headless", "--disable-gpu", "--no-sandbox",
        "--hide-scrollbars", "--no-first-run", "--disable-extensions", "--user-data-dir=" + dir.resolve("profile"),
        "--screenshot=" + png, "--window-size=1200,1600", html.toUri().toString()));
    Process p = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(dir.resolve("chromium.log").toFile()).start();
    if (!p.waitFor(300, TimeUnit.SECONDS)) {
      p.destroyForcibly();
      fail("chromium did not finish within 300 s; see " + dir.resolve("chromium.log"));
    }
    assertTrue(Files.isRegularFile(png), "chromium wrote no screenshot (exit " + p.exitValue() + "): "
        + Files.readString(dir.resolve("chromium.log")));
    BufferedImage img = ImageIO.read(png.toFile());
    assertEquals(1200, img.getWidth());
    assertEquals(1600, img.getHeight());
    // The curve colors are used only by curves, their point markers and legend swatches. A curve spans its
    // chart's width (about 470 px; the validation curves start at epoch 2), so the columns holding the color
    // tell drawn curves from markers and swatches alone (16 markers x 7 px + 2 swatches x 20 px < 200 columns).
    int[] train = count(img, HtmlReport.TRAIN_COLOR, 12);
    int[] val = count(img, HtmlReport.VAL_COLOR, 12);
    assertTrue(train[1] > 700, "train curve color " + HtmlReport.TRAIN_COLOR + " in " + train[1] + " columns, " + train[0] + " pixels");
    assertTrue(val[1] > 600, "validation curve color " + HtmlReport.VAL_COLOR + " in " + val[1] + " columns, " + val[0] + " pixels");
    assertTrue(train[0] > 1500 && val[0] > 1000, "curve pixels: train " + train[0] + ", validation " + val[0]);
    // and the page is not blank elsewhere: a white page with only two colors would mean nothing else was drawn
    int white = count(img, "#ffffff", 0)[0];
    assertTrue(white < img.getWidth() * img.getHeight() * 0.97, "the page is almost blank");
  }
}
