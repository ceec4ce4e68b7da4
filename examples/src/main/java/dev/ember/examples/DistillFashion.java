package dev.ember.examples;

import dev.ember.data.BatchConfig;
import dev.ember.data.DataLoader;
import dev.ember.data.FashionMnist;
import dev.ember.data.TensorDataset;
import dev.ember.metrics.Accuracy;
import dev.ember.nn.Flatten;
import dev.ember.nn.Linear;
import dev.ember.nn.Models;
import dev.ember.nn.Module;
import dev.ember.nn.ReLU;
import dev.ember.nn.Sequential;
import dev.ember.nn.functional.F;
import dev.ember.nn.loss.DistillationLoss;
import dev.ember.optim.Adam;
import dev.ember.tensor.Generator;
import dev.ember.train.Distiller;
import dev.ember.train.Trainer;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;

/**
 * Knowledge distillation on Fashion-MNIST (issue #36's measurement): per seed, a LeNet-5 teacher is trained, then
 * the same small MLP student (784-HIDDEN-10, same initial weights and batch order) three ways: alone on the labels,
 * distilled from the teacher ({@code DistillationLoss(T, alpha)}), and distilled with a hint from its hidden layer to
 * the teacher's 84-wide one. Adam 1e-3, batch 128, the same epochs for the three students.
 *
 * <p>The last VAL images of the training file are held out as a validation set: nothing trains on them, and every
 * choice of setting (T, alpha, epochs, width) is made on their accuracy, never on the test set's. Each model's
 * accuracy is printed on both ({@code val_*} and the test set's without prefix), one line per seed, then the means
 * over the seeds and their sample standard deviations ({@code sd_*}).
 *
 * <p>The defaults are the setting chosen on the validation set (BENCHMARKS.md, "Distillation"): among T 1, 2, 3, 4
 * and alpha 0.5, 0.7, 0.9 with 3 student epochs, T 1 and alpha 0.5 had the best mean validation accuracy over 3 seeds
 * (0.2 points above the student trained alone; with 10 student epochs it was level), and the higher the temperature,
 * the worse (T 4, alpha 0.9 lost 1.4 points), as in PyTorch with the same models.
 *
 * <p>Run from the repository root (every argument optional; defaults: 3 seeds, 10 teacher epochs, 3 student epochs,
 * all 50000 training images left after the validation set, the data searched as {@link FashionCnn} does ({@code -}
 * for DATA_DIR searches too), T 1, alpha 0.5, HIDDEN 64, VAL 10000):
 * <pre>
 * scripts/mvn -q -pl examples -am test-compile exec:exec -Dexample=DistillFashion -Dargs="SEEDS TEACHER_EPOCHS STUDENT_EPOCHS LIMIT DATA_DIR T ALPHA HIDDEN VAL"
 * </pre>
 * The last lines are {@code mean_teacher}, {@code mean_alone}, {@code mean_distilled} and {@code mean_hint} (test
 * accuracies, each with its {@code sd_}), then the same for validation ({@code val_mean_alone=...}).
 */
public final class DistillFashion {
  private static final String[] ARMS = {"teacher", "alone", "distilled", "hint"};

  private DistillFashion() {}

  /** The default student: Flatten, Linear(784, 64), ReLU, Linear(64, 10); its hidden features are the output of "2". */
  public static Sequential student() {
    return student(64);
  }

  /** The student: Flatten, Linear(784, hidden), ReLU, Linear(hidden, 10); its hidden features are the output of "2". */
  public static Sequential student(int hidden) {
    return new Sequential(new Flatten(), new Linear(784, hidden), new ReLU(), new Linear(hidden, 10));
  }

