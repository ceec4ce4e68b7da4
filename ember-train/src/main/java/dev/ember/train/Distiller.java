package dev.ember.train;

import dev.ember.autograd.Grad;
import dev.ember.nn.HookHandle;
import dev.ember.nn.Linear;
import dev.ember.nn.Module;
import dev.ember.nn.ModuleList;
import dev.ember.nn.functional.Losses;
import dev.ember.nn.loss.DistillationLoss;
import dev.ember.tensor.Device;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.BiFunction;

/**
 * Knowledge distillation inside {@link Trainer}: a module whose forward runs the teacher (in eval mode, without the
 * tape) and then the student on the same batch and returns the student's logits, with a loss function that reads
 * the teacher's logits of that batch, so the trainer's {@code lossFn(out, target)} shape fits unchanged:
 * <pre>{@code
 * Distiller d = Distiller.builder(teacher, student)
 *     .loss(new DistillationLoss(4.0, 0.9))
 *     .hint("0", "features.3", 256, 400, 0.1)   // optional: student layer, teacher layer, their widths, weight
 *     .build();
 * History h = Trainer.builder().maxEpochs(2).callbacks(d.termLogger()).build()
 *     .fit(d, d::loss, new SGD(d.parameters(), 0.05), train, val);
 * Module trained = d.student();
 * }</pre>
 *
 * <p>The teacher is held, not registered: {@link #parameters()} (what the optimizer gets), the state dict and the
 * checkpoints hold the student's parameters ({@code student.*}) and the hint projections' ({@code hints.*}) only,
 * {@link #train(boolean)} leaves the teacher in eval mode, and its forward records nothing, so its parameters get no
 * gradient and are never stepped. {@link #to(Device)} moves it with the student.
 *
 * <p>Hint (feature) distillation, FitNets-style: for each {@link Builder#hint hint} a forward hook captures the
 * output of a chosen student layer and of a chosen teacher layer (names as in {@link Module#namedModules()}); the
 * student's, flattened per sample to {@code [N, studentFeatures]}, goes through a learned {@link Linear} projection
 * to {@code teacherFeatures}, and {@code weight * mse(projection, teacher's flattened)} is added to the loss. The
 * projections are parameters of this module, trained with the student.
 *
 * <p>{@link #loss} must be given the output of this module's latest forward (the trainer does so, in training and in
 * validation); the values of its terms for that batch are {@link #lastTerms()}, and {@link #termLogger()} logs their
 * epoch means. {@link #close()} removes the hooks from the student's and teacher's layers.
 */
public final class Distiller extends Module implements AutoCloseable {
  private final Module teacher;
  private final Module student;
  private final DistillationLoss loss;
  private final List<Hint> hints;
  private final List<HookHandle> handles = new ArrayList<>();
  /** Whether this module's forward is running: hooks capture only then. */
  private boolean capturing;
  private Tensor lastStudent;
  private Tensor lastTeacher;
  private LinkedHashMap<String, Double> lastTerms = new LinkedHashMap<>();

  /** One hint: layers, widths, weight, and the features captured in the latest forward. */
  private static final class Hint {
    final String studentLayer;
    final String teacherLayer;
    final int studentFeatures;
    final int teacherFeatures;
    final double weight;
    Linear projection;
    Tensor studentOut;
    Tensor teacherOut;

    Hint(String studentLayer, String teacherLayer, int studentFeatures, int teacherFeatures, double weight) {
      this.studentLayer = studentLayer;
      this.teacherLayer = teacherLayer;
      this.studentFeatures = studentFeatures;
      this.teacherFeatures = teacherFeatures;
      this.weight = weight;
    }
  }

  private Distiller(Builder b) {
    this.teacher = b.teacher;
    this.student = registerModule("student", b.student);
    this.loss = b.loss;
    this.hints = List.copyOf(b.hints);
    teacher.eval();
    if (!hints.isEmpty()) {
      Map<String, Module> studentLayers = student.namedModules();
      Map<String, Module> teacherLayers = teacher.namedModules();
      for (Hint h : hints) { // every name checked before any hook is registered
        layer("student", studentLayers, h.studentLayer);
        layer("teacher", teacherLayers, h.teacherLayer);
      }
      ModuleList projections = new ModuleList();
      for (Hint h : hints) {
        Module sl = studentLayers.get(h.studentLayer);
        Module tl = teacherLayers.get(h.teacherLayer);
        h.projection = b.generator == null ? new Linear(h.studentFeatures, h.teacherFeatures)
            : new Linear(h.studentFeatures, h.teacherFeatures, true, b.generator);
        projections.add(h.projection);
        handles.add(sl.registerForwardHook((m, in, out) -> {
          if (capturing) h.studentOut = out;
        }));
        handles.add(tl.registerForwardHook((m, in, out) -> {
          if (capturing) h.teacherOut = out;
        }));
      }
      registerModule("hints", projections);
    }
  }

