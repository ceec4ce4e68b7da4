package dev.ember.backend.cpu;

import dev.ember.backend.ElementwiseProgram;

/**
 * The interpreted {@link FusedKernel}: each step over the block through the kernel set's own eager loop
 * ({@link FloatKernels#unary}, {@link FloatKernels#binary} and its scalar forms), the intermediates in scratch
 * blocks that stay in L1. The same calls as the eager ops make, so the same bits; the fallback of generated kernels
 * and the only kernel of the scalar backend.
 */
public record FusedInterpreter(FloatKernels kernels, ElementwiseProgram program) implements FusedKernel {
  @Override
  public void block(float[][] arr, int[] off, float[] consts, int len) {
    int r = program.inputs().size();
    for (ElementwiseProgram.Step step : program.steps()) {
      switch (step) {
        case ElementwiseProgram.UnaryStep u ->
            kernels.unary(u.op(), (float) u.param(), arr[u.x()], off[u.x()], arr[r], off[r], len);
        case ElementwiseProgram.BinaryStep b -> {
          int a = b.a();
          int c = b.b();
          if (program.kind(a) == ElementwiseProgram.Kind.CONSTANT) {
            kernels.binaryScalarLeft(b.op(), consts[a], arr[c], off[c], arr[r], off[r], len);
          } else if (program.kind(c) == ElementwiseProgram.Kind.CONSTANT) {
            kernels.binaryScalarRight(b.op(), arr[a], off[a], consts[c], arr[r], off[r], len);
          } else {
            kernels.binary(b.op(), arr[a], off[a], arr[c], off[c], arr[r], off[r], len);
          }
        }
      }
      r++;
    }
  }
}
