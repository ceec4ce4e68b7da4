package dev.ember.backend.cpu.vector;

import dev.ember.backend.UnaryOp;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorSpecies;

/**
 * The float32 gate passes of the whole-sequence LSTM and GRU on the Vector API (the contract of
 * {@code ScalarRecurrent}, see {@link dev.ember.backend.RecurrentKernels}): per row, the sigmoids and tanhs run as
 * the vectorized unary kernels over each gate block in place, and the state updates and the backward as vector
 * loops with a scalar tail of the same float operations. Every element's result depends only on its inputs and
 * its place in the row, so splitting the rows over threads does not change a bit.
 */
final class VectorRecurrent {
  private static final VectorSpecies<Float> S = FloatVector.SPECIES_PREFERRED;
  private static final int L = S.length();

  private VectorRecurrent() {}

  private static void sigmoid(float[] x, int o, int n) {
    VectorKernels.unary(UnaryOp.SIGMOID, 0f, x, o, x, o, n);
  }

  private static void tanh(float[] x, int o, float[] out, int oo, int n) {
    VectorKernels.unary(UnaryOp.TANH, 0f, x, o, out, oo, n);
  }

  static void lstmStep(float[] gates, int go, float[] cPrev, int cpo, float[] c, int co, float[] tanhC, int to,
      float[] h, int ho, int rows, int hs) {
    int vec = hs - hs % L;
    for (int r = 0; r < rows; r++) {
      int g0 = go + r * 4 * hs;
      int e0 = r * hs;
      sigmoid(gates, g0, 2 * hs);
      tanh(gates, g0 + 2 * hs, gates, g0 + 2 * hs, hs);
      sigmoid(gates, g0 + 3 * hs, hs);
      int j = 0;
      for (; j < vec; j += L) {
        FloatVector i = FloatVector.fromArray(S, gates, g0 + j);
        FloatVector f = FloatVector.fromArray(S, gates, g0 + hs + j);
        FloatVector g = FloatVector.fromArray(S, gates, g0 + 2 * hs + j);
        f.mul(FloatVector.fromArray(S, cPrev, cpo + e0 + j)).add(i.mul(g)).intoArray(c, co + e0 + j);
      }
      for (; j < hs; j++) {
        c[co + e0 + j] = gates[g0 + hs + j] * cPrev[cpo + e0 + j] + gates[g0 + j] * gates[g0 + 2 * hs + j];
      }
      tanh(c, co + e0, tanhC, to + e0, hs);
      j = 0;
      for (; j < vec; j += L) {
        FloatVector.fromArray(S, gates, g0 + 3 * hs + j).mul(FloatVector.fromArray(S, tanhC, to + e0 + j))
            .intoArray(h, ho + e0 + j);
      }
      for (; j < hs; j++) h[ho + e0 + j] = gates[g0 + 3 * hs + j] * tanhC[to + e0 + j];
    }
  }

  static void lstmStepBackward(float[] act, int ao, float[] cPrev, int cpo, float[] tanhC, int to, float[] gh,
      int gho, float[] ghRec, int gro, float[] dc, int dco, float[] dGates, int dgo, int rows, int hs) {
    int vec = hs - hs % L;
    for (int r = 0; r < rows; r++) {
      int g0 = r * 4 * hs;
      int e0 = r * hs;
      int j = 0;
      for (; j < vec; j += L) {
        int e = e0 + j;
        FloatVector i = FloatVector.fromArray(S, act, ao + g0 + j);
        FloatVector f = FloatVector.fromArray(S, act, ao + g0 + hs + j);
        FloatVector g = FloatVector.fromArray(S, act, ao + g0 + 2 * hs + j);
        FloatVector o = FloatVector.fromArray(S, act, ao + g0 + 3 * hs + j);
        FloatVector t = FloatVector.fromArray(S, tanhC, to + e);
        FloatVector dh = FloatVector.fromArray(S, gh, gho + e).add(FloatVector.fromArray(S, ghRec, gro + e));
        FloatVector dcn = FloatVector.fromArray(S, dc, dco + e).add(dh.mul(o).mul(t.mul(t).neg().add(1f)));
        dcn.mul(g).mul(i).mul(i.neg().add(1f)).intoArray(dGates, dgo + g0 + j);
        dcn.mul(FloatVector.fromArray(S, cPrev, cpo + e)).mul(f).mul(f.neg().add(1f))
            .intoArray(dGates, dgo + g0 + hs + j);
        dcn.mul(i).mul(g.mul(g).neg().add(1f)).intoArray(dGates, dgo + g0 + 2 * hs + j);
        dh.mul(t).mul(o).mul(o.neg().add(1f)).intoArray(dGates, dgo + g0 + 3 * hs + j);
        dcn.mul(f).intoArray(dc, dco + e);
      }
      for (; j < hs; j++) {
        int e = e0 + j;
        float i = act[ao + g0 + j], f = act[ao + g0 + hs + j], g = act[ao + g0 + 2 * hs + j];
        float o = act[ao + g0 + 3 * hs + j];
        float t = tanhC[to + e];
        float dh = gh[gho + e] + ghRec[gro + e];
        float dcn = dc[dco + e] + dh * o * (-(t * t) + 1f);
        dGates[dgo + g0 + j] = dcn * g * i * (-i + 1f);
        dGates[dgo + g0 + hs + j] = dcn * cPrev[cpo + e] * f * (-f + 1f);
        dGates[dgo + g0 + 2 * hs + j] = dcn * i * (-(g * g) + 1f);
        dGates[dgo + g0 + 3 * hs + j] = dh * t * o * (-o + 1f);
        dc[dco + e] = dcn * f;
      }
    }
  }

