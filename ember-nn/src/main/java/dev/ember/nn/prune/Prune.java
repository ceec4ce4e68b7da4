package dev.ember.nn.prune;

import dev.ember.autograd.Grad;
import dev.ember.nn.Module;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.Map;

/**
 * Pruning with PyTorch's {@code torch.nn.utils.prune} semantics. Pruning parameter {@code weight} of a module moves
 * the parameter (the same tensor, so an optimizer built before keeps training it) to {@code weight_orig}, registers
 * the 0/1 mask as the buffer {@code weight_mask}, and makes {@code weight} a tensor computed as {@code weight_orig *
 * weight_mask} on every read ({@link Module#setComputed}): each forward uses the masked weight and the gradient of
 * {@code weight_orig} is masked. Both appear in the state dict under PyTorch's keys, so in checkpoints.
 *
 * <p>Pruning a pruned parameter again combines the masks as PyTorch's {@code PruningContainer}: only the entries
 * (unstructured) or channels (structured) still unpruned are candidates, and a fractional amount is a fraction of
 * them. The importance of an entry is the current, masked weight. A fractional amount is rounded as Python's
 * {@code round} (half to even); an {@code int} amount is a count. Entries of equal importance are taken in index
 * order (PyTorch's {@code topk} leaves the order of ties unspecified). {@link #remove} makes the pruning permanent.
 */
public final class Prune {
  private Prune() {}

  /** What to prune: parameter {@code name} of {@code module} (PyTorch's {@code (module, name)} pairs). */
  public record Target(Module module, String name) {
    public Target {
      if (module == null) throw new IllegalArgumentException("Prune.Target: module is null (name '" + name + "')");
      if (name == null) throw new IllegalArgumentException("Prune.Target: name is null for " + module.name());
    }
  }

  /** A {@link Target}. */
  public static Target target(Module module, String name) {
    return new Target(module, name);
  }

  // ---------------------------------------------------------------------------------------------
  // Unstructured

  /** Zeroes the fraction {@code amount} (in [0, 1]) of the unpruned entries of {@code name} with the smallest |w|. */
  public static <M extends Module> M l1Unstructured(M module, String name, double amount) {
    return unstructuredL1(module, name, Amount.fraction("l1Unstructured", amount));
  }

  /** Zeroes the {@code count} unpruned entries of {@code name} with the smallest |w|. */
  public static <M extends Module> M l1Unstructured(M module, String name, int count) {
    return unstructuredL1(module, name, Amount.count("l1Unstructured", count));
  }

  private static <M extends Module> M unstructuredL1(M module, String name, Amount amount) {
    String op = "l1Unstructured";
    double[] scores = scores(op, module, name);
    double[] mask = currentMask(module, name, scores.length);
    int[] cand = unpruned(mask);
    int k = amount.entries(op, cand.length, module, name);
    double[] s = new double[cand.length];
    for (int i = 0; i < cand.length; i++) s[i] = Math.abs(scores[cand[i]]);
    for (int i : smallest(s, k)) mask[cand[i]] = 0;
    return apply(op, module, name, mask);
  }

  /** Zeroes a random fraction {@code amount} of the unpruned entries of {@code name}, drawn from {@code gen}. */
  public static <M extends Module> M randomUnstructured(M module, String name, double amount, Generator gen) {
    return unstructuredRandom(module, name, Amount.fraction("randomUnstructured", amount), gen);
  }

  /** Zeroes {@code count} random unpruned entries of {@code name}, drawn from {@code gen}. */
  public static <M extends Module> M randomUnstructured(M module, String name, int count, Generator gen) {
    return unstructuredRandom(module, name, Amount.count("randomUnstructured", count), gen);
  }

  /** {@link #randomUnstructured(Module, String, double, Generator)} drawing from the global generator. */
  public static <M extends Module> M randomUnstructured(M module, String name, double amount) {
    return randomUnstructured(module, name, amount, Generator.global());
  }

  private static <M extends Module> M unstructuredRandom(M module, String name, Amount amount, Generator gen) {
    String op = "randomUnstructured";
    if (gen == null) throw new IllegalArgumentException(op + ": generator is null");
    double[] scores = scores(op, module, name);
    double[] mask = currentMask(module, name, scores.length);
    int[] cand = unpruned(mask);
    int k = amount.entries(op, cand.length, module, name);
    // as PyTorch: a uniform draw per candidate, the k largest draws are pruned
    double[] r = cand.length == 0 ? new double[0] : Tensor.rand(gen, cand.length).toDoubleArray();
    for (int i = 0; i < r.length; i++) r[i] = -r[i];
    for (int i : smallest(r, k)) mask[cand[i]] = 0;
    return apply(op, module, name, mask);
  }

