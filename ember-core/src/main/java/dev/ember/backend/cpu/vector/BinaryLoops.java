package dev.ember.backend.cpu.vector;

import static jdk.incubator.vector.FloatVector.fromArray;
import static jdk.incubator.vector.VectorOperators.ADD;
import static jdk.incubator.vector.VectorOperators.DIV;
import static jdk.incubator.vector.VectorOperators.MAX;
import static jdk.incubator.vector.VectorOperators.MIN;
import static jdk.incubator.vector.VectorOperators.MUL;
import static jdk.incubator.vector.VectorOperators.SUB;

import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorSpecies;

/**
 * The vector loops behind {@link VectorKernels}' binary kernels: one method per op and operand
 * shape (array op array, array op scalar, scalar op array). The operator has to be a constant in
 * the loop for C2 to intrinsify it; one loop taking the operator as an argument would fall back
 * to the boxed Java implementation. Each returns how many elements it did (a multiple of the
 * vector length); the caller finishes the tail.
 */
final class BinaryLoops {
  private BinaryLoops() {}

  private static final VectorSpecies<Float> S = FloatVector.SPECIES_PREFERRED;
  private static final int L = S.length();

  static int addVV(float[] a, int ao, float[] b, int bo, float[] out, int oo, int n) {
    int i = 0;
    for (int end = S.loopBound(n); i < end; i += L) {
      fromArray(S, a, ao + i).lanewise(ADD, fromArray(S, b, bo + i)).intoArray(out, oo + i);
    }
    return i;
  }

  static int addVS(float[] a, int ao, float s, float[] out, int oo, int n) {
    FloatVector sv = FloatVector.broadcast(S, s);
    int i = 0;
    for (int end = S.loopBound(n); i < end; i += L) {
      fromArray(S, a, ao + i).lanewise(ADD, sv).intoArray(out, oo + i);
    }
    return i;
  }

  static int addSV(float s, float[] b, int bo, float[] out, int oo, int n) {
    FloatVector sv = FloatVector.broadcast(S, s);
    int i = 0;
    for (int end = S.loopBound(n); i < end; i += L) {
      sv.lanewise(ADD, fromArray(S, b, bo + i)).intoArray(out, oo + i);
    }
    return i;
  }

  static int subVV(float[] a, int ao, float[] b, int bo, float[] out, int oo, int n) {
    int i = 0;
    for (int end = S.loopBound(n); i < end; i += L) {
      fromArray(S, a, ao + i).lanewise(SUB, fromArray(S, b, bo + i)).intoArray(out, oo + i);
    }
    return i;
  }

  static int subVS(float[] a, int ao, float s, float[] out, int oo, int n) {
    FloatVector sv = FloatVector.broadcast(S, s);
    int i = 0;
    for (int end = S.loopBound(n); i < end; i += L) {
      fromArray(S, a, ao + i).lanewise(SUB, sv).intoArray(out, oo + i);
    }
    return i;
  }

  static int subSV(float s, float[] b, int bo, float[] out, int oo, int n) {
    FloatVector sv = FloatVector.broadcast(S, s);
    int i = 0;
    for (int end = S.loopBound(n); i < end; i += L) {
      sv.lanewise(SUB, fromArray(S, b, bo + i)).intoArray(out, oo + i);
    }
    return i;
  }

  static int mulVV(float[] a, int ao, float[] b, int bo, float[] out, int oo, int n) {
    int i = 0;
    for (int end = S.loopBound(n); i < end; i += L) {
      fromArray(S, a, ao + i).lanewise(MUL, fromArray(S, b, bo + i)).intoArray(out, oo + i);
    }
    return i;
  }

  static int mulVS(float[] a, int ao, float s, float[] out, int oo, int n) {
    FloatVector sv = FloatVector.broadcast(S, s);
    int i = 0;
    for (int end = S.loopBound(n); i < end; i += L) {
      fromArray(S, a, ao + i).lanewise(MUL, sv).intoArray(out, oo + i);
    }
    return i;
  }

  static int mulSV(float s, float[] b, int bo, float[] out, int oo, int n) {
    FloatVector sv = FloatVector.broadcast(S, s);
    int i = 0;
    for (int end = S.loopBound(n); i < end; i += L) {
      sv.lanewise(MUL, fromArray(S, b, bo + i)).intoArray(out, oo + i);
    }
    return i;
  }

  static int divVV(float[] a, int ao, float[] b, int bo, float[] out, int oo, int n) {
    int i = 0;
    for (int end = S.loopBound(n); i < end; i += L) {
      fromArray(S, a, ao + i).lanewise(DIV, fromArray(S, b, bo + i)).intoArray(out, oo + i);
    }
    return i;
  }

  static int divVS(float[] a, int ao, float s, float[] out, int oo, int n) {
    FloatVector sv = FloatVector.broadcast(S, s);
    int i = 0;
    for (int end = S.loopBound(n); i < end; i += L) {
      fromArray(S, a, ao + i).lanewise(DIV, sv).intoArray(out, oo + i);
    }
    return i;
  }

  static int divSV(float s, float[] b, int bo, float[] out, int oo, int n) {
    FloatVector sv = FloatVector.broadcast(S, s);
    int i = 0;
    for (int end = S.loopBound(n); i < end; i += L) {
      sv.lanewise(DIV, fromArray(S, b, bo + i)).intoArray(out, oo + i);
    }
    return i;
  }







  static int maxVV(float[] a, int ao, float[] b, int bo, float[] out, int oo, int n) {
    int i = 0;
    for (int end = S.loopBound(n); i < end; i += L) {
      fromArray(S, a, ao + i).lanewise(MAX, fromArray(S, b, bo + i)).intoArray(out, oo + i);
    }
    return i;
  }

  static int maxVS(float[] a, int ao, float s, float[] out, int oo, int n) {
    FloatVector sv = FloatVector.broadcast(S, s);
    int i = 0;
    for (int end = S.loopBound(n); i < end; i += L) {
      fromArray(S, a, ao + i).lanewise(MAX, sv).intoArray(out, oo + i);
    }
    return i;
  }

  static int maxSV(float s, float[] b, int bo, float[] out, int oo, int n) {
    FloatVector sv = FloatVector.broadcast(S, s);
    int i = 0;
    for (int end = S.loopBound(n); i < end; i += L) {
      sv.lanewise(MAX, fromArray(S, b, bo + i)).intoArray(out, oo + i);
    }
    return i;
  }

  static int minVV(float[] a, int ao, float[] b, int bo, float[] out, int oo, int n) {
    int i = 0;
    for (int end = S.loopBound(n); i < end; i += L) {
      fromArray(S, a, ao + i).lanewise(MIN, fromArray(S, b, bo + i)).intoArray(out, oo + i);
    }
    return i;
  }

  static int minVS(float[] a, int ao, float s, float[] out, int oo, int n) {
    FloatVector sv = FloatVector.broadcast(S, s);
    int i = 0;
    for (int end = S.loopBound(n); i < end; i += L) {
      fromArray(S, a, ao + i).lanewise(MIN, sv).intoArray(out, oo + i);
    }
    return i;
  }

  static int minSV(float s, float[] b, int bo, float[] out, int oo, int n) {
    FloatVector sv = FloatVector.broadcast(S, s);
    int i = 0;
    for (int end = S.loopBound(n); i < end; i += L) {
      sv.lanewise(MIN, fromArray(S, b, bo + i)).intoArray(out, oo + i);
    }
    return i;
  }
}
