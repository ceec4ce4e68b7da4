package dev.ember.backend.cpu;

import dev.ember.backend.BinaryOp;
import dev.ember.backend.UnaryOp;

/** Placeholder being replaced by the full scalar kernel set. */
public final class ScalarKernels {
  private ScalarKernels() {}

  public static double apply(UnaryOp op, double x, double p) {
    return switch (op) {
      case NEG -> -x;
      case ABS -> Math.abs(x);
      case SIGN -> Math.signum(x);
      case EXP -> Math.exp(x);
      case LOG -> Math.log(x);
      case LOG1P -> Math.log1p(x);
      case EXPM1 -> Math.expm1(x);
      case SQRT -> Math.sqrt(x);
      case RSQRT -> 1 / Math.sqrt(x);
      case SQUARE -> x * x;
      case RECIPROCAL -> 1 / x;
      case SIN -> Math.sin(x);
      case COS -> Math.cos(x);
      case TANH -> Math.tanh(x);
      case SIGMOID -> 1 / (1 + Math.exp(-x));
      case RELU -> x > 0 ? x : (Double.isNaN(x) ? x : 0);
      case LEAKY_RELU -> x > 0 ? x : p * x;
      case ELU -> x > 0 ? x : p * Math.expm1(x);
      case GELU -> 0.5 * x * (1 + erf(x / Math.sqrt(2)));
      case GELU_TANH -> 0.5 * x * (1 + Math.tanh(Math.sqrt(2 / Math.PI) * (x + 0.044715 * x * x * x)));
      case SILU -> x / (1 + Math.exp(-x));
      case SOFTPLUS -> p * x > 20 ? x : Math.log1p(Math.exp(p * x)) / p;
      case POW_SCALAR -> Math.pow(x, p);
      case FLOOR -> Math.floor(x);
      case CEIL -> Math.ceil(x);
      case ROUND -> Math.rint(x);
      case TRUNC -> x < 0 ? Math.ceil(x) : Math.floor(x);
    };
  }

  static double erf(double x) {
    double t = 1 / (1 + 0.5 * Math.abs(x));
    double y = 1 - t * Math.exp(-x * x - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418
        + t * (-0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277)))))))));
    return x >= 0 ? y : -y;
  }

  public static double apply(BinaryOp op, double a, double b) {
    return switch (op) {
      case ADD -> a + b;
      case SUB -> a - b;
      case MUL -> a * b;
      case DIV -> a / b;
      case POW -> Math.pow(a, b);
      case MAXIMUM -> Double.isNaN(a) || Double.isNaN(b) ? Double.NaN : Math.max(a, b);
      case MINIMUM -> Double.isNaN(a) || Double.isNaN(b) ? Double.NaN : Math.min(a, b);
      case EQ -> a == b ? 1 : 0;
      case NE -> a != b ? 1 : 0;
      case LT -> a < b ? 1 : 0;
      case LE -> a <= b ? 1 : 0;
      case GT -> a > b ? 1 : 0;
      case GE -> a >= b ? 1 : 0;
      case LOGICAL_AND -> (a != 0 && b != 0) ? 1 : 0;
      case LOGICAL_OR -> (a != 0 || b != 0) ? 1 : 0;
      case LOGICAL_XOR -> ((a != 0) != (b != 0)) ? 1 : 0;
    };
  }

  public static void unary(UnaryOp op, float p, float[] x, int xo, float[] out, int oo, int n) {
    for (int i = 0; i < n; i++) out[oo + i] = (float) apply(op, x[xo + i], p);
  }

  public static void unary(UnaryOp op, double p, double[] x, int xo, double[] out, int oo, int n) {
    for (int i = 0; i < n; i++) out[oo + i] = apply(op, x[xo + i], p);
  }

  public static void binary(BinaryOp op, float[] a, int ao, float[] b, int bo, float[] out, int oo, int n) {
    for (int i = 0; i < n; i++) out[oo + i] = (float) apply(op, a[ao + i], b[bo + i]);
  }

  public static void binary(BinaryOp op, double[] a, int ao, double[] b, int bo, double[] out, int oo, int n) {
    for (int i = 0; i < n; i++) out[oo + i] = apply(op, a[ao + i], b[bo + i]);
  }

  public static void binaryScalarRight(BinaryOp op, float[] a, int ao, float s, float[] out, int oo, int n) {
    for (int i = 0; i < n; i++) out[oo + i] = (float) apply(op, a[ao + i], s);
  }

  public static void binaryScalarLeft(BinaryOp op, float s, float[] b, int bo, float[] out, int oo, int n) {
    for (int i = 0; i < n; i++) out[oo + i] = (float) apply(op, s, b[bo + i]);
  }

  public static float sum(float[] x, int xo, int n) {
    double s = 0;
    for (int i = 0; i < n; i++) s += x[xo + i];
    return (float) s;
  }

  public static double sum(double[] x, int xo, int n) {
    double s = 0;
    for (int i = 0; i < n; i++) s += x[xo + i];
    return s;
  }

  public static float max(float[] x, int xo, int n) {
    float m = Float.NEGATIVE_INFINITY;
    for (int i = 0; i < n; i++) m = Math.max(m, x[xo + i]);
    return m;
  }

  public static float min(float[] x, int xo, int n) {
    float m = Float.POSITIVE_INFINITY;
    for (int i = 0; i < n; i++) m = Math.min(m, x[xo + i]);
    return m;
  }

  public static void softmaxRows(float[] x, int xo, float[] out, int oo, int rows, int cols, boolean log) {
    for (int r = 0; r < rows; r++) {
      int a = xo + r * cols;
      int o = oo + r * cols;
      double m = Double.NEGATIVE_INFINITY;
      for (int j = 0; j < cols; j++) m = Math.max(m, x[a + j]);
      double s = 0;
      for (int j = 0; j < cols; j++) s += Math.exp(x[a + j] - m);
      for (int j = 0; j < cols; j++) out[o + j] = (float) (log ? x[a + j] - m - Math.log(s) : Math.exp(x[a + j] - m) / s);
    }
  }

  public static void softmaxRows(double[] x, int xo, double[] out, int oo, int rows, int cols, boolean log) {
    for (int r = 0; r < rows; r++) {
      int a = xo + r * cols;
      int o = oo + r * cols;
      double m = Double.NEGATIVE_INFINITY;
      for (int j = 0; j < cols; j++) m = Math.max(m, x[a + j]);
      double s = 0;
      for (int j = 0; j < cols; j++) s += Math.exp(x[a + j] - m);
      for (int j = 0; j < cols; j++) out[o + j] = log ? x[a + j] - m - Math.log(s) : Math.exp(x[a + j] - m) / s;
    }
  }
}