  private static Module layer(String which, Map<String, Module> layers, String name) {
    Module m = layers.get(name);
    if (m == null) {
      List<String> names = new ArrayList<>(layers.keySet());
      names.remove("");
      throw new IllegalArgumentException("Distiller: the " + which + " has no layer '" + name + "' (its layers: "
          + (names.size() > 20 ? names.subList(0, 20) + "..." : names) + ")");
    }
    return m;
  }

  /** A builder distilling {@code teacher} into {@code student}. */
  public static Builder builder(Module teacher, Module student) {
    return new Builder(teacher, student);
  }

  /** The student being trained. */
  public Module student() {
    return student;
  }

  /** The teacher (not a child of this module). */
  public Module teacher() {
    return teacher;
  }

  /** The loss combining the teacher's and the student's logits with the labels. */
  public DistillationLoss distillationLoss() {
    return loss;
  }

  /** The learned projection of hint {@code i} (in the order the hints were added). */
  public Linear projection(int i) {
    return hints.get(i).projection;
  }

  /**
   * Runs the teacher on {@code input} in eval mode without the tape, then the student, and returns the student's
   * output; the teacher's output (and each hint's features) are kept for {@link #loss}.
   *
   * @throws IllegalStateException when a hint's layer did not run in the forward
   */
  @Override
  public Tensor forward(Tensor input) {
    for (Hint h : hints) {
      h.studentOut = null;
      h.teacherOut = null;
    }
    lastStudent = null;
    lastTeacher = null;
    Tensor t;
    Tensor s;
    capturing = true;
    try {
      if (anyTraining(teacher)) teacher.eval(); // a caller may have switched it; the teacher always runs in eval
      try (Grad ignored = Grad.off()) {
        t = teacher.call(input);
      }
      s = student.call(input);
    } finally {
      capturing = false;
    }
    for (int i = 0; i < hints.size(); i++) {
      Hint h = hints.get(i);
      if (h.studentOut == null || h.teacherOut == null) {
        throw new IllegalStateException("Distiller: hint " + i + "'s " + (h.studentOut == null
            ? "student layer '" + h.studentLayer : "teacher layer '" + h.teacherLayer)
            + "' did not run in the forward pass (a layer the forward calls directly, not through call(), runs no hooks)");
      }
    }
    lastTeacher = t;
    lastStudent = s;
    return s;
  }

  private static boolean anyTraining(Module m) {
    for (Module c : m.modules()) if (c.isTraining()) return true;
    return false;
  }

  /**
   * The distillation loss of {@code studentOut} (the output of this module's latest forward) against
   * {@code labels}: the {@link DistillationLoss} with the teacher's logits of that batch, plus each hint's
   * {@code weight * mse(projection(student features), teacher features)}. Usable as the trainer's {@code lossFn}
   * ({@code d::loss}).
   *
   * @throws IllegalStateException when {@code studentOut} is not the output of the latest forward
   * @throws IllegalArgumentException when a hint layer's per-sample width is not the one declared
   */
  public Tensor loss(Tensor studentOut, Tensor labels) {
    if (studentOut == null || studentOut != lastStudent) {
      throw new IllegalStateException("Distiller.loss: the output given is not the one of this distiller's latest"
          + " forward; call the distiller (not the student) on the batch, then the loss on what it returned");
    }
    LinkedHashMap<String, Double> terms = new LinkedHashMap<>();
    Tensor total = loss.forward(studentOut, lastTeacher, labels);
    terms.put("distill_loss", total.item());
    for (int i = 0; i < hints.size(); i++) {
      Hint h = hints.get(i);
      Tensor sf = flat("student", i, h.studentLayer, h.studentOut, h.studentFeatures);
      Tensor tf = flat("teacher", i, h.teacherLayer, h.teacherOut, h.teacherFeatures);
      Tensor projected = h.projection.call(sf);
      if (projected.dtype() != tf.dtype()) tf = tf.to(projected.dtype());
      Tensor mse = Losses.mseLoss(projected, tf);
      terms.put("hint" + i + "_loss", mse.item());
      Tensor term = mse.mul(h.weight);
      total = total.add(term.dtype() == total.dtype() ? term : term.to(total.dtype()));
    }
    lastTerms = terms;
    return total;
  }

