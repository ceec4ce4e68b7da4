package dev.ember.train;

import dev.ember.autograd.Grad;
import dev.ember.nn.Linear;
import dev.ember.nn.Module;
import dev.ember.nn.ReLU;
import dev.ember.nn.Sequential;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import dev.ember.train.callbacks.CsvLogger;
import dev.ember.train.callbacks.HistogramLogger;
import dev.ember.train.callbacks.Profiling;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;

/** A run folder as a real fit leaves it, made by the callbacks themselves (driven by hand). */
final class SampleRun {
  static final int EPOCHS = 8;
  static final String[] CLASSES = {"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker",
      "Bag", "Ankle boot"};

  private SampleRun() {}

  /** metrics.csv (8 epochs; no validation in epoch 1), profile.json, histograms.jsonl and confusion_matrix.json. */
  static void write(Path dir) throws IOException {
    Files.createDirectories(dir);
    Profiling prof = new Profiling(null, dir.resolve("profile.json"));
    Generator gen = new Generator(3);
    Module model = new Sequential(new Linear(64, 32, true, gen), new ReLU(), new Linear(32, 10, true, gen));
    CallbackDriver d = new CallbackDriver(model, EPOCHS, 5, new CsvLogger(dir.resolve("metrics.csv")),
        prof, new HistogramLogger(dir.resolve("histograms.jsonl"), 10, 24));
    d.trainBegin();
    for (int e = 1; e <= EPOCHS; e++) {
      d.epochBegin(e);
      for (int b = 0; b < 5; b++) {
        // gradients shrinking over training, weights spreading a little: what the histograms should show
        for (Tensor p : model.parameters()) p.setGrad(Tensor.randn(gen, p.shape()).mul(0.05 / e));
        try (var ignored = Grad.off()) {
          for (Tensor p : model.parameters()) p.mul_(1.01);
        }
        d.batch(b, 0.3 + 1.0 / (e + 1), new long[] {200_000, 900_000, 60_000, 1_700_000, 300_000, 40_000});
      }
      double loss = 0.25 + 0.9 / (e + 0.5);
      LinkedHashMap<String, Double> train = new LinkedHashMap<>();
      train.put("loss", loss);
      train.put("accuracy", 0.93 - 0.35 / e);
      train.put("epoch_time_s", 2.0 + 0.1 * (e % 3));
      LinkedHashMap<String, Double> val = new LinkedHashMap<>();
      if (e > 1) {
        val.put("val_loss", loss + 0.03 * e);
        val.put("val_accuracy", 0.90 - 0.4 / e);
      }
      d.epochEnd(train, val);
    }
    d.trainEnd();
    StringBuilder cm = new StringBuilder("{\"labels\":[");
    for (int i = 0; i < CLASSES.length; i++) cm.append(i == 0 ? "" : ",").append('"').append(CLASSES[i]).append('"');
    cm.append("],\"matrix\":[");
    for (int i = 0; i < 10; i++) {
      cm.append(i == 0 ? "[" : ",[");
      for (int j = 0; j < 10; j++) {
        long v = i == j ? 850 + 13 * i % 120 : (i + 2 * j) % 7 == 0 ? 40 : (i * j) % 5;
        if (i == 6 && j == 0) v = 120;
        cm.append(j == 0 ? "" : ",").append(v);
      }
      cm.append(']');
    }
    cm.append("]}\n");
    Files.writeString(dir.resolve("confusion_matrix.json"), cm);
  }

  static Map<String, String> info() {
    LinkedHashMap<String, String> info = new LinkedHashMap<>();
    info.put("model", "lenet5 (61706 parameters)");
    info.put("optimizer", "adam lr=0.001");
    info.put("batch size", "64");
    info.put("epochs", Integer.toString(EPOCHS));
    info.put("test accuracy", "0.8874");
    info.put("note", "<script>alert(1)</script> & more");
    return info;
  }
}
