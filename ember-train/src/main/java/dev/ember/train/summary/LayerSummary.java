package dev.ember.train.summary;

/**
 * One module call of a summarised forward pass, in call order (a container before its children).
 *
 * @param name the dotted name in the model ({@code features.0}); "" for the model itself
 * @param type the module's type name ({@code Conv2d})
 * @param depth the nesting of the call: 0 for the model, 1 for its children, ...
 * @param leaf whether the module has no children
 * @param repeated whether the same module was already called earlier in the pass (its parameters
 *     are then counted on its first row only)
 * @param outputShape the shape of the call's output
 * @param params elements of the parameters registered on this module itself (not its children)
 * @param trainableParams those of {@code params} that require grad
 * @param paramBytes bytes of those parameters
 * @param outputBytes bytes of the output tensor
 * @param flops forward FLOPs of the module's own work (children have their own rows); 0 when unknown
 * @param flopsKnown false for a leaf type {@link Flops} has no rule for
 * @param subtreeFlops {@code flops} plus those of every call nested in this one
 * @param selfNanos mean time per forward of this call without its nested calls; -1 unless profiled
 * @param totalNanos mean time per forward of this call with its nested calls; -1 unless profiled
 * @param activationBytes bytes this call's own ops keep for backward ({@link MemoryProfile}); -1 unless measured
 *     ({@link ModelSummary#withMemory})
 */
public record LayerSummary(String name, String type, int depth, boolean leaf, boolean repeated, int[] outputShape,
    long params, long trainableParams, long paramBytes, long outputBytes, long flops, boolean flopsKnown,
    long subtreeFlops, double selfNanos, double totalNanos, long activationBytes) {

  public LayerSummary {
    outputShape = outputShape.clone();
  }

  /** The shape of the call's output (a copy). */
  @Override
  public int[] outputShape() {
    return outputShape.clone();
  }

  /** "name (Type)", or the type alone for the model itself. */
  public String label() {
    return name.isEmpty() ? type : name + " (" + type + ")";
  }

  /** Whether the row carries timings ({@link ModelSummary#profiled}). */
  public boolean timed() {
    return selfNanos >= 0;
  }

  LayerSummary withTimes(double self, double total) {
    return new LayerSummary(name, type, depth, leaf, repeated, outputShape, params, trainableParams, paramBytes,
        outputBytes, flops, flopsKnown, subtreeFlops, self, total, activationBytes);
  }

  LayerSummary withActivationBytes(long bytes) {
    return new LayerSummary(name, type, depth, leaf, repeated, outputShape, params, trainableParams, paramBytes,
        outputBytes, flops, flopsKnown, subtreeFlops, selfNanos, totalNanos, bytes);
  }
}
