package dev.ember.backend.cpu;

import dev.ember.backend.BinaryOp;
import dev.ember.backend.StridedView;
import dev.ember.backend.View;
import dev.ember.tensor.Device;
import dev.ember.tensor.Shapes;
import dev.ember.tensor.Storage;

/** Gather, scatter and index-select loops (validated indices: the op layer checks bounds first). */
final class Indexing {
  private Indexing() {}

  static void gather(View x, int dim, View index, View out) {
    int[] shape = index.shapeRef();
    long n = Shapes.numel(shape);
    Storage xs = x.storage();
    Storage is = index.storage();
    Storage os = out.storage();
    int[] xst = x.stridesRef();
    for (long e = 0; e < n; e++) {
      int io = Strided.elementOffset(e, shape, index.stridesRef(), index.offset());
      int oo = Strided.elementOffset(e, shape, out.stridesRef(), out.offset());
      int xo = x.offset();
      long rem = e;
      for (int d = shape.length - 1; d >= 0; d--) {
        int i = (int) (rem % shape[d]);
        rem /= shape[d];
        xo += (d == dim ? (int) is.getLong(io) : i) * xst[d];
      }
      os.setDouble(oo, xs.getDouble(xo));
    }
  }

  static void scatter(View out, int dim, View index, View src, boolean accumulate) {
    int[] shape = index.shapeRef();
    long n = Shapes.numel(shape);
    Storage ss = src.storage();
    Storage is = index.storage();
    Storage os = out.storage();
    int[] ost = out.stridesRef();
    for (long e = 0; e < n; e++) {
      int io = Strided.elementOffset(e, shape, index.stridesRef(), index.offset());
      int so = Strided.elementOffset(e, shape, src.stridesRef(), src.offset());
      int oo = out.offset();
      long rem = e;
      for (int d = shape.length - 1; d >= 0; d--) {
        int i = (int) (rem % shape[d]);
        rem /= shape[d];
        oo += (d == dim ? (int) is.getLong(io) : i) * ost[d];
      }
      double v = ss.getDouble(so);
      os.setDouble(oo, accumulate ? os.getDouble(oo) + v : v);
    }
  }

  static void indexSelect(View x, int dim, View index, View out) {
    int count = index.shapeRef()[0];
    Storage is = index.storage();
    for (int i = 0; i < count; i++) {
      int src = (int) is.getLong(index.offset() + i * index.stridesRef()[0]);
      View from = StridedView.select(x, dim, src);
      View to = StridedView.select(out, dim, i);
      Device.CPU.backend().copy(from, to);
    }
  }

  static void indexAdd(View out, int dim, View index, View src) {
    int count = index.shapeRef()[0];
    Storage is = index.storage();
    for (int i = 0; i < count; i++) {
      int dst = (int) is.getLong(index.offset() + i * index.stridesRef()[0]);
      View to = StridedView.select(out, dim, dst);
      View from = StridedView.select(src, dim, i);
      Device.CPU.backend().binary(BinaryOp.ADD, to, from, to);
    }
  }
}
