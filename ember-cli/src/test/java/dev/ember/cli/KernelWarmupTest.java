package dev.ember.cli;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.data.FashionLike;
import dev.ember.train.Trainer.Precision;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The kernel warm-up of {@code ember train}: it trains its throwaway copy, stops when told and changes no result. */
class KernelWarmupTest {
  @Test
  void trainsSyntheticStepsUntilClosed() throws InterruptedException {
    String old = System.getProperty(KernelWarmup.PROPERTY);
    try {
      System.setProperty(KernelWarmup.PROPERTY, "true");
      for (String model : new String[] {"mlp", "lenet"}) {
        KernelWarmup w = KernelWarmup.start(model, "adam", 1e-3, 16, Precision.F32, false);
        long deadline = System.nanoTime() + 60_000_000_000L;
        while (w.steps() < 2 && w.failure() == null && System.nanoTime() < deadline) Thread.sleep(5);
        w.close();
        assertNull(w.failure(), model + ": " + w.failure());
        int steps = w.steps();
        assertTrue(steps >= 2 && steps <= KernelWarmup.MAX_STEPS, model + ": " + steps + " steps");
        Thread.sleep(20);
        assertEquals(steps, w.steps(), model + ": no step after close");
      }
    } finally {
      if (old == null) System.clearProperty(KernelWarmup.PROPERTY);
      else System.setProperty(KernelWarmup.PROPERTY, old);
    }
  }

  @Test
  void onlyWithTheProperty() {
    String old = System.getProperty(KernelWarmup.PROPERTY);
    try {
      System.clearProperty(KernelWarmup.PROPERTY);
      assertFalse(KernelWarmup.enabled(), "off by default");
      assertNull(KernelWarmup.start("mlp", "adam", 1e-3, 16, Precision.F32, false));
      System.setProperty(KernelWarmup.PROPERTY, "false");
      assertFalse(KernelWarmup.enabled());
      System.setProperty(KernelWarmup.PROPERTY, "true");
      assertTrue(KernelWarmup.enabled());
    } finally {
      if (old == null) System.clearProperty(KernelWarmup.PROPERTY);
      else System.setProperty(KernelWarmup.PROPERTY, old);
    }
  }

  /** A run with the warm-up and one without end with the same weights, metrics (times aside) and accuracy. */
  @Test
  void changesNoResult(@TempDir Path tmp) throws IOException {
    Path data = Files.createDirectories(tmp.resolve("data"));
    Random rnd = new Random(3);
    FashionLike.write(data, "train", 300, rnd);
    FashionLike.write(data, "t10k", 100, rnd);
    String old = System.getProperty(KernelWarmup.PROPERTY);
    String[] outs = new String[2];
    try {
      for (int i = 0; i < 2; i++) {
        System.setProperty(KernelWarmup.PROPERTY, i == 0 ? "true" : "false");
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int code = Main.run(new String[] {"train", "--data", data.toString(), "--model", "lenet", "--epochs", "2",
            "--batch-size", "32", "--out", tmp.resolve("run" + i).toString(), "--quiet"},
            new PrintStream(out, true, StandardCharsets.UTF_8), new PrintStream(err, true, StandardCharsets.UTF_8));
        assertEquals(0, code, err.toString(StandardCharsets.UTF_8));
        String[] lines = out.toString(StandardCharsets.UTF_8).split("\n");
        outs[i] = lines[lines.length - 1];
      }
    } finally {
      if (old == null) System.clearProperty(KernelWarmup.PROPERTY);
      else System.setProperty(KernelWarmup.PROPERTY, old);
    }
    assertEquals(outs[0], outs[1]);
    assertArrayEquals(Files.readAllBytes(tmp.resolve("run0/model.safetensors")), Files.readAllBytes(tmp.resolve("run1/model.safetensors")));
    assertEquals(lossColumns(tmp.resolve("run0/metrics.csv")), lossColumns(tmp.resolve("run1/metrics.csv")));
  }

  /** metrics.csv without its time columns. */
  private static String lossColumns(Path csv) throws IOException {
    StringBuilder sb = new StringBuilder();
    String[] header = null;
    for (String line : Files.readAllLines(csv)) {
      String[] f = line.split(",");
      if (header == null) header = f;
      for (int i = 0; i < f.length; i++) {
        if (!header[i].endsWith("time_s")) sb.append(f[i]).append(',');
      }
      sb.append('\n');
    }
    return sb.toString();
  }
}
