package dev.ember.nn.functional;

import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorSpecies;

/** {@link RowKernels} on the Vector API (loaded by name, so nothing else refers to the incubator module). */
final class VectorRowKernels implements RowKernels {
  private static final VectorSpecies<Float> S = FloatVector.SPECIES_PREFERRED;

  @Override
  public void axpy(float a, float[] x, int xo, float[] y, int yo, int n) {
    int i = 0;
    int bound = S.loopBound(n);
    for (; i < bound; i += S.length()) {
      FloatVector p = FloatVector.fromArray(S, x, xo + i).mul(a);
      FloatVector.fromArray(S, y, yo + i).add(p).intoArray(y, yo + i);
    }
    for (; i < n; i++) y[yo + i] += a * x[xo + i];
  }

  @Override
  public float dot(float[] a, int ao, float[] b, int bo, int n) {
    FloatVector acc = FloatVector.zero(S);
    int i = 0;
    int bound = S.loopBound(n);
    for (; i < bound; i += S.length()) {
      acc = FloatVector.fromArray(S, a, ao + i).mul(FloatVector.fromArray(S, b, bo + i)).add(acc);
    }
    float s = 0;
    for (int l = 0; l < S.length(); l++) s += acc.lane(l); // lanes in order: the same bits every call
    for (; i < n; i++) s += a[ao + i] * b[bo + i];
    return s;
  }
}
