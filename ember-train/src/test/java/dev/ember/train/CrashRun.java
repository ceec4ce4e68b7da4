package dev.ember.train;

import dev.ember.nn.Module;
import dev.ember.nn.functional.F;
import dev.ember.nn.io.SafeTensors;
import dev.ember.optim.Adam;
import dev.ember.optim.schedule.StepLR;
import dev.ember.tensor.Tensor;
import dev.ember.train.callbacks.ModelCheckpoint;
import java.nio.file.Path;
import java.util.LinkedHashMap;

/**
 * A training run that checkpoints after every other step and resumes from the newest checkpoint
 * in its folder when there is one; at the end it writes the parameters and the loss history to
 * {@code final.safetensors}. {@link CrashResumeTest} kills it with SIGKILL at random moments.
 */
public final class CrashRun {
  static final int EPOCHS = 120;

  public static void main(String[] args) throws Exception {
    run(Path.of(args[0]));
  }

  static void run(Path dir) throws Exception {
    Path ckpts = dir.resolve("checkpoints");
    Module model = Fixtures.mlp(3);
    var opt = new Adam(model.parameters(), 0.01);
    var sched = new StepLR(opt, 50, 0.9);
    var builder = Trainer.builder().maxEpochs(EPOCHS)
        .scheduler(sched, Trainer.Interval.BATCH)
        .callbacks(new ModelCheckpoint(ckpts, 0, 2, 3));
    var latest = ModelCheckpoint.latest(ckpts);
    if (latest.isPresent()) builder.resumeFrom(latest.get());
    History h = builder.build().fit(model, F::crossEntropy, opt, Fixtures.source(Fixtures.blobs(1, 400), 8, 7), null);
    LinkedHashMap<String, Tensor> out = new LinkedHashMap<>(model.stateDict());
    out.put("history.loss", Tensor.of(h.values("loss"), h.values("loss").length));
    SafeTensors.save(out, dir.resolve("final.safetensors"));
  }
}
