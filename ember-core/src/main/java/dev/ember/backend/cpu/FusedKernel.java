package dev.ember.backend.cpu;

/**
 * One {@link dev.ember.backend.ElementwiseProgram} compiled for contiguous float32 blocks: {@link CpuFused} cuts the
 * output into blocks and hands each to {@link #block}, with every value of the program (inputs, then registers)
 * as an array and an offset: a FULL input is the tensor's own array at the block's position, a broadcast input is
 * expanded into a scratch block, a register is a scratch block (the last one, the output's array), and a constant
 * input's value is in {@code consts} at its value number.
 *
 * <p>Every block but the last has a multiple of 512 elements (a multiple of every vector length) and starts at a
 * multiple of 512, so a kernel that runs each step's vector loop up to {@code loopBound(len)} and its scalar tail
 * after it splits the elements exactly as the eager op does on the whole tensor: the same function for every
 * element, the same bits.
 */
public interface FusedKernel {
  /** Runs the program over {@code len} elements: values in {@code arr[v]} from {@code off[v]} on. */
  void block(float[][] arr, int[] off, float[] consts, int len);
}