  // ---------------------------------------------------------------------------------------------
  // Structured

  /**
   * Zeroes the fraction {@code amount} of the still unpruned slices along {@code dim} of {@code name} (rows of a
   * Linear weight at dim 0, output channels of a Conv2d weight at dim 0) with the smallest Ln norm: {@code n} is 1, 2,
   * any p &gt; 0 or {@link Double#POSITIVE_INFINITY} (max |w|). As PyTorch, the slices kept are those with the largest
   * norms.
   */
  public static <M extends Module> M lnStructured(M module, String name, double amount, double n, int dim) {
    return structured(module, name, Amount.fraction("lnStructured", amount), n, dim);
  }

  /** {@link #lnStructured(Module, String, double, double, int)} pruning {@code count} slices. */
  public static <M extends Module> M lnStructured(M module, String name, int count, double n, int dim) {
    return structured(module, name, Amount.count("lnStructured", count), n, dim);
  }

  private static <M extends Module> M structured(M module, String name, Amount amount, double n, int dim) {
    String op = "lnStructured";
    double[] scores = scores(op, module, name);
    int[] shape = module.param(name).shape();
    if (shape.length < 2) {
      throw new IllegalArgumentException(op + ": structured pruning needs a tensor of 2 or more dims, got "
          + shape.length + ": " + module.name() + "." + name + "=" + Arrays.toString(shape));
    }
    if (dim < -shape.length || dim >= shape.length) {
      throw new IllegalArgumentException(op + ": dim " + dim + " out of range for rank " + shape.length + " (valid: "
          + -shape.length + ".." + (shape.length - 1) + "): " + module.name() + "." + name + "=" + Arrays.toString(shape));
    }
    if (!(n > 0) || Double.isNaN(n)) {
      throw new IllegalArgumentException(op + ": norm order n must be > 0 (or +Infinity), got " + n + ": "
          + module.name() + "." + name + "=" + Arrays.toString(shape));
    }
    int d = dim < 0 ? dim + shape.length : dim;
    int channels = shape[d];
    int inner = 1;
    for (int i = d + 1; i < shape.length; i++) inner *= shape[i];
    int outer = scores.length / Math.max(1, channels * inner);
    double[] mask = currentMask(module, name, scores.length);
    // candidates: the channels whose mask is not all zero (PyTorch's keep_channel = mask.sum(other dims) != 0)
    double[] maskSum = new double[channels];
    double[] norm = new double[channels];
    for (int o = 0; o < outer; o++) {
      for (int c = 0; c < channels; c++) {
        int base = (o * channels + c) * inner;
        for (int i = 0; i < inner; i++) {
          maskSum[c] += mask[base + i];
          double a = Math.abs(scores[base + i]);
          norm[c] = Double.isInfinite(n) ? Math.max(norm[c], a) : norm[c] + Math.pow(a, n);
        }
      }
    }
    List<Integer> candList = new ArrayList<>();
    for (int c = 0; c < channels; c++) if (maskSum[c] != 0) candList.add(c);
    int k = amount.entries(op, candList.size(), module, name);
    // keep the (size - k) largest norms: prune the rest, ties among the kept going to the lower index as a stable sort
    Integer[] order = candList.toArray(new Integer[0]);
    Arrays.sort(order, Comparator.comparingDouble((Integer c) -> -norm[c]));
    for (int j = order.length - k; j < order.length; j++) {
      int c = order[j];
      for (int o = 0; o < outer; o++) Arrays.fill(mask, (o * channels + c) * inner, (o * channels + c + 1) * inner, 0);
    }
    return apply(op, module, name, mask);
  }

  // ---------------------------------------------------------------------------------------------
  // Global and custom

  /**
   * L1 unstructured pruning over many parameters at once (PyTorch's {@code global_unstructured} with {@code
   * L1Unstructured}): the fraction {@code amount} of all their unpruned entries with the smallest |w| is zeroed, so
   * layers lose different fractions.
   */
  public static void globalUnstructured(List<Target> targets, double amount) {
    global(targets, Amount.fraction("globalUnstructured", amount));
  }

