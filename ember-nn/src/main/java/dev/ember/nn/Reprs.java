package dev.ember.nn;

import java.math.BigDecimal;
import java.util.Arrays;

/** Formatting of hyperparameters in printed module trees, as Python prints them. */
final class Reprs {
  private Reprs() {}

  /**
   * Python's {@code repr(float)}: the shortest digits that round-trip, positional for decimal
   * exponents in [-4, 16), scientific otherwise: 0.01 -> "0.01", 1.0 -> "1.0", 1e-5 -> "1e-05",
   * 1e16 -> "1e+16".
   */
  static String fmt(double v) {
    if (Double.isNaN(v)) return "nan";
    if (Double.isInfinite(v)) return v > 0 ? "inf" : "-inf";
    if (v == 0) return (1 / v < 0) ? "-0.0" : "0.0";
    String sign = v < 0 ? "-" : "";
    // Double.toString gives the shortest round-tripping digits (JDK 19+), as Python's repr does
    BigDecimal bd = new BigDecimal(Double.toString(Math.abs(v))).stripTrailingZeros();
    String digits = bd.unscaledValue().toString();
    int decpt = digits.length() - bd.scale(); // value = 0.digits * 10^decpt
    if (decpt > -4 && decpt <= 16) {
      if (decpt <= 0) return sign + "0." + "0".repeat(-decpt) + digits;
      if (decpt >= digits.length()) return sign + digits + "0".repeat(decpt - digits.length()) + ".0";
      return sign + digits.substring(0, decpt) + "." + digits.substring(decpt);
    }
    int exp = decpt - 1;
    String mant = digits.length() == 1 ? digits : digits.charAt(0) + "." + digits.substring(1);
    String e = Integer.toString(Math.abs(exp));
    return sign + mant + "e" + (exp < 0 ? "-" : "+") + (e.length() < 2 ? "0" + e : e);
  }

  /** A nullable float: Python's None when absent. */
  static String fmt(Double v) {
    return v == null ? "None" : fmt(v.doubleValue());
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
