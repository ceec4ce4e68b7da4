package dev.ember.backend.cpu;

/**
 * The float32 gate passes of the whole-sequence LSTM and GRU in plain Java ({@link FloatKernels}' defaults, the
 * reference for the Vector API set's): each over {@code rows} contiguous rows, in float arithmetic, the sigmoid and
 * tanh as the scalar unary kernels compute them. See {@link dev.ember.backend.RecurrentKernels} for what each pass
 * reads and writes.
 */
final class ScalarRecurrent {
  private ScalarRecurrent() {}

  static float sigmoid(float x) {
    return (float) ScalarKernels.sigmoid(x);
  }

  static float tanh(float x) {
    return (float) Math.tanh(x);
  }

  static void lstmStep(float[] gates, int go, float[] cPrev, int cpo, float[] c, int co, float[] tanhC, int to,
      float[] h, int ho, int rows, int hs) {
    for (int r = 0; r < rows; r++) {
      int g0 = go + r * 4 * hs;
      for (int j = 0; j < hs; j++) {
        int e = r * hs + j;
        float i = sigmoid(gates[g0 + j]), f = sigmoid(gates[g0 + hs + j]);
        float g = tanh(gates[g0 + 2 * hs + j]), o = sigmoid(gates[g0 + 3 * hs + j]);
        gates[g0 + j] = i;
        gates[g0 + hs + j] = f;
        gates[g0 + 2 * hs + j] = g;
        gates[g0 + 3 * hs + j] = o;
        float cn = f * cPrev[cpo + e] + i * g;
        c[co + e] = cn;
        float t = tanh(cn);
        tanhC[to + e] = t;
        h[ho + e] = o * t;
      }
    }
  }

  static void lstmStepBackward(float[] act, int ao, float[] cPrev, int cpo, float[] tanhC, int to, float[] gh,
      int gho, float[] ghRec, int gro, float[] dc, int dco, float[] dGates, int dgo, int rows, int hs) {
    for (int r = 0; r < rows; r++) {
      int g0 = r * 4 * hs;
      for (int j = 0; j < hs; j++) {
        int e = r * hs + j;
        float i = act[ao + g0 + j], f = act[ao + g0 + hs + j], g = act[ao + g0 + 2 * hs + j];
        float o = act[ao + g0 + 3 * hs + j];
        float t = tanhC[to + e];
        float dh = gh[gho + e] + ghRec[gro + e];
        float dcn = dc[dco + e] + dh * o * (1f - t * t);
        dGates[dgo + g0 + j] = dcn * g * i * (1f - i);
        dGates[dgo + g0 + hs + j] = dcn * cPrev[cpo + e] * f * (1f - f);
        dGates[dgo + g0 + 2 * hs + j] = dcn * i * (1f - g * g);
        dGates[dgo + g0 + 3 * hs + j] = dh * t * o * (1f - o);
        dc[dco + e] = dcn * f;
      }
    }
  }

  static void gruStep(float[] xg, int xo, float[] hg, int hgo, float[] hPrev, int hpo, float[] hn, int hno,
      float[] h, int ho, int rows, int hs) {
    for (int r = 0; r < rows; r++) {
      int g0 = r * 3 * hs;
      for (int j = 0; j < hs; j++) {
        int e = r * hs + j;
        float rv = sigmoid(xg[xo + g0 + j] + hg[hgo + g0 + j]);
        float z = sigmoid(xg[xo + g0 + hs + j] + hg[hgo + g0 + hs + j]);
        float hnv = hg[hgo + g0 + 2 * hs + j];
        float n = tanh(xg[xo + g0 + 2 * hs + j] + rv * hnv);
        xg[xo + g0 + j] = rv;
        xg[xo + g0 + hs + j] = z;
        xg[xo + g0 + 2 * hs + j] = n;
        hn[hno + e] = hnv;
        h[ho + e] = n + z * (hPrev[hpo + e] - n);
      }
    }
  }

  static void gruStepBackward(float[] act, int ao, float[] hn, int hno, float[] hPrev, int hpo, float[] gh, int gho,
      float[] ghRec, int gro, float[] dx, int dxo, float[] dhg, int dhgo, float[] dhPrev, int dpo, int rows, int hs) {
    for (int r = 0; r < rows; r++) {
      int g0 = r * 3 * hs;
      for (int j = 0; j < hs; j++) {
        int e = r * hs + j;
        float rv = act[ao + g0 + j], z = act[ao + g0 + hs + j], n = act[ao + g0 + 2 * hs + j];
        float dh = gh[gho + e] + ghRec[gro + e];
        float dpn = dh * (1f - z) * (1f - n * n);
        float dr = dpn * hn[hno + e] * rv * (1f - rv);
        float dz = dh * (hPrev[hpo + e] - n) * z * (1f - z);
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
