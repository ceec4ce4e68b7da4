package dev.ember.cuda.kernels;

import static dev.ember.cuda.kernels.OnDevice.CPU;
import static dev.ember.cuda.kernels.OnDevice.assertClose;
import static dev.ember.cuda.kernels.OnDevice.layout;
import static dev.ember.cuda.kernels.OnDevice.random;

import dev.ember.backend.StridedView;
import dev.ember.backend.View;
import dev.ember.cuda.kernels.OnDevice.Layout;
import dev.ember.tensor.DType;
import java.util.Random;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** CudaIndexing against the CPU backend on random data, contiguous and strided; skipped without a GPU. */
class CudaIndexingGpuTest {
  private OnDevice dev;
  private CudaIndexing k;
  private final Random rnd = new Random(7);

  @BeforeEach
  void gpu() {
    dev = new OnDevice();
    k = new CudaIndexing(dev.ctx, dev.ctx.kernels());
  }

  @AfterEach
  void free() {
    if (dev != null) dev.close();
  }

  /** An index of {@code shape} and dtype with values in [0, bound). */
  private StridedView index(DType t, int bound, int... shape) {
    StridedView v = StridedView.allocate(t, shape);
    for (int i = 0; i < v.storage().size(); i++) v.storage().setLong(i, rnd.nextInt(bound));
    return v;
  }

  /**
   * An index of {@code shape} whose entries along {@code dim} are distinct within each line (so a scatter never
   * writes one target twice), values in [0, bound).
   */
  private StridedView distinctIndex(DType t, int bound, int dim, int... shape) {
    StridedView v = StridedView.allocate(t, shape);
    int[] st = v.stridesRef();
    long lines = v.numel() / shape[dim];
    for (long line = 0; line < lines; line++) {
      // the line's base offset: decompose over all dims but dim
      long rem = line;
      int base = 0;
      for (int d = shape.length - 1; d >= 0; d--) {
        if (d == dim) continue;
        base += (int) (rem % shape[d]) * st[d];
        rem /= shape[d];
      }
      java.util.List<Integer> perm = new java.util.ArrayList<>();
      for (int i = 0; i < bound; i++) perm.add(i);
      java.util.Collections.shuffle(perm, rnd);
      for (int i = 0; i < shape[dim]; i++) v.storage().setLong(base + i * st[dim], perm.get(i));
    }
    return v;
  }

  @Test
  void gatherMovesEveryDtypeExactly() {
    for (DType t : Elementwise.dtypes()) {
      for (DType it : new DType[] {DType.I64, DType.I32}) {
        for (Layout l : Layout.values()) {
          StridedView x = layout(random(rnd, t, 1 << 29, 5, 6), l);
          for (int dim = 0; dim < 2; dim++) {
            int[] ishape = dim == 0 ? new int[] {7, 4} : new int[] {3, 9};
            StridedView idx = index(it, x.shapeRef()[dim], ishape);
            StridedView expect = StridedView.allocate(t, ishape);
            CPU.gather(x, dim, idx, expect);
            View out = dev.upload(StridedView.allocate(t, ishape));
            k.gather(dev.upload(x), dim, dev.upload(idx), out);
            assertClose(expect, dev.download(out), 0, 0, "gather " + t + " index " + it + " dim " + dim + " " + l);
          }
        }
      }
    }
  }

  @Test
  void scatterWritesDistinctTargetsExactly() {
    for (DType t : Elementwise.dtypes()) {
      for (Layout l : Layout.values()) {
        for (int dim = 0; dim < 2; dim++) {
          int[] xshape = {5, 6};
          int[] ishape = dim == 0 ? new int[] {3, 4} : new int[] {4, 5};
          StridedView idx = distinctIndex(DType.I64, xshape[dim], dim, ishape);
          StridedView src = layout(random(rnd, t, 1000, 4, 6), l);
          StridedView base = random(rnd, t, 1000, xshape);
          StridedView expect = StridedView.allocate(t, xshape);
          CPU.copy(base, expect);
          CPU.scatter(expect, dim, idx, src, false);
          View out = dev.upload(layout(base, l));
          k.scatter(out, dim, dev.upload(idx), dev.upload(src), false);
          assertClose(expect, dev.download(out), 0, 0, "scatter " + t + " dim " + dim + " " + l);
        }
      }
    }
  }

  @Test
  void scatterAddAccumulatesDuplicates() {
    for (DType t : new DType[] {DType.F32, DType.F64, DType.I64, DType.I32}) {
      for (DType it : new DType[] {DType.I64, DType.I32}) {
        for (int dim = 0; dim < 2; dim++) {
          int[] xshape = {5, 6};
          int[] ishape = {40, 6};
          if (dim == 1) ishape = new int[] {5, 60};
          StridedView idx = index(it, xshape[dim], ishape); // many duplicates
          StridedView src = random(rnd, t, 1000, ishape);
          StridedView expect = random(rnd, t, 1000, xshape);
          View out = dev.upload(expect);
          CPU.scatter(expect, dim, idx, src, true);
          k.scatter(out, dim, dev.upload(idx), dev.upload(src), true);
          double tol = t == DType.F32 ? 1e-4 : t == DType.F64 ? 1e-12 : 0;
          assertClose(expect, dev.download(out), tol, tol, "scatter_add " + t + " index " + it + " dim " + dim);
        }
      }
    }
  }

  @Test
  void indexSelectTakesSlicesAlongAnyDim() {
    for (DType t : Elementwise.dtypes()) {
      for (Layout l : Layout.values()) {
        StridedView x = layout(random(rnd, t, 1000, 5, 7, 3), l);
        for (int dim = 0; dim < 3; dim++) {
          StridedView idx = index(DType.I64, x.shapeRef()[dim], 8);
          // a strided 1-d index: every other element of a longer one
          StridedView wide = index(DType.I32, x.shapeRef()[dim], 16);
          StridedView idx2 = new StridedView(wide.storage(), new int[] {8}, new int[] {2}, 0);
          for (StridedView ix : new StridedView[] {idx, idx2}) {
            int[] oshape = x.shapeRef().clone();
            oshape[dim] = 8;
            StridedView expect = StridedView.allocate(t, oshape);
            CPU.indexSelect(x, dim, ix, expect);
            View out = dev.upload(StridedView.allocate(t, oshape));
            k.indexSelect(dev.upload(x), dim, dev.upload(ix), out);
            assertClose(expect, dev.download(out), 0, 0, "index_select " + t + " dim " + dim + " " + l + " index "
                + ix.dtype());
          }
        }
      }
    }
  }

  @Test
  void indexAddAccumulatesRepeatedPositions() {
    for (DType t : new DType[] {DType.F32, DType.F64, DType.I64, DType.I32}) {
      for (Layout l : Layout.values()) {
        for (int dim = 0; dim < 2; dim++) {
          int[] oshape = {5, 7};
          StridedView idx = index(DType.I64, oshape[dim], 12);
          int[] sshape = oshape.clone();
          sshape[dim] = 12;
          StridedView src = layout(random(rnd, t, 1000, sshape), l);
          StridedView expect = random(rnd, t, 1000, oshape);
          View out = dev.upload(layout(expect, l));
          CPU.indexAdd(expect, dim, idx, src);
          k.indexAdd(out, dim, dev.upload(idx), dev.upload(src));
          double tol = t == DType.F32 ? 1e-4 : t == DType.F64 ? 1e-12 : 0;
          assertClose(expect, dev.download(out), tol, tol, "index_add " + t + " dim " + dim + " " + l);
        }
      }
    }
  }
}
