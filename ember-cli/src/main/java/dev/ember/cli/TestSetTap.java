package dev.ember.cli;

import dev.ember.autograd.Grad;
import dev.ember.data.Batch;
import dev.ember.data.BatchIterator;
import dev.ember.data.BatchSource;
import dev.ember.metrics.Accuracy;
import dev.ember.metrics.ConfusionMatrix;
import dev.ember.nn.HookHandle;
import dev.ember.nn.Module;
import dev.ember.tensor.DType;
import dev.ember.tensor.Tensor;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;

/**
 * The test set as the trainer's validation source, counting the model's predictions on the way: each pass over
 * it (one validation) also fills a confusion matrix and a top-1 accuracy from the logits the validation computes
 * anyway. A completed run's test figures ({@code confusion_matrix.json}, {@code test_accuracy}) are those of the
 * last epoch's validation, on the same weights, images, batches and precision, so {@code ember train} takes them
 * from there instead of a second forward pass over the 10,000 images; {@link #result()} hands them out only when
 * that pass saw the whole set and no parameter has been written since (else the caller evaluates again).
 */
final class TestSetTap implements BatchSource {
  /** The figures of one complete pass. */
  record Result(long[][] confusion, double accuracy) {}

  private final BatchSource source;
  private final Module model;
  private final int classes;
  private final long samples;
  /** Of the pass in progress or the last one. */
  private ConfusionMatrix confusion;
  private Accuracy accuracy;
  /**
   * The targets of the batches taken and not yet counted, oldest first: a device run's loader takes the next batch
   * on a background thread while the model runs on the current one (pinned, non-blocking copies), so a batch's
   * target waits here for its own forward pass instead of one field the next batch would overwrite.
   */
  private final ConcurrentLinkedQueue<Tensor> targets = new ConcurrentLinkedQueue<>();
  private long seen;
  /** Whether the pass saw a call of the model that was not on a batch of it. */
  private boolean stray;
  /** The last pass, when it saw every sample, and the parameters' versions when it ended; null otherwise. */
  private Result last;
  private int[] versions;

  /** Taps {@code source} ({@code samples} samples) for {@code model}'s {@code classes}-way predictions. */
  TestSetTap(BatchSource source, Module model, int classes, long samples) {
    this.source = source;
    this.model = model;
    this.classes = classes;
    this.samples = samples;
  }

  @Override
  public int numBatches() {
    return source.numBatches();
  }

  /**
   * The batches of {@code source}; a pass from its start counts the predictions of {@code model}'s calls on them
   * (a forward hook, registered for the pass and removed when the iterator closes).
   */
  @Override
  public BatchIterator iterate(int epoch, int skipBatches) {
    last = null;
    BatchIterator it = source.iterate(epoch, skipBatches);
    if (skipBatches != 0) return it;                   // not a whole pass: nothing to count
    confusion = new ConfusionMatrix(classes);
    accuracy = new Accuracy();
    targets.clear();
    seen = 0;
    stray = false;
    HookHandle hook = model.registerForwardHook((m, in, out) -> count(out));
    return new BatchIterator() {
      @Override
      public boolean hasNext() {
        return it.hasNext();
      }

      @Override
      public Batch next() {
        Batch b = it.next();
        targets.add(b.target());
        return b;
      }

      @Override
      public void close() {
        hook.remove();
        targets.clear();
        boolean whole = !stray && !it.hasNext() && seen == samples;
        it.close();
        if (whole) {
          last = new Result(confusion.compute(), accuracy.compute());
          versions = versions(model.parameters());
        }
      }
    };
  }

  /**
   * The model's output for the oldest batch taken and not yet counted: counted as the final evaluation counted it
   * (host, float32).
   */
  private void count(Tensor out) {
    Tensor target = targets.poll();
    // a call that is not a batch's (none in a validation): no target waiting, or another batch size
    if (target == null || out.dim() == 0 || out.size(0) != target.size(0)) {
      stray = true;
      return;
    }
    try (var ignored = Grad.off()) {
      Tensor logits = out.cpu().to(DType.F32);
      confusion.update(logits, target);
      accuracy.update(logits, target);
      seen += target.size(0);
    }
  }

  /** The last pass's figures if it covered the whole set and the parameters are as it saw them, else null. */
  Result result() {
    if (last == null || !java.util.Arrays.equals(versions, versions(model.parameters()))) return null;
    return last;
  }

  private static int[] versions(List<Tensor> params) {
    int[] v = new int[params.size()];
    for (int i = 0; i < v.length; i++) v[i] = params.get(i).storage().version();
    return v;
  }
}
