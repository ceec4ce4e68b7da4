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
 * the same small MLP student (784-64-10, same initial weights and batch order) three ways: alone on the labels,
 * distilled from the teacher ({@code DistillationLoss(T, alpha)}, 4 and 0.9 by default), and distilled with a hint from its hidden
 * layer to the teacher's 84-wide one. Adam 1e-3, batch 128. Prints one line per seed and model, then the means.
 *
 * <p>Run from the repository root (every argument optional; defaults: 3 seeds, 3 teacher epochs, 3 student epochs,
 * all 60000 training images, the data searched as {@link FashionCnn} does ({@code -} for DATA_DIR searches too),
 * T 4, alpha 0.9):
 * <pre>
 * scripts/mvn -q -pl examples -am test-compile exec:exec -Dexample=DistillFashion -Dargs="SEEDS TEACHER_EPOCHS STUDENT_EPOCHS LIMIT DATA_DIR T ALPHA"
 * </pre>
 * The last lines are {@code mean_alone=0.xxxx}, {@code mean_distilled=0.xxxx} and {@code mean_hint=0.xxxx}.
 */
public final class DistillFashion {
  private DistillFashion() {}

  /** The student: Flatten, Linear(784, 64), ReLU, Linear(64, 10); its hidden features are the output of "2". */
  public static Sequential student() {
    return new Sequential(new Flatten(), new Linear(784, 64), new ReLU(), new Linear(64, 10));
  }

  public static void main(String[] args) throws IOException {
    int seeds = args.length > 0 ? Integer.parseInt(args[0]) : 3;
    int teacherEpochs = args.length > 1 ? Integer.parseInt(args[1]) : 3;
    int studentEpochs = args.length > 2 ? Integer.parseInt(args[2]) : 3;
    int limit = args.length > 3 ? Integer.parseInt(args[3]) : 60_000;
    Path dataDir = args.length > 4 && !args[4].equals("-") ? Path.of(args[4]) : null;
    double temperature = args.length > 5 ? Double.parseDouble(args[5]) : 4.0;
    double alpha = args.length > 6 ? Double.parseDouble(args[6]) : 0.9;

    FashionMnist.Split split = FashionMnist.load(FashionMnist.locate(dataDir));
    TensorDataset trainSet = first(split.train(), limit);
    TensorDataset testSet = split.test();
    DataLoader test = new DataLoader(testSet, BatchConfig.sequential(1000));
    System.out.printf(Locale.ROOT, "train %d images, test %d; teacher %d epochs, student %d epochs, T=%s, alpha=%s%n",
        trainSet.size(), testSet.size(), teacherEpochs, studentEpochs, temperature, alpha);

    double[] sums = new double[4];
    for (int seed = 0; seed < seeds; seed++) {
      Generator.manualSeed(seed);
      Module teacher = Models.lenet5(10);
      fit(teacher, trainSet, seed, teacherEpochs, null);
      double tAcc = accuracy(teacher, test);

      Generator.manualSeed(1000 + seed);
      Module alone = student();
      fit(alone, trainSet, seed, studentEpochs, null);
      double aAcc = accuracy(alone, test);

      Generator.manualSeed(1000 + seed); // the same initial weights
      Module distilled = student();
      Distiller d = Distiller.builder(teacher, distilled).loss(new DistillationLoss(temperature, alpha)).build();
      fit(d, trainSet, seed, studentEpochs, d);
      double dAcc = accuracy(distilled, test);

      Generator.manualSeed(1000 + seed);
      Module hinted = student();
      Distiller h = Distiller.builder(teacher, hinted).loss(new DistillationLoss(temperature, alpha))
          .hint("2", "classifier.4", 64, 84, 0.1).generator(new Generator(2000 + seed)).build();
      fit(h, trainSet, seed, studentEpochs, h);
      h.close();
      double hAcc = accuracy(hinted, test);

      System.out.printf(Locale.ROOT, "seed=%d teacher=%.4f alone=%.4f distilled=%.4f hint=%.4f%n", seed, tAcc, aAcc,
          dAcc, hAcc);
      sums[0] += tAcc;
      sums[1] += aAcc;
      sums[2] += dAcc;
      sums[3] += hAcc;
    }
    System.out.printf(Locale.ROOT, "mean_teacher=%.4f%n", sums[0] / seeds);
    System.out.printf(Locale.ROOT, "mean_alone=%.4f%n", sums[1] / seeds);
    System.out.printf(Locale.ROOT, "mean_distilled=%.4f%n", sums[2] / seeds);
    System.out.printf(Locale.ROOT, "mean_hint=%.4f%n", sums[3] / seeds);
  }

  /** Adam 1e-3, batch 128 shuffled by {@code seed}; with a distiller, its loss, else cross entropy. */
  private static void fit(Module model, TensorDataset data, int seed, int epochs, Distiller distiller) {
    DataLoader train = new DataLoader(data, BatchConfig.shuffled(128, seed));
    Trainer.builder().maxEpochs(epochs).build()
        .fit(model, distiller == null ? F::crossEntropy : distiller::loss, new Adam(model.parameters(), 1e-3), train,
            null);
  }

  private static double accuracy(Module model, DataLoader test) {
    return Trainer.evaluate(model, null, test, List.of(new Accuracy())).get("accuracy");
  }

  private static TensorDataset first(TensorDataset d, int n) {
    int k = Math.min(n, d.size());
    return new TensorDataset(d.inputs().narrow(0, 0, k), d.targets().narrow(0, 0, k));
  }
}
