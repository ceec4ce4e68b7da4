package dev.ember.compile;

/**
 * A graph rewrite that keeps what the graph computes: {@link #run} returns a new graph (the argument is left as it
 * is) whose output has the same values for every input, to the bit unless the pass says otherwise.
 */
public interface Pass {
  /** The pass's name, as {@link CompiledModule#explain()} reports it. */
  default String name() {
    return getClass().getSimpleName();
  }

  /** The rewritten graph. */
  Graph run(Graph graph);

  /**
   * For inference, the defaults after {@link BatchNormFolding} (which is not bitwise, and fixes the parameters of
   * the folded convolutions).
   */
  static java.util.List<Pass> inference() {
    java.util.List<Pass> passes = new java.util.ArrayList<>();
    passes.add(new BatchNormFolding());
    passes.addAll(defaults());
    return java.util.List.copyOf(passes);
  }

  /**
   * For a training step's joint graph ({@link Compiler#compileTraining}): the defaults with {@link
   * ReluGradFromOutput} (ReLU's backward reads its output, which frees the linear before it for its epilogue) and
   * {@link Rematerialization} before the fusions (cheap forward results the backward reads are computed again there
   * instead of kept, and the recomputation can then fuse into the backward's chains), and {@link SliceGradientConcat}
   * (the gradient of a tensor read as slices that tile it is their gradients concatenated, not a sum of zero-padded
   * copies), and {@link CrossEntropyRows} (a cross entropy whose gradient the step takes as plain row loops, off the
   * tape).
   */
  static java.util.List<Pass> training() {
    return java.util.List.of(new AlgebraicSimplification(), new ConstantFolding(),
        new CommonSubexpressionElimination(), new ReluGradFromOutput(), new CrossEntropyRows(), new Rematerialization(),
        new SliceGradientConcat(), new EpilogueFusion(), new DeadCodeElimination(), new ElementwiseFusion());
  }

  /**
   * The default pipeline, bitwise: simplification, constant folding, common subexpressions, GEMM epilogue fusion,
   * dead code, fusion of elementwise chains.
   */
  static java.util.List<Pass> defaults() {
    return java.util.List.of(new AlgebraicSimplification(), new ConstantFolding(),
        new CommonSubexpressionElimination(), new EpilogueFusion(), new DeadCodeElimination(),
        new ElementwiseFusion());
  }
}
