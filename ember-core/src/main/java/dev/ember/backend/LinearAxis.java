package dev.ember.backend;

/**
 * Linear interpolation along one axis: output position o is {@code l0[o] * x[i0[o]] + l1[o] * x[i1[o]]}.
 *
 * @param i0 the lower source index per output position
 * @param i1 the upper source index per output position
 * @param l0 the weight of the lower source
 * @param l1 the weight of the upper source
 */
public record LinearAxis(int[] i0, int[] i1, double[] l0, double[] l1) {}
