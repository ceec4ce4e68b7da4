package dev.ember.backend.cpu;

import dev.ember.backend.RecurrentKernels;
import dev.ember.backend.View;
import dev.ember.tensor.DType;
import dev.ember.tensor.Storage;

/**
 * The LSTM cell's state update and backward as scalar passes: float32 reads its arrays directly and
 * computes in double as the Storage path does (the same bits without a dtype dispatch per element).
 *
 * <p>The whole-sequence steps ({@link #lstmStep} and the others): float32 runs the kernel set's passes
 * ({@link FloatKernels#lstmStep}, vectorized in the Vector API set) over fixed blocks of {@link #ROWS} rows, spread
 * over the threads when a step has {@link #PARALLEL_MIN} elements or more (each element's result does not depend on
 * the split); float64 runs the interface's double loops.
 */
final class CpuRecurrent implements RecurrentKernels {
  /** Rows per task of a step pass: fixed, so the split never depends on the thread count. */
  static final int ROWS = 8;
  /** Hidden units x rows of a step below which it stays on the calling thread. */
  static final int PARALLEL_MIN = 8192;

  private final CpuBackend be;

  CpuRecurrent(CpuBackend be) {
    this.be = be;
  }

  /** Runs {@code body(r0, rows)} over [0, n) in blocks of {@link #ROWS} rows, in parallel for a large step. */
  private static void rowBlocks(int n, int hs, java.util.function.BiConsumer<Integer, Integer> body) {
    int tasks = Parallel.chunks(n, ROWS);
    if ((long) n * hs < PARALLEL_MIN || tasks == 1) {
      body.accept(0, n);
      return;
    }
    Parallel.forEach(tasks, t -> body.accept(t * ROWS, Math.min(ROWS, n - t * ROWS)));
  }

  private static boolean f32(View... vs) {
    for (View v : vs) if (v.dtype() != DType.F32) return false;
    return true;
  }

  @Override
  public void lstmStep(View gates, View cPrev, View c, View tanhC, View h) {
    if (!f32(gates, cPrev, c, tanhC, h)) {
      RecurrentKernels.super.lstmStep(gates, cPrev, c, tanhC, h);
      return;
    }
    int n = gates.shapeRef()[0];
    int hs = gates.shapeRef()[1] / 4;
    float[] g = gates.storage().floats(), cp = cPrev.storage().floats(), cs = c.storage().floats();
    float[] ts = tanhC.storage().floats(), hh = h.storage().floats();
    int go = gates.offset(), cpo = cPrev.offset(), co = c.offset(), to = tanhC.offset(), ho = h.offset();
    FloatKernels k = be.floatKernels();
    rowBlocks(n, hs, (r0, rows) -> {
      int e = r0 * hs;
      k.lstmStep(g, go + 4 * e, cp, cpo + e, cs, co + e, ts, to + e, hh, ho + e, rows, hs);
    });
  }

  @Override
  public void lstmStepBackward(View act, View cPrev, View tanhC, View gh, View ghRec, View dc, View dGates) {
    if (!f32(act, cPrev, tanhC, gh, ghRec, dc, dGates)) {
      RecurrentKernels.super.lstmStepBackward(act, cPrev, tanhC, gh, ghRec, dc, dGates);
      return;
    }
    int n = act.shapeRef()[0];
    int hs = act.shapeRef()[1] / 4;
    float[] a = act.storage().floats(), cp = cPrev.storage().floats(), ts = tanhC.storage().floats();
    float[] g = gh.storage().floats(), gr = ghRec.storage().floats(), d = dc.storage().floats();
    float[] dg = dGates.storage().floats();
    int ao = act.offset(), cpo = cPrev.offset(), to = tanhC.offset(), go = gh.offset(), gro = ghRec.offset();
    int dco = dc.offset(), dgo = dGates.offset();
    FloatKernels k = be.floatKernels();
    rowBlocks(n, hs, (r0, rows) -> {
      int e = r0 * hs;
      k.lstmStepBackward(a, ao + 4 * e, cp, cpo + e, ts, to + e, g, go + e, gr, gro + e, d, dco + e, dg,
          dgo + 4 * e, rows, hs);
    });
  }

  @Override
  public void gruStep(View xg, View hg, View hPrev, View hn, View h) {
    if (!f32(xg, hg, hPrev, hn, h)) {
      RecurrentKernels.super.gruStep(xg, hg, hPrev, hn, h);
      return;
    }
    int n = xg.shapeRef()[0];
    int hs = xg.shapeRef()[1] / 3;
    float[] x = xg.storage().floats(), hgs = hg.storage().floats(), hp = hPrev.storage().floats();
    float[] hns = hn.storage().floats(), hh = h.storage().floats();
    int xo = xg.offset(), hgo = hg.offset(), hpo = hPrev.offset(), hno = hn.offset(), ho = h.offset();
    FloatKernels k = be.floatKernels();
    rowBlocks(n, hs, (r0, rows) -> {
      int e = r0 * hs;
      k.gruStep(x, xo + 3 * e, hgs, hgo + 3 * e, hp, hpo + e, hns, hno + e, hh, ho + e, rows, hs);
    });
  }

  @Override
  public void gruStepBackward(View act, View hn, View hPrev, View gh, View ghRec, View dx, View dhg, View dhPrev) {
    if (!f32(act, hn, hPrev, gh, ghRec, dx, dhg, dhPrev)) {
      RecurrentKernels.super.gruStepBackward(act, hn, hPrev, gh, ghRec, dx, dhg, dhPrev);
      return;
    }
    int n = act.shapeRef()[0];
    int hs = act.shapeRef()[1] / 3;
    float[] a = act.storage().floats(), hns = hn.storage().floats(), hp = hPrev.storage().floats();
    float[] g = gh.storage().floats(), gr = ghRec.storage().floats(), dxs = dx.storage().floats();
    float[] dhs = dhg.storage().floats(), dps = dhPrev.storage().floats();
    int ao = act.offset(), hno = hn.offset(), hpo = hPrev.offset(), go = gh.offset(), gro = ghRec.offset();
    int dxo = dx.offset(), dho = dhg.offset(), dpo = dhPrev.offset();
    FloatKernels k = be.floatKernels();
    rowBlocks(n, hs, (r0, rows) -> {
      int e = r0 * hs;
      k.gruStepBackward(a, ao + 3 * e, hns, hno + e, hp, hpo + e, g, go + e, gr, gro + e, dxs, dxo + 3 * e, dhs,
          dho + 3 * e, dps, dpo + e, rows, hs);
    });
  }

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
