package dev.ember.data;

import dev.ember.nn.io.Npy;
import dev.ember.nn.io.NpyException;
import dev.ember.tensor.DType;
import dev.ember.tensor.Tensor;
import dev.ember.tensor.TensorData;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Arrays;

/**
 * Samples read on demand from two memory-mapped {@code .npy} files: row {@code i} of the inputs
 * {@code [N, ...]} and of the targets {@code [N, ...]}. Only the rows asked for are copied onto
 * the heap, so the files may be far larger than memory (and than 2 GB). Headers are validated by
 * {@link Npy#header} with the same checks as {@link Npy#load}, before anything is mapped, and a
 * bool array's bytes are checked to be 0 or 1 when it is opened, as {@link Npy#load} checks them.
 *
 * <p>Safe for concurrent reads. {@link #close()} unmaps the files; reading afterwards throws
 * {@link IllegalStateException}.
 */
public final class MappedNpyDataset implements BatchDataset, AutoCloseable {
  private final Arena arena = Arena.ofShared();
  private final Column inputs;
  private final Column targets;

  private MappedNpyDataset(Path inputs, Path targets) throws IOException {
    try {
      this.inputs = new Column(inputs, arena);
      this.targets = new Column(targets, arena);
    } catch (IOException | RuntimeException e) {
      arena.close();
      throw e;
    }
    if (this.inputs.rows != this.targets.rows) {
      arena.close();
      throw DataFormatException.at("npy", targets, -1, "holds " + this.targets.rows + " rows but " + inputs.getFileName()
          + " holds " + this.inputs.rows + " (shapes " + Arrays.toString(this.targets.shape) + " and "
          + Arrays.toString(this.inputs.shape) + ")");
    }
  }

  /** Maps {@code inputs} and {@code targets}, two C-ordered .npy files with the same first dimension. */
  public static MappedNpyDataset open(Path inputs, Path targets) throws IOException {
    return new MappedNpyDataset(inputs, targets);
  }

  @Override
  public int size() {
    return inputs.rows;
  }

  @Override
  public Sample get(int index) {
    Dataset.checkIndex("MappedNpyDataset.get", index, size());
    int[] one = {index};
    return new Sample(inputs.read(one).reshape(inputs.rowShape), targets.read(one).reshape(targets.rowShape));
  }

  @Override
  public Batch getBatch(int[] indices) {
    if (indices == null || indices.length == 0) {
      throw new IllegalArgumentException("MappedNpyDataset.getBatch: expected at least one index");
    }
    for (int i : indices) Dataset.checkIndex("MappedNpyDataset.getBatch", i, size());
    return new Batch(inputs.read(indices), targets.read(indices));
  }

  /** Shape of the whole inputs array. */
  public int[] inputShape() {
    return inputs.shape.clone();
  }

  /** Shape of the whole targets array. */
  public int[] targetShape() {
    return targets.shape.clone();
  }

  @Override
  public void close() {
    arena.close();
  }

  @Override
  public String toString() {
    return "MappedNpyDataset(inputs=" + TensorDataset.DTypeShape.of(inputs.dtype, inputs.shape) + ", targets="
        + TensorDataset.DTypeShape.of(targets.dtype, targets.shape) + ")";
  }

  /** One mapped array, read by rows. */
  private static final class Column {
    final Path file;
    final DType dtype;
    final int[] shape;
    final int[] rowShape;
    final int rows;
    final int rowElems;
    final MemorySegment data;
    final ValueLayout layout;

    Column(Path file, Arena arena) throws IOException {
      Npy.Header h = Npy.header(file);
      this.file = file;
      this.dtype = h.dtype();
      this.shape = h.shape();
      if (shape.length == 0) {
        throw DataFormatException.at("npy", file, -1, "holds a 0-d array; a data set needs rows (shape [N, ...])");
      }
      if (h.fortran() && shape.length > 1) {
        throw DataFormatException.at("npy", file, -1, "is fortran_order, so its rows are not contiguous and cannot be read "
            + "one by one; hint: save it C-ordered (numpy.ascontiguousarray) or load it whole with NpyData.load");
      }
      this.rows = shape[0];
      this.rowShape = Arrays.copyOfRange(shape, 1, shape.length);
      long perRow = 1;
      for (int d : rowShape) perRow *= d;
      this.rowElems = (int) perRow; // Npy.header checked that the whole array fits an int
      long bytes = h.numel() * dtype.itemSize();
      try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ)) {
        this.data = bytes == 0 ? MemorySegment.NULL : ch.map(FileChannel.MapMode.READ_ONLY, h.dataStart(), bytes, arena);
      }
      if (dtype == DType.BOOL) checkBools(file, data, bytes, h.dataStart());
      ByteOrder order = h.order();
      this.layout = switch (dtype) {
        case F32 -> ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(order);
        case F64 -> ValueLayout.JAVA_DOUBLE_UNALIGNED.withOrder(order);
        case I64 -> ValueLayout.JAVA_LONG_UNALIGNED.withOrder(order);
        case I32 -> ValueLayout.JAVA_INT_UNALIGNED.withOrder(order);
        case BOOL, I8 -> ValueLayout.JAVA_BYTE;
        case F16 -> ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(order);
        case BF16 -> throw new IllegalArgumentException("MappedNpyDataset: .npy has no bfloat16 dtype, got one in "
            + file);
      };
    }

    /**
     * Every byte of a bool array is 0 or 1, checked once at open as {@link Npy#load} checks it (a
     * byte such as 2 would read as a third truth value). Eight bytes at a time: a word of 0/1 bytes
     * has no bit set outside each byte's lowest.
     */
    private static void checkBools(Path file, MemorySegment data, long bytes, long dataStart) throws NpyException {
      ValueLayout.OfLong word = ValueLayout.JAVA_LONG_UNALIGNED;
      long i = 0;
      for (; i + 8 <= bytes; i += 8) {
        if ((data.get(word, i) & 0xfefefefefefefefeL) != 0) break; // the byte loop below finds which
      }
      for (; i < bytes; i++) {
        byte b = data.get(ValueLayout.JAVA_BYTE, i);
        if (b != 0 && b != 1) {
          throw new NpyException(file, null, String.format("bool element %d (byte %d) is 0x%02x, not 0 or 1", i,
              dataStart + i, b & 0xff));
        }
      }
    }

    /** Rows {@code idx}, stacked: {@code [idx.length, ...rowShape]}. */
    Tensor read(int[] idx) {
      int[] outShape = new int[shape.length];
      outShape[0] = idx.length;
      System.arraycopy(rowShape, 0, outShape, 1, rowShape.length);
      Tensor out = Tensor.empty(dtype, outShape);
      ValueLayout element = dtype == DType.BOOL ? ValueLayout.JAVA_BYTE : layout;
      long rowBytes = (long) rowElems * dtype.itemSize();
      for (int k = 0; k < idx.length; k++) {
        long from = idx[k] * rowBytes;
        int at = k * rowElems;
        if (dtype == DType.BOOL) {
          for (int j = at; j < at + rowElems; j++) {
            byte b = data.get(ValueLayout.JAVA_BYTE, from + j - at);
            if (b != 0 && b != 1) {
              throw new IllegalStateException("npy: " + file + ": bool element " + ((long) idx[k] * rowElems + j - at)
                  + " is " + b + ", not 0 or 1");
            }
          }
        }
        TensorData.write(data, element, from, out, at, rowElems);
      }
      return out;
    }
  }
}