  /** {@link #globalUnstructured(List, double)} pruning {@code count} entries. */
  public static void globalUnstructured(List<Target> targets, int count) {
    global(targets, Amount.count("globalUnstructured", count));
  }

  private static void global(List<Target> targets, Amount amount) {
    String op = "globalUnstructured";
    if (targets == null || targets.isEmpty()) throw new IllegalArgumentException(op + ": no parameters to prune");
    List<double[]> scores = new ArrayList<>();
    List<double[]> masks = new ArrayList<>();
    int total = 0;
    for (Target t : targets) {
      double[] s = scores(op, t.module(), t.name());
      scores.add(s);
      masks.add(currentMask(t.module(), t.name(), s.length));
      total += s.length;
    }
    double[] all = new double[total];
    double[] allMask = new double[total];
    int p = 0;
    for (int i = 0; i < targets.size(); i++) {
      for (int j = 0; j < scores.get(i).length; j++, p++) {
        all[p] = Math.abs(scores.get(i)[j]);
        allMask[p] = masks.get(i)[j];
      }
    }
    int[] cand = unpruned(allMask);
    int k = amount.entries(op, cand.length, null, describe(targets));
    double[] s = new double[cand.length];
    for (int i = 0; i < cand.length; i++) s[i] = all[cand[i]];
    for (int i : smallest(s, k)) allMask[cand[i]] = 0;
    p = 0;
    for (int i = 0; i < targets.size(); i++) {
      double[] m = Arrays.copyOfRange(allMask, p, p + scores.get(i).length);
      p += m.length;
      apply(op, targets.get(i).module(), targets.get(i).name(), m);
    }
  }

  /**
   * Prunes {@code name} with a given mask (0 prunes, 1 keeps), combined with any mask it has by multiplication
   * (PyTorch's {@code custom_from_mask}).
   */
  public static <M extends Module> M customFromMask(M module, String name, Tensor mask) {
    String op = "customFromMask";
    double[] scores = scores(op, module, name);
    if (mask == null) throw new IllegalArgumentException(op + ": mask is null for " + module.name() + "." + name);
    int[] shape = module.param(name).shape();
    if (!Arrays.equals(mask.shape(), shape)) {
      throw new IllegalArgumentException(op + ": mask shape differs from the parameter's (" + Arrays.toString(mask.shape())
          + " vs " + Arrays.toString(shape) + "): " + module.name() + "." + name + "=" + Arrays.toString(shape)
          + ", mask=" + Arrays.toString(mask.shape()));
    }
    double[] given = mask.toDoubleArray();
    double[] m = currentMask(module, name, scores.length);
    for (int i = 0; i < m.length; i++) m[i] *= given[i];
    return apply(op, module, name, m);
  }

  // ---------------------------------------------------------------------------------------------
  // Remove, query

  /**
   * Makes the pruning of {@code name} permanent (PyTorch's {@code prune.remove}): {@code weight_orig} becomes the
   * parameter {@code weight} again (the same tensor), holding {@code weight_orig * weight_mask}, and the mask is
   * dropped.
   */
  public static <M extends Module> M remove(M module, String name) {
    if (module == null) throw new IllegalArgumentException("Prune.remove: module is null");
    if (!isPruned(module, name)) {
      throw new IllegalArgumentException("Prune.remove: parameter '" + name + "' of " + module.name()
          + " is not pruned; prune it before removing the pruning");
    }
    Tensor orig = module.param(name + "_orig");
    Tensor mask = module.buffer(name + "_mask");
    boolean requiresGrad = orig.requiresGrad();
    try (Grad ignored = Grad.off()) {
      orig.mul_(mask);
    }
    module.removeComputed(name);
    module.removeParameter(name + "_orig");
    module.removeBuffer(name + "_mask");
    module.registerParameter(name, orig);
    orig.requiresGrad(requiresGrad);
    return module;
  }

  /** Whether parameter {@code name} of {@code module} is pruned (has {@code name_orig} and {@code name_mask}). */
  public static boolean isPruned(Module module, String name) {
    return module.isComputed(name) && module.hasParam(name + "_orig") && module.hasBuffer(name + "_mask");
  }