  static void gruStep(float[] xg, int xo, float[] hg, int hgo, float[] hPrev, int hpo, float[] hn, int hno,
      float[] h, int ho, int rows, int hs) {
    int vec2 = 2 * hs - 2 * hs % L;
    int vec = hs - hs % L;
    for (int r = 0; r < rows; r++) {
      int x0 = xo + r * 3 * hs;
      int h0 = hgo + r * 3 * hs;
      int e0 = r * hs;
      int j = 0;
      for (; j < vec2; j += L) {
        FloatVector.fromArray(S, xg, x0 + j).add(FloatVector.fromArray(S, hg, h0 + j)).intoArray(xg, x0 + j);
      }
      for (; j < 2 * hs; j++) xg[x0 + j] = xg[x0 + j] + hg[h0 + j];
      sigmoid(xg, x0, 2 * hs);
      j = 0;
      for (; j < vec; j += L) {
        FloatVector hnv = FloatVector.fromArray(S, hg, h0 + 2 * hs + j);
        hnv.intoArray(hn, hno + e0 + j);
        FloatVector.fromArray(S, xg, x0 + 2 * hs + j).add(FloatVector.fromArray(S, xg, x0 + j).mul(hnv))
            .intoArray(xg, x0 + 2 * hs + j);
      }
      for (; j < hs; j++) {
        float hnv = hg[h0 + 2 * hs + j];
        hn[hno + e0 + j] = hnv;
        xg[x0 + 2 * hs + j] = xg[x0 + 2 * hs + j] + xg[x0 + j] * hnv;
      }
      tanh(xg, x0 + 2 * hs, xg, x0 + 2 * hs, hs);
      j = 0;
      for (; j < vec; j += L) {
        FloatVector n = FloatVector.fromArray(S, xg, x0 + 2 * hs + j);
        FloatVector z = FloatVector.fromArray(S, xg, x0 + hs + j);
        n.add(z.mul(FloatVector.fromArray(S, hPrev, hpo + e0 + j).sub(n))).intoArray(h, ho + e0 + j);
      }
      for (; j < hs; j++) {
        float n = xg[x0 + 2 * hs + j];
        h[ho + e0 + j] = n + xg[x0 + hs + j] * (hPrev[hpo + e0 + j] - n);
      }
    }
  }

  static void gruStepBackward(float[] act, int ao, float[] hn, int hno, float[] hPrev, int hpo, float[] gh, int gho,
      float[] ghRec, int gro, float[] dx, int dxo, float[] dhg, int dhgo, float[] dhPrev, int dpo, int rows, int hs) {
    int vec = hs - hs % L;
    for (int r = 0; r < rows; r++) {
      int g0 = r * 3 * hs;
      int e0 = r * hs;
      int j = 0;
      for (; j < vec; j += L) {
        int e = e0 + j;
        FloatVector rv = FloatVector.fromArray(S, act, ao + g0 + j);
        FloatVector z = FloatVector.fromArray(S, act, ao + g0 + hs + j);
        FloatVector n = FloatVector.fromArray(S, act, ao + g0 + 2 * hs + j);
        FloatVector dh = FloatVector.fromArray(S, gh, gho + e).add(FloatVector.fromArray(S, ghRec, gro + e));
        FloatVector dpn = dh.mul(z.neg().add(1f)).mul(n.mul(n).neg().add(1f));
        FloatVector dr = dpn.mul(FloatVector.fromArray(S, hn, hno + e)).mul(rv).mul(rv.neg().add(1f));
        FloatVector dz = dh.mul(FloatVector.fromArray(S, hPrev, hpo + e).sub(n)).mul(z).mul(z.neg().add(1f));
        dr.intoArray(dx, dxo + g0 + j);
        dz.intoArray(dx, dxo + g0 + hs + j);
        dpn.intoArray(dx, dxo + g0 + 2 * hs + j);
        dr.intoArray(dhg, dhgo + g0 + j);
        dz.intoArray(dhg, dhgo + g0 + hs + j);
        dpn.mul(rv).intoArray(dhg, dhgo + g0 + 2 * hs + j);
        dh.mul(z).intoArray(dhPrev, dpo + e);
      }
      for (; j < hs; j++) {
        int e = e0 + j;
        float rv = act[ao + g0 + j], z = act[ao + g0 + hs + j], n = act[ao + g0 + 2 * hs + j];
        float dh = gh[gho + e] + ghRec[gro + e];
        float dpn = dh * (-z + 1f) * (-(n * n) + 1f);
        float dr = dpn * hn[hno + e] * rv * (-rv + 1f);
        float dz = dh * (hPrev[hpo + e] - n) * z * (-z + 1f);
        dx[dxo + g0 + j] = dr;
        dx[dxo + g0 + hs + j] = dz;
        dx[dxo + g0 + 2 * hs + j] = dpn;
        dhg[dhgo + g0 + j] = dr;
        dhg[dhgo + g0 + hs + j] = dz;
        dhg[dhgo + g0 + 2 * hs + j] = dpn * rv;
        dhPrev[dpo + e] = dh * z;
      }
    }
  }
}
