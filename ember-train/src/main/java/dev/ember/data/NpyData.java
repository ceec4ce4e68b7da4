package dev.ember.data;

import dev.ember.nn.io.Npy;
import dev.ember.nn.io.Npz;
import dev.ember.tensor.Tensor;
import java.io.IOException;
import java.nio.file.Path;
import java.util.Map;

/**
 * Data sets from NumPy files: whole arrays loaded with {@link Npy} / {@link Npz} (validated
 * strictly, see there), or a large {@code .npy} pair mapped and read by rows with
 * {@link MappedNpyDataset}.
 */
public final class NpyData {
  private NpyData() {}

  /** Inputs {@code [N, ...]} and targets {@code [N, ...]} from two .npy files, loaded whole. */
  public static TensorDataset load(Path inputs, Path targets) throws IOException {
    Tensor x = Npy.load(inputs);
    Tensor y = Npy.load(targets);
    checkRows(x, y, inputs, targets);
    return new TensorDataset(x, y);
  }

  /** Inputs and targets from two arrays of one .npz archive, by name (as numpy.savez was given them). */
  public static TensorDataset loadNpz(Path file, String inputsKey, String targetsKey) throws IOException {
    Map<String, Tensor> all = Npz.load(file);
    for (String k : new String[] {inputsKey, targetsKey}) {
      if (!all.containsKey(k)) {
        throw DataFormatException.at("npz", file, -1, "has no array '" + k + "'; it holds " + all.keySet());
      }
    }
    Tensor x = all.get(inputsKey), y = all.get(targetsKey);
    checkRows(x, y, file, file);
    return new TensorDataset(x, y);
  }

  /** A {@link MappedNpyDataset} over two .npy files (rows read on demand). */
  public static MappedNpyDataset map(Path inputs, Path targets) throws IOException {
    return MappedNpyDataset.open(inputs, targets);
  }

  private static void checkRows(Tensor x, Tensor y, Path xf, Path yf) throws DataFormatException {
    if (x.dim() == 0 || y.dim() == 0 || x.size(0) != y.size(0)) {
      throw DataFormatException.at("npy", yf, -1, "inputs and targets must have the same number of rows: "
          + xf.getFileName() + "=" + TensorDataset.DTypeShape.of(x) + ", " + yf.getFileName() + "=" + TensorDataset.DTypeShape.of(y));
    }
  }
}