  /** A layer's output as [N, features]. */
  private static Tensor flat(String which, int i, String layer, Tensor out, int features) {
    int n = out.dim() == 0 ? 1 : out.size(0);
    long per = n == 0 ? 0 : out.numel() / n;
    if (out.dim() == 0 || per != features) {
      throw new IllegalArgumentException("Distiller: hint " + i + "'s " + which + " layer '" + layer + "' gives "
          + per + " features per sample (output " + Arrays.toString(out.shape()) + "), the hint was declared with "
          + features);
    }
    return out.reshape(n, features);
  }

  /**
   * The unweighted terms of the latest {@link #loss}: {@code distill_loss} (the {@link DistillationLoss} value) and
   * {@code hint<i>_loss} (each hint's mean squared error before its weight).
   */
  public Map<String, Double> lastTerms() {
    return java.util.Collections.unmodifiableMap(lastTerms);
  }

  /**
   * A callback logging, per epoch, the mean over the training batches of each of {@link #lastTerms()} (by the same
   * names), read right after each backward pass.
   */
  public Callback termLogger() {
    return new Callback() {
      final LinkedHashMap<String, double[]> sums = new LinkedHashMap<>();

      @Override
      public void onEpochBegin(TrainContext ctx) {
        sums.clear();
      }

      @Override
      public void onAfterBackward(TrainContext ctx) {
        for (var e : lastTerms.entrySet()) {
          double[] s = sums.computeIfAbsent(e.getKey(), k -> new double[2]);
          s[0] += e.getValue();
          s[1]++;
        }
      }

      @Override
      public void onEpochEnd(TrainContext ctx) {
        for (var e : sums.entrySet()) ctx.log(e.getKey(), e.getValue()[0] / e.getValue()[1]);
      }

      @Override
      public Map<String, Object> stateDict() {
        Map<String, Object> out = new LinkedHashMap<>();
        for (var e : sums.entrySet()) out.put(e.getKey(), List.of(e.getValue()[0], e.getValue()[1]));
        return out;
      }

      @Override
      public void loadStateDict(Map<String, Object> state) {
        sums.clear();
        for (var e : state.entrySet()) {
          List<?> v = (List<?>) e.getValue();
          sums.put(e.getKey(), new double[] {((Number) v.get(0)).doubleValue(), ((Number) v.get(1)).doubleValue()});
        }
      }

      @Override
      public String stateKey() {
        return "distiller_terms";
      }
    };
  }

  /** Moves the student, the projections and the teacher to {@code device}. */
  @Override
  public Module to(Device device) {
    super.to(device);
    teacher.to(device);
    return this;
  }

  /** Removes the hint hooks from the student's and the teacher's layers. */
  @Override
  public void close() {
    for (HookHandle h : handles) h.remove();
  }

  /** Builds a {@link Distiller}. */
  public static final class Builder {
    private final Module teacher;
    private final Module student;
    private DistillationLoss loss = new DistillationLoss(4.0, 0.9);
    private final List<Hint> hints = new ArrayList<>();
    private Generator generator;

    private Builder(Module teacher, Module student) {
      if (teacher == null || student == null) {
        throw new IllegalArgumentException("Distiller: teacher and student must not be null");
      }
      if (teacher == student) throw new IllegalArgumentException("Distiller: the teacher and the student are one module");
      this.teacher = teacher;
      this.student = student;
    }

    /** The loss of the logits ({@code DistillationLoss(4.0, 0.9)} by default). */
    public Builder loss(DistillationLoss loss) {
      if (loss == null) throw new IllegalArgumentException("Distiller: loss must not be null");
      this.loss = loss;
      return this;
    }

    /**
     * Adds a hint: the output of the student's layer {@code studentLayer} ({@code studentFeatures} values per sample)
     * is projected by a learned Linear to the {@code teacherFeatures} values per sample of the teacher's layer
     * {@code teacherLayer}, and {@code weight} times their mean squared error joins the loss.
     */
    public Builder hint(String studentLayer, String teacherLayer, int studentFeatures, int teacherFeatures,
        double weight) {
      if (studentFeatures <= 0 || teacherFeatures <= 0) {
        throw new IllegalArgumentException("Distiller.hint: feature counts must be positive, got student="
            + studentFeatures + ", teacher=" + teacherFeatures);
      }
      if (!(weight >= 0) || Double.isInfinite(weight)) {
        throw new IllegalArgumentException("Distiller.hint: weight must be non-negative and finite, got " + weight);
      }
      hints.add(new Hint(studentLayer, teacherLayer, studentFeatures, teacherFeatures, weight));
      return this;
    }

    /** The generator initializing the hint projections (the global one by default). */
    public Builder generator(Generator generator) {
      this.generator = generator;
      return this;
    }

    /**
     * The distiller; hooks are registered on the hint layers now.
     *
     * @throws IllegalArgumentException naming the layers when a hint names a layer the model does not have
     */
    public Distiller build() {
      return new Distiller(this);
    }
  }
}
