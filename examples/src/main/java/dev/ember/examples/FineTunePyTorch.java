package dev.ember.examples;

import dev.ember.autograd.Grad;
import dev.ember.data.Batch;
import dev.ember.data.BatchConfig;
import dev.ember.data.BatchIterator;
import dev.ember.data.DataLoader;
import dev.ember.data.TensorDataset;
import dev.ember.nn.Linear;
import dev.ember.nn.ReLU;
import dev.ember.nn.Sequential;
import dev.ember.nn.functional.F;
import dev.ember.nn.io.SafeTensors;
import dev.ember.optim.Adam;
import dev.ember.tensor.DType;
import dev.ember.tensor.MemoryScope;
import dev.ember.tensor.Tensor;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Locale;
import java.util.Map;
import java.util.Random;

/**
 * Loads weights that PyTorch trained and saved as safetensors, checks that Ember computes the same
 * outputs as PyTorch did, then fine-tunes the model on shifted data and saves it again (the file
 * loads back into the same PyTorch model).
 *
 * <p>The PyTorch side is {@code examples/pytorch/make_finetune_fixture.py}: it trained
 * {@code nn.Sequential(nn.Linear(2, 32), nn.ReLU(), nn.Linear(32, 3))} on three Gaussian blobs and
 * wrote {@code pytorch-mlp.safetensors} (its {@code state_dict()}: {@code 0.weight}, {@code 0.bias},
 * {@code 2.weight}, {@code 2.bias}) and {@code pytorch-mlp-check.safetensors} (a fixed input and
 * PyTorch's logits for it), both shipped in this module's resources. Ember's {@link Sequential}
 * names its children 0, 1, 2 as PyTorch does, so the keys match one to one. Here the blobs have
 * moved by (1.5, 1.5): the pretrained model gets about three in four right, and a few epochs of
 * fine-tuning bring it back above 95%.
 *
 * <p>Run from the repository root (arguments optional; defaults: the shipped PyTorch files,
 * 5 epochs, {@code runs/finetuned.safetensors}):
 * <pre>
 * scripts/mvn -q -pl examples -am test-compile exec:exec -Dexample=FineTunePyTorch -Dargs="WEIGHTS CHECK EPOCHS OUT"
 * </pre>
 * It prints {@code pytorch_max_abs_diff=...} (and stops if that exceeds 1e-5), then
 * {@code accuracy_before=...} and {@code accuracy_after=...}.
 */
public final class FineTunePyTorch {
  private FineTunePyTorch() {}

  /** The blob centres the PyTorch model was trained on (CENTRES in make_finetune_fixture.py). */
  static final double[][] PRETRAIN_CENTRES = {{0, 2}, {-2, -1}, {2, -1}};
  /** How far the blobs moved in the data we fine-tune on. */
  static final double SHIFT = 1.5;
  /** The largest difference between Ember's and PyTorch's logits that passes as the same model. */
  static final double TOLERANCE = 1e-5;

  public static void main(String[] args) throws IOException {
    Path weights = args.length > 0 ? Path.of(args[0]) : resource("pytorch-mlp.safetensors");
    Path check = args.length > 1 ? Path.of(args[1]) : resource("pytorch-mlp-check.safetensors");
    int epochs = args.length > 2 ? Integer.parseInt(args[2]) : 5;
    Path out = Path.of(args.length > 3 ? args[3] : "runs/finetuned.safetensors");

    // 1. The same architecture as in PyTorch, then PyTorch's weights (strict: every key must match).
    Sequential model = new Sequential(new Linear(2, 32), new ReLU(), new Linear(32, 3));
    model.loadStateDict(SafeTensors.load(weights));

    // 2. Same outputs as PyTorch on the input it saved?
    Map<String, Tensor> expected = SafeTensors.load(check);
    model.eval();
    double diff;
    try (var ignored = Grad.off()) {
      diff = model.call(expected.get("input")).sub(expected.get("output")).abs().max().item();
    }
    System.out.printf(Locale.ROOT, "pytorch_max_abs_diff=%.3e%n", diff);
    if (!(diff <= TOLERANCE)) {
      throw new IllegalStateException("FineTunePyTorch: Ember's outputs differ from PyTorch's by " + diff + " (tolerance "
          + TOLERANCE + "): " + weights + " does not hold the model " + check + " was made with");
    }

    // 3. Fine-tune on the shifted blobs: 480 samples train, 120 test.
    TensorDataset data = blobs(600, SHIFT, 1);
    Tensor xTest = data.inputs().narrow(0, 480, 120);
    Tensor yTest = data.targets().narrow(0, 480, 120);
    System.out.printf(Locale.ROOT, "accuracy_before=%.4f%n", accuracy(model, xTest, yTest));

    DataLoader train = new DataLoader(
        new TensorDataset(data.inputs().narrow(0, 0, 480), data.targets().narrow(0, 0, 480)), BatchConfig.shuffled(32, 0));
    Adam opt = new Adam(model.parameters(), 1e-2);
    model.train();
    for (int epoch = 0; epoch < epochs; epoch++) {
      try (BatchIterator it = train.iterate(epoch, 0)) {
        while (it.hasNext()) {
          Batch b = it.next();
          try (MemoryScope step = MemoryScope.open()) {
            opt.zeroGrad();
            F.crossEntropy(model.call(b.input()), b.target()).backward();
            opt.step();
          }
        }
      }
    }
    System.out.printf(Locale.ROOT, "accuracy_after=%.4f%n", accuracy(model, xTest, yTest));

    // 4. Save: safetensors.torch.load_file(OUT) then model.load_state_dict(...) in PyTorch.
    if (out.getParent() != null) Files.createDirectories(out.getParent());
    SafeTensors.save(model.stateDict(), out);
    System.out.println("weights: " + out);
  }

  static double accuracy(Sequential model, Tensor x, Tensor y) {
    model.eval();
    try (var ignored = Grad.off()) {
      return model.call(x).argmax(1, false).eq(y).to(DType.F32).mean().item();
    }
  }

  /** {@code n} points around {@link #PRETRAIN_CENTRES} moved by {@code shift} on both axes, standard deviation 0.7. */
  static TensorDataset blobs(int n, double shift, long seed) {
    Random rnd = new Random(seed);
    float[] x = new float[2 * n];
    long[] y = new long[n];
    for (int i = 0; i < n; i++) {
      int c = rnd.nextInt(3);
      y[i] = c;
      x[2 * i] = (float) (PRETRAIN_CENTRES[c][0] + shift + 0.7 * rnd.nextGaussian());
      x[2 * i + 1] = (float) (PRETRAIN_CENTRES[c][1] + shift + 0.7 * rnd.nextGaussian());
    }
    return new TensorDataset(Tensor.of(x, n, 2), Tensor.of(y, n));
  }

  /** A file shipped in this module's resources, copied out so that it can be opened as a path (also from a jar). */
  static Path resource(String name) throws IOException {
    try (InputStream in = FineTunePyTorch.class.getResourceAsStream(name)) {
      if (in == null) throw new IOException("FineTunePyTorch: resource " + name + " is missing from the classpath");
      Path tmp = Files.createTempFile("ember-example-", "-" + name);
      tmp.toFile().deleteOnExit();
      Files.copy(in, tmp, StandardCopyOption.REPLACE_EXISTING);
      return tmp;
    }
  }
}