  /** Whether any parameter of {@code module} or its descendants is pruned (PyTorch's {@code prune.is_pruned}). */
  public static boolean isPruned(Module module) {
    for (Module m : module.modules()) {
      for (String key : m.namedParameters().keySet()) {
        if (key.endsWith("_orig") && !key.contains(".") && isPruned(m, key.substring(0, key.length() - 5))) return true;
      }
    }
    return false;
  }

  /**
   * The fraction of zero entries in {@code module}'s tensor {@code name} (a pruned weight is read through its mask):
   * 0 for a dense weight, the pruned fraction after pruning.
   */
  public static double sparsity(Module module, String name) {
    Tensor w = module.param(name);
    if (w == null || w.numel() == 0) return 0;
    double[] v;
    try (Grad ignored = Grad.off()) {
      v = w.toDoubleArray();
    }
    long zeros = 0;
    for (double x : v) if (x == 0) zeros++;
    return (double) zeros / v.length;
  }

  // ---------------------------------------------------------------------------------------------
  // Shrinking

  /**
   * Structured pruning that makes the model smaller: a copy of {@code model} where layer {@code layerIndex} (a Linear
   * or a Conv2d with groups=1) keeps only the outputs {@code keep} (increasing indices), and the layers after it take
   * that many inputs: a BatchNorm1d/2d keeps those features (weight, bias, running statistics), stateless per-channel
   * layers (activations, pooling, dropout) and a {@code Flatten()} pass through, and the next Linear or Conv2d keeps
   * the matching input columns or channels. The kept outputs are computed exactly as before; layers other than the
   * rebuilt ones are shared with {@code model}, so use the copy in its place. Pruned weights are copied with their
   * masks applied.
   *
   * @throws IllegalArgumentException naming the layer that cannot be rewritten (say a LayerNorm after the layer)
   */
  public static dev.ember.nn.Sequential shrinkOutputs(dev.ember.nn.Sequential model, int layerIndex, int[] keep) {
    return Shrink.outputs(model, layerIndex, keep);
  }

  /**
   * {@link #shrinkOutputs(dev.ember.nn.Sequential, int, int[])} in place on any model whose leaf layers run in the order
   * they are registered (a Sequential, nested Sequentials, {@link dev.ember.nn.Models#lenet5}): the layer is named as
   * in {@link Module#namedModules()} ({@code features.3}), and the layers after it in that order are rewritten, across
   * containers (a conv at the end of {@code features} and the Linear at the start of {@code classifier}). The rebuilt
   * layers replace the old ones in their parents ({@link Module#replaceChild}); an optimizer must be built afterwards.
   * Returns {@code model}.
   */
  public static <M extends Module> M shrinkOutputs(M model, String layerName, int[] keep) {
    Shrink.outputs(model, layerName, keep);
    return model;
  }

  /**
   * Structured pruning that shrinks one layer of {@code model}: {@link #lnStructured} of its {@code weight} along dim 0
   * (the fraction {@code amount} of its outputs with the smallest L{@code n} norm), the mask made permanent
   * ({@link #remove}), then {@link #shrinkOutputs(Module, String, int[])} to the outputs it kept, so the layer and the
   * next one's input side are rebuilt smaller. The layer is named as in {@link Module#namedModules()}. In place;
   * returns {@code model}.
   *
   * @throws IllegalArgumentException naming the layer when {@code model} has none of that name
   */
  public static <M extends Module> M shrinkStructured(M model, String layerName, double amount, double n) {
    Map<String, Module> leaves = Shrink.leaves(model);
    Module layer = leaves.get(layerName);
    if (layer == null) throw Shrink.noLayer("shrinkStructured", model, layerName, leaves.keySet());
    lnStructured(layer, "weight", amount, n, 0);
    int[] keep = keptOutputs(layer);
    remove(layer, "weight");
    return shrinkOutputs(model, layerName, keep);
  }

  /**
   * The indices along dim 0 (output rows or channels) where {@code module}'s {@code weight} is not all zero: what
   * {@link #lnStructured} left, to pass to {@link #shrinkOutputs}.
   */
  public static int[] keptOutputs(Module module) {
    Tensor w = module.param("weight");
    double[] v;
    try (Grad ignored = Grad.off()) {
      v = w.toDoubleArray();
    }
    int rows = w.size(0);
    int per = rows == 0 ? 0 : v.length / rows;
    List<Integer> kept = new ArrayList<>();
    for (int r = 0; r < rows; r++) {
      for (int j = 0; j < per; j++) {
        if (v[r * per + j] != 0) {
          kept.add(r);
          break;
        }
      }
    }
    return kept.stream().mapToInt(Integer::intValue).toArray();
  }

