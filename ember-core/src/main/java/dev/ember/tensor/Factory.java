package dev.ember.tensor;

/** Creation routines behind Tensor's static factories. Random fills run sequentially: same seed, same numbers. */
final class Factory {
  private Factory() {}

  static Tensor fromArray(Storage s, int[] shape, int length) {
    int[] sh = shape.length == 0 ? new int[] {length} : shape.clone();
    Tensor.checkShape("of", sh);
    if (Shapes.numel(sh) != length) {
      throw Check.fail("of", "shape " + Shapes.str(sh) + " needs " + Shapes.numel(sh) + " elements, got " + length,
          "shape", sh);
    }
    return new Tensor(s, sh, Shapes.contiguousStrides(sh), 0);
  }

  static Tensor fromRows(float[][] rows) {
    int cols = rows.length == 0 ? 0 : rows[0].length;
    float[] data = new float[rows.length * cols];
    for (int r = 0; r < rows.length; r++) {
      if (rows[r].length != cols) {
        throw Check.fail("of", "ragged rows: row 0 has " + cols + " elements, row " + r + " has " + rows[r].length);
      }
      System.arraycopy(rows[r], 0, data, r * cols, cols);
    }
    return fromArray(Storage.wrap(data), new int[] {rows.length, cols}, data.length);
  }

  static Tensor fromRows(double[][] rows) {
    int cols = rows.length == 0 ? 0 : rows[0].length;
    double[] data = new double[rows.length * cols];
    for (int r = 0; r < rows.length; r++) {
      if (rows[r].length != cols) {
        throw Check.fail("of", "ragged rows: row 0 has " + cols + " elements, row " + r + " has " + rows[r].length);
      }
      System.arraycopy(rows[r], 0, data, r * cols, cols);
    }
    return fromArray(Storage.wrap(data), new int[] {rows.length, cols}, data.length);
  }

  static Tensor arange(double start, double end, double step, DType dtype) {
    if (step == 0 || Double.isNaN(step)) throw Check.fail("arange", "step must be non-zero, got " + step);
    if ((end - start) / step < 0) {
      throw Check.fail("arange", "upper bound and step are inconsistent (start " + start + ", end " + end + ", step " + step + ")");
    }
    long n = (long) Math.ceil((end - start) / step);
    Tensor t = Tensor.empty(dtype, (int) n);
    Storage s = t.storage();
    for (int i = 0; i < n; i++) s.setDouble(i, start + i * step);
    return t;
  }

  static Tensor linspace(double start, double end, int steps, DType dtype) {
    if (steps < 0) throw Check.fail("linspace", "number of steps must be non-negative, got " + steps);
    Tensor t = Tensor.empty(dtype, steps);
    Storage s = t.storage();
    double step = steps > 1 ? (end - start) / (steps - 1) : 0;
    // as PyTorch: the first half counts up from start, the second half down from end (symmetric rounding)
    int half = steps / 2;
    for (int i = 0; i < steps; i++) {
      s.setDouble(i, i < half || steps == 1 ? start + step * i : end - step * (steps - 1 - i)); // torch: steps 1 gives [start]
    }
    return t;
  }

  static Tensor eye(int n, int m, DType dtype) {
    Tensor t = Tensor.empty(dtype, n, m);
    for (int i = 0; i < Math.min(n, m); i++) t.storage().setDouble(i * m + i, 1);
    return t;
  }

  static Tensor rand(Generator gen, DType dtype, int[] shape) {
    Check.floatingType("rand", dtype);
    if (dtype.isHalf()) { // as torch: the half dtype's significand bits of each output, exact in it and below 1
      Tensor f = Tensor.empty(DType.F32, shape);
      gen.fillUniform(f.storage().floats(), 0, f.storage().size(), 0, 1, dtype.digits());
      return f.to(dtype);
    }
    Tensor t = Tensor.empty(dtype, shape);
    Storage s = t.storage();
    int n = s.size();
    // fma(u, 1, 0) is u: the numbers of nextFloat() / nextDouble()
    if (dtype == DType.F32) gen.fillUniform(s.floats(), 0, n, 0, 1);
    else gen.fillUniform(s.doubles(), 0, n, 0, 1);
    return t;
  }

  static Tensor randn(Generator gen, DType dtype, int[] shape) {
    Check.floatingType("randn", dtype);
    if (dtype.isHalf()) return randn(gen, DType.F32, shape).to(dtype); // float32's numbers, rounded once
    Tensor t = Tensor.empty(dtype, shape);
    Storage s = t.storage();
    if (dtype == DType.F32) gen.fillNormal(s.floats(), 0, s.size(), 0, 1);
    else gen.fillNormal(s.doubles(), 0, s.size(), 0, 1);
    return t;
  }

  static Tensor randint(Generator gen, long low, long high, int[] shape) {
    if (high <= low) throw Check.fail("randint", "low must be below high, got low=" + low + ", high=" + high);
    Tensor t = Tensor.empty(DType.I64, shape);
    long[] a = t.storage().longs();
    for (int i = 0; i < a.length; i++) a[i] = low + gen.nextLong(high - low);
    return t;
  }

  static Tensor randperm(Generator gen, int n) {
    if (n < 0) throw Check.fail("randperm", "n must be non-negative, got " + n);
    Tensor t = Tensor.empty(DType.I64, n);
    long[] a = t.storage().longs();
    int[] p = gen.permutation(n);
    for (int i = 0; i < n; i++) a[i] = p[i];
    return t;
  }

  static Tensor bernoulli(Generator gen, Tensor p) {
    Check.floating("bernoulli", p);
    if (!p.device().isCpu()) return bernoulli(gen, p.cpu()).to(p.device()); // drawn on the host, as on the CPU
    Tensor src = p.contiguous();
    Tensor out = Tensor.empty(p.dtype(), p.shapeRef());
    Storage in = src.storage();
    Storage s = out.storage();
    for (int i = 0; i < s.size(); i++) {
      double pi = in.getDouble(src.offset() + i);
      if (!(pi >= 0 && pi <= 1)) {
        throw Check.fail("bernoulli", "probabilities must be in [0, 1], got " + pi + " at flat index " + i, "p", p);
      }
      // as PyTorch: a float64 p is compared with a 53-bit uniform, a float32 p with a 24-bit one
      boolean one = src.dtype() == DType.F64 ? gen.nextDouble() < pi : gen.nextFloat() < (float) pi;
      s.setDouble(i, one ? 1 : 0);
    }
    return out;
  }
}
