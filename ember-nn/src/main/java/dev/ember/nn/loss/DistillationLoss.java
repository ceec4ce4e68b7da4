package dev.ember.nn.loss;

import dev.ember.nn.Module;
import dev.ember.nn.functional.Losses;
import dev.ember.nn.functional.Reduction;
import dev.ember.tensor.Check;
import dev.ember.tensor.DType;
import dev.ember.tensor.Tensor;
import java.util.Arrays;
import java.util.Locale;

/**
 * Knowledge distillation (Hinton, Vinyals and Dean, 2015): the student's logits are pulled towards the teacher's
 * temperature-softened distribution and, by {@code 1 - alpha}, towards the hard labels:
 * <pre>
 *   loss = alpha * T^2 * KL(softmax(teacher / T) || softmax(student / T))     (batchmean)
 *        + (1 - alpha) * cross_entropy(student, labels)                       (mean)
 * </pre>
 * which is, in PyTorch, {@code alpha * T * T * F.kl_div(F.log_softmax(s / T, 1), F.log_softmax(t / T, 1),
 * reduction="batchmean", log_target=True) + (1 - alpha) * F.cross_entropy(s, y)}. The factor {@code T^2} keeps
 * the soft term's gradients on the scale of the hard term's as T changes.
 *
 * <p>Logits are {@code [N, C]} (student and teacher alike), labels class indices {@code [N]}. The teacher's logits
 * are normally computed without the tape, but the loss is differentiable with respect to both. A term whose weight is
 * zero is not computed, so {@code alpha == 1} takes null labels (unlabelled transfer data) and {@code alpha == 0}
 * a null teacher. BF16/F16 logits are widened to float32 first (the loss is float32); F64 stays F64.
 */
public class DistillationLoss extends Module {
  private static final String OP = "distillation_loss";

  private final double temperature;
  private final double alpha;

  /**
   * @param temperature T &gt; 0; Hinton's experiments use 2 to 20, 4 is a common default
   * @param alpha the weight of the soft (teacher) term, in [0, 1]; the hard-label term gets {@code 1 - alpha}
   * @throws IllegalArgumentException when T is not positive and finite or alpha is outside [0, 1]
   */
  public DistillationLoss(double temperature, double alpha) {
    if (!(temperature > 0) || Double.isInfinite(temperature)) {
      throw new IllegalArgumentException(OP + ": temperature must be positive and finite, got " + temperature);
    }
    if (!(alpha >= 0 && alpha <= 1)) {
      throw new IllegalArgumentException(OP + ": alpha must be in [0, 1], got " + alpha);
    }
    this.temperature = temperature;
    this.alpha = alpha;
  }

  public double temperature() {
    return temperature;
  }

  public double alpha() {
    return alpha;
  }

  /**
   * The loss of {@code student} logits given the {@code teacher}'s logits for the same batch and the
   * {@code labels}: a scalar.
   *
   * @throws IllegalArgumentException naming the op and the shapes when the logits are not [N, C], differ in shape,
   *     or the labels do not fit (see {@link Losses#crossEntropy}); when a needed operand is null
   */
  public Tensor forward(Tensor student, Tensor teacher, Tensor labels) {
    if (student == null) throw new IllegalArgumentException(OP + ": student logits are null");
    if (alpha > 0 && teacher == null) {
      throw new IllegalArgumentException(OP + ": teacher logits are null but alpha=" + alpha + " weighs them");
    }
    if (alpha < 1 && labels == null) {
      throw new IllegalArgumentException(OP + ": labels are null but the hard-label term has weight 1 - alpha="
          + (1 - alpha) + "; use alpha=1 for unlabelled data");
    }
    if (student.dim() != 2) {
      throw Check.fail(OP, "student logits must be [N, C], got rank " + student.dim(), "student", student,
          "hint", "flatten extra dims into the batch: logits.reshape(-1, C)");
    }
    if (!student.dtype().isFloatingPoint()) {
      throw Check.fail(OP, "student logits must be floating-point, got " + student.dtype().torchName(), "student",
          student);
    }
    if (teacher != null && !Arrays.equals(student.shapeRef(), teacher.shapeRef())) {
      throw Check.fail(OP, "student and teacher logits differ in shape", "student", student, "teacher", teacher);
    }
    if (teacher != null && !teacher.dtype().isFloatingPoint()) {
      throw Check.fail(OP, "teacher logits must be floating-point, got " + teacher.dtype().torchName(), "teacher",
          teacher);
    }
    DType dtype = student.dtype() == DType.F64 || (teacher != null && teacher.dtype() == DType.F64) ? DType.F64
        : DType.F32;
    Tensor s = student.dtype() == dtype ? student : student.to(dtype);
    Tensor loss = null;
    if (alpha > 0) {
      Tensor t = teacher.dtype() == dtype ? teacher : teacher.to(dtype);
      Tensor logP = s.div(temperature).logSoftmax(1);
      Tensor logQ = t.div(temperature).logSoftmax(1);
      // KL(q || p) with q the teacher's distribution: kl_div(input=log p, target=log q, log_target)
      Tensor soft = Losses.klDiv(logP, logQ, Reduction.BATCHMEAN, true);
      loss = soft.mul(alpha * temperature * temperature);
    }
    if (alpha < 1) {
      Tensor hard = Losses.crossEntropy(s, labels).mul(1 - alpha);
      loss = loss == null ? hard : loss.add(hard);
    }
    return loss;
  }

  @Override
  protected String extraRepr() {
    return String.format(Locale.ROOT, "temperature=%s, alpha=%s", temperature, alpha);
  }
}