  // ---------------------------------------------------------------------------------------------
  // Internals

  /** A fraction of the candidates or a count, validated as PyTorch's {@code _validate_pruning_amount_init}. */
  private record Amount(double fraction, int count, boolean isCount) {
    static Amount fraction(String op, double amount) {
      if (!(amount >= 0 && amount <= 1)) {
        throw new IllegalArgumentException(op + ": amount must be a fraction in [0, 1] or a count >= 0, got " + amount);
      }
      return new Amount(amount, 0, false);
    }

    static Amount count(String op, int amount) {
      if (amount < 0) {
        throw new IllegalArgumentException(op + ": amount must be a fraction in [0, 1] or a count >= 0, got " + amount);
      }
      return new Amount(0, amount, true);
    }

    /** How many of {@code size} candidates to prune: the count, or round-half-even(fraction * size) as Python. */
    int entries(String op, int size, Module module, String name) {
      int k = isCount ? count : (int) Math.rint(fraction * size);
      if (k > size) {
        throw new IllegalArgumentException(op + ": amount=" + k + " is more than the " + size + " unpruned entries of "
            + (module == null ? name : module.name() + "." + name));
      }
      return k;
    }
  }

  /** The current value of {@code name} (masked if pruned), flat, as importance scores; checks that it exists. */
  private static double[] scores(String op, Module module, String name) {
    if (module == null) throw new IllegalArgumentException(op + ": module is null");
    if (name == null || !module.hasParam(name)) {
      throw new IllegalArgumentException(op + ": " + module.name() + " has no parameter '" + name + "'; has "
          + module.namedParameters().keySet().stream().filter(k -> !k.contains(".")).toList());
    }
    try (Grad ignored = Grad.off()) {
      return module.param(name).toDoubleArray();
    }
  }

  private static double[] currentMask(Module module, String name, int size) {
    if (isPruned(module, name)) return module.buffer(name + "_mask").toDoubleArray();
    double[] ones = new double[size];
    Arrays.fill(ones, 1);
    return ones;
  }

  /** Indices of the entries whose mask is 1 (PyTorch's {@code mask == 1} slice). */
  private static int[] unpruned(double[] mask) {
    int n = 0;
    for (double m : mask) if (m == 1) n++;
    int[] out = new int[n];
    n = 0;
    for (int i = 0; i < mask.length; i++) if (mask[i] == 1) out[n++] = i;
    return out;
  }

  /** Positions of the k smallest values, ties in index order (a stable sort). */
  private static int[] smallest(double[] values, int k) {
    Integer[] order = new Integer[values.length];
    for (int i = 0; i < order.length; i++) order[i] = i;
    Arrays.sort(order, Comparator.comparingDouble(i -> values[i]));
    int[] out = new int[k];
    for (int i = 0; i < k; i++) out[i] = order[i];
    return out;
  }

  private static String describe(List<Target> targets) {
    List<String> names = new ArrayList<>();
    for (Target t : targets) names.add(t.module().name() + "." + t.name());
    return names.toString();
  }

  /** Installs {@code mask} (flat, 0/1) as {@code name}'s mask: reparametrizes on first pruning, else updates in place. */
  private static <M extends Module> M apply(String op, M module, String name, double[] mask) {
    Tensor current = module.param(name);
    Tensor m;
    try (Grad ignored = Grad.off()) {
      m = Tensor.of(mask, current.shape()).to(current.dtype()).to(current.device());
    }
    if (isPruned(module, name)) {
      try (Grad ignored = Grad.off()) {
        module.buffer(name + "_mask").copy_(m);
      }
      return module;
    }
    for (String taken : List.of(name + "_orig", name + "_mask")) {
      if (module.hasParam(taken) || module.hasBuffer(taken)) {
        throw new IllegalArgumentException(op + ": cannot prune " + module.name() + "." + name + ": the name '" + taken
            + "' is taken");
      }
    }
    Tensor orig = current;
    boolean requiresGrad = orig.requiresGrad();
    module.removeParameter(name);
    module.registerParameter(name + "_orig", orig);
    orig.requiresGrad(requiresGrad);
    module.registerBuffer(name + "_mask", m);
    module.setComputed(name, () -> module.param(name + "_orig").mul(module.buffer(name + "_mask")));
    return module;
  }
}
