package dev.ember.backend.cpu;

import dev.ember.backend.RecurrentKernels;
import dev.ember.backend.View;
import dev.ember.tensor.DType;
import dev.ember.tensor.Storage;

/**
 * The LSTM cell's state update and backward as scalar passes: float32 reads its arrays directly and
 * computes in double as the Storage path does (the same bits without a dtype dispatch per element).
 */
final class CpuRecurrent implements RecurrentKernels {
  CpuRecurrent() {}

  @Override
  public void lstmCellState(View act, View c, View out) {
    int n = act.shapeRef()[0];
    int hs = act.shapeRef()[1] / 4;
    Storage as = act.storage(), cs = c.storage(), os = out.storage();
    int co = c.offset(), nh = n * hs;
    boolean f32 = act.dtype() == DType.F32;
    float[] af = f32 ? as.floats() : null, cf = f32 ? cs.floats() : null, of = f32 ? os.floats() : null;
    for (int r = 0; r < n; r++) {
      int g0 = r * 4 * hs;
      for (int j = 0; j < hs; j++) {
        int ce = co + r * hs + j;
        if (f32) {
          of[nh + r * hs + j] = (float) ((double) af[g0 + hs + j] * cf[ce] + (double) af[g0 + j] * af[g0 + 2 * hs + j]);
        } else {
          os.setDouble(nh + r * hs + j, as.getDouble(g0 + hs + j) * cs.getDouble(ce)
              + as.getDouble(g0 + j) * as.getDouble(g0 + 2 * hs + j));
        }
      }
    }
  }

  @Override
  public void lstmCellHidden(View act, View tanhC, View out) {
    int n = act.shapeRef()[0];
    int hs = act.shapeRef()[1] / 4;
    Storage as = act.storage(), ts = tanhC.storage(), os = out.storage();
    boolean f32 = act.dtype() == DType.F32;
    float[] af = f32 ? as.floats() : null, tf = f32 ? ts.floats() : null, of = f32 ? os.floats() : null;
    for (int r = 0; r < n; r++) {
      for (int j = 0; j < hs; j++) {
        if (f32) of[r * hs + j] = (float) ((double) af[r * 4 * hs + 3 * hs + j] * tf[r * hs + j]);
        else os.setDouble(r * hs + j, as.getDouble(r * 4 * hs + 3 * hs + j) * ts.getDouble(r * hs + j));
      }
    }
  }

  @Override
  public void lstmCellBackward(View act, View tanhC, View gg, View cPrevT, View dGates, View dc) {
    int n = act.shapeRef()[0];
    int hs = act.shapeRef()[1] / 4;
    int nh = n * hs;
    Storage as = act.storage(), ts = tanhC.storage(), gs = gg.storage();
    int go = gg.offset();
    Storage dgs = dGates.storage(), dcs = dc.storage();
    Storage cPrev = cPrevT.storage();
    int cpo = cPrevT.offset();
    if (act.dtype() == DType.F32 && gg.dtype() == DType.F32) {
      lstmBackwardF32(as.floats(), ts.floats(), gs.floats(), go, cPrev.floats(), cpo, dgs.floats(), dcs.floats(), n,
          hs);
      return;
    }
    for (int r = 0; r < n; r++) {
      int g0 = r * 4 * hs;
      for (int j = 0; j < hs; j++) {
        int e = r * hs + j;
        double i = as.getDouble(g0 + j), f = as.getDouble(g0 + hs + j);
        double gt = as.getDouble(g0 + 2 * hs + j), o = as.getDouble(g0 + 3 * hs + j);
        double t = ts.getDouble(e);
        double dh = gs.getDouble(go + e);
        double dcNew = gs.getDouble(go + nh + e) + dh * o * (1 - t * t);
        dgs.setDouble(g0 + j, dcNew * gt * i * (1 - i));
        dgs.setDouble(g0 + hs + j, dcNew * cPrev.getDouble(cpo + e) * f * (1 - f));
        dgs.setDouble(g0 + 2 * hs + j, dcNew * i * (1 - gt * gt));
        dgs.setDouble(g0 + 3 * hs + j, dh * t * o * (1 - o));
        dcs.setDouble(e, dcNew * f);
      }
    }
  }

  /** The backward loop on float arrays, in double as the Storage loop computes it. */
  private static void lstmBackwardF32(float[] act, float[] tanhC, float[] g, int go, float[] cPrev, int cpo,
      float[] dGates, float[] dc, int n, int hs) {
    int nh = n * hs;
    for (int r = 0; r < n; r++) {
      int g0 = r * 4 * hs;
      for (int j = 0; j < hs; j++) {
        int e = r * hs + j;
        double i = act[g0 + j], f = act[g0 + hs + j];
        double gt = act[g0 + 2 * hs + j], o = act[g0 + 3 * hs + j];
        double t = tanhC[e];
        double dh = g[go + e];
        double dcNew = g[go + nh + e] + dh * o * (1 - t * t);
        dGates[g0 + j] = (float) (dcNew * gt * i * (1 - i));
        dGates[g0 + hs + j] = (float) (dcNew * cPrev[cpo + e] * f * (1 - f));
        dGates[g0 + 2 * hs + j] = (float) (dcNew * i * (1 - gt * gt));
        dGates[g0 + 3 * hs + j] = (float) (dh * t * o * (1 - o));
        dc[e] = (float) (dcNew * f);
      }
    }
  }
}
