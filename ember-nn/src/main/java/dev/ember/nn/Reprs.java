package dev.ember.nn;

import java.util.Arrays;

/** Formatting of hyperparameters in printed module trees, as Python prints them. */
final class Reprs {
  private Reprs() {}

  /** 0.01 -> "0.01", 1.0 -> "1.0", 20.0 -> "20.0" (Python's float repr for these values). */
  static String fmt(double v) {
    return Double.toString(v);
  }

  static String bool(boolean b) {
    return b ? "True" : "False";
  }

  /** (3, 3) like a Python tuple. */
  static String tuple(int... v) {
    if (v.length == 1) return "(" + v[0] + ",)";
    String s = Arrays.toString(v);
    return "(" + s.substring(1, s.length() - 1) + ")";
  }
}