  public static void main(String[] args) throws IOException {
    int seeds = args.length > 0 ? Integer.parseInt(args[0]) : 3;
    int teacherEpochs = args.length > 1 ? Integer.parseInt(args[1]) : 10;
    int studentEpochs = args.length > 2 ? Integer.parseInt(args[2]) : 3;
    int limit = args.length > 3 ? Integer.parseInt(args[3]) : 60_000;
    Path dataDir = args.length > 4 && !args[4].equals("-") ? Path.of(args[4]) : null;
    double temperature = args.length > 5 ? Double.parseDouble(args[5]) : 1.0;
    double alpha = args.length > 6 ? Double.parseDouble(args[6]) : 0.5;
    int hidden = args.length > 7 ? Integer.parseInt(args[7]) : 64;
    int val = args.length > 8 ? Integer.parseInt(args[8]) : 10_000;

    FashionMnist.Split split = FashionMnist.load(FashionMnist.locate(dataDir));
    TensorDataset all = split.train();
    if (val <= 0 || val >= all.size()) {
      throw new IllegalArgumentException("DistillFashion: VAL must be in 1.." + (all.size() - 1)
          + " (the validation images held out of the " + all.size() + " training images), got " + val);
    }
    int trainCount = Math.min(limit, all.size() - val);
    TensorDataset trainSet = slice(all, 0, trainCount);
    TensorDataset valSet = slice(all, all.size() - val, val);
    DataLoader valLoader = new DataLoader(valSet, BatchConfig.sequential(1000));
    DataLoader test = new DataLoader(split.test(), BatchConfig.sequential(1000));
    System.out.printf(Locale.ROOT, "train %d images, validation %d, test %d; teacher %d epochs, student 784-%d-10 %d"
            + " epochs, T=%s, alpha=%s%n", trainSet.size(), valSet.size(), split.test().size(), teacherEpochs, hidden,
        studentEpochs, temperature, alpha);

    double[][] testAcc = new double[ARMS.length][seeds];
    double[][] valAcc = new double[ARMS.length][seeds];
    for (int seed = 0; seed < seeds; seed++) {
      Generator.manualSeed(seed);
      Module teacher = Models.lenet5(10);
      fit(teacher, trainSet, seed, teacherEpochs, null);

      Generator.manualSeed(1000 + seed);
      Module alone = student(hidden);
      fit(alone, trainSet, seed, studentEpochs, null);

      Generator.manualSeed(1000 + seed); // the same initial weights
      Module distilled = student(hidden);
      Distiller d = Distiller.builder(teacher, distilled).loss(new DistillationLoss(temperature, alpha)).build();
      fit(d, trainSet, seed, studentEpochs, d);

      Generator.manualSeed(1000 + seed);
      Module hinted = student(hidden);
      Distiller h = Distiller.builder(teacher, hinted).loss(new DistillationLoss(temperature, alpha))
          .hint("2", "classifier.4", hidden, 84, 0.1).generator(new Generator(2000 + seed)).build();
      fit(h, trainSet, seed, studentEpochs, h);
      h.close();

      Module[] models = {teacher, alone, distilled, hinted};
      StringBuilder line = new StringBuilder("seed=" + seed);
      for (int a = 0; a < ARMS.length; a++) {
        testAcc[a][seed] = accuracy(models[a], test);
        valAcc[a][seed] = accuracy(models[a], valLoader);
        line.append(String.format(Locale.ROOT, " %s=%.4f", ARMS[a], testAcc[a][seed]));
      }
      for (int a = 0; a < ARMS.length; a++) {
        line.append(String.format(Locale.ROOT, " val_%s=%.4f", ARMS[a], valAcc[a][seed]));
      }
      System.out.println(line);
    }
    for (int a = 0; a < ARMS.length; a++) {
      System.out.printf(Locale.ROOT, "mean_%s=%.4f sd_%s=%.4f%n", ARMS[a], mean(testAcc[a]), ARMS[a], sd(testAcc[a]));
    }
    for (int a = 0; a < ARMS.length; a++) {
      System.out.printf(Locale.ROOT, "val_mean_%s=%.4f val_sd_%s=%.4f%n", ARMS[a], mean(valAcc[a]), ARMS[a],
          sd(valAcc[a]));
    }
  }

  /** Adam 1e-3, batch 128 shuffled by {@code seed}; with a distiller, its loss, else cross entropy. */
  private static void fit(Module model, TensorDataset data, int seed, int epochs, Distiller distiller) {
    DataLoader train = new DataLoader(data, BatchConfig.shuffled(128, seed));
    Trainer.builder().maxEpochs(epochs).build()
        .fit(model, distiller == null ? F::crossEntropy : distiller::loss, new Adam(model.parameters(), 1e-3), train,
            null);
  }

  private static double accuracy(Module model, DataLoader loader) {
    return Trainer.evaluate(model, null, loader, List.of(new Accuracy())).get("accuracy");
  }

  private static TensorDataset slice(TensorDataset d, int from, int n) {
    return new TensorDataset(d.inputs().narrow(0, from, n), d.targets().narrow(0, from, n));
  }

  static double mean(double[] v) {
    double s = 0;
    for (double x : v) s += x;
    return s / v.length;
  }

  /** The sample standard deviation (n - 1); 0 for one value. */
  static double sd(double[] v) {
    if (v.length < 2) return 0;
    double m = mean(v);
    double s = 0;
    for (double x : v) s += (x - m) * (x - m);
    return Math.sqrt(s / (v.length - 1));
  }
}
