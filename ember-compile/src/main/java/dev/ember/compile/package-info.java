/**
 * Graph capture and graph passes (issue #37): {@link dev.ember.compile.Compiler#compile} traces a module's forward
 * through the op entry points' {@link dev.ember.autograd.Tracing} hook into a {@link dev.ember.compile.Graph} of op
 * nodes (name, inputs, attributes, output shape and dtype), and runs it node by node through the same entry points,
 * so that a compiled module's outputs are eager's to the bit. {@link dev.ember.compile.Pass passes} rewrite graphs
 * (dead code, common subexpressions, constant folding, algebraic simplification, elementwise fusion into generated
 * kernels).
 *
 * <p>{@link dev.ember.compile.EpilogueFusion} puts a linear's activation and residual add into its GEMM's epilogue.
 * A compiled module runs its graphs with a {@code GraphExecutor}: slots and argument arrays worked out once, and for
 * inference (grad off) an {@link dev.ember.tensor.AllocationPlan} per input shape, so that a call allocates no
 * tensor memory.
 *
 * <p>A module of its own, on top of ember-nn: tracing needs {@code Module} (parameters and buffers by name, train
 * mode, {@code Sequential} for graph breaks), which ember-core does not have; ember-core only carries the hook.
 */
package dev.ember.compile;
