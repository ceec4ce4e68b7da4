package dev.ember.optim.schedule;

import dev.ember.optim.Optimizer;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Runs schedules one after another, as {@code SequentialLR}: schedule {@code i} runs from
 * milestone {@code i - 1} (step 0 for the first) and sees steps counted from its own start:
 * {@code lr(t) = schedulers[i].lrAt(t - milestones[i - 1])} with {@code i} the number of
 * milestones {@code <= t}. The schedules must drive the same optimizer.
 */
public final class SequentialLR extends LRScheduler {
  private final List<LRScheduler> schedulers;
  private final int[] milestones;

  public SequentialLR(Optimizer optimizer, List<LRScheduler> schedulers, int[] milestones) {
    super(optimizer);
    require(!schedulers.isEmpty(), "SequentialLR: expects at least one scheduler");
    require(milestones.length == schedulers.size() - 1,
        "SequentialLR: expects number of schedulers provided to be one more than the number of milestone points, but got"
            + " number of schedulers " + schedulers.size() + " and the number of milestones to be equal to " + milestones.length);
    for (int i = 0; i < schedulers.size(); i++) {
      require(schedulers.get(i).optimizer() == optimizer, "SequentialLR: expects all schedulers to belong to the same"
          + " optimizer, but got schedulers at index 0 and " + i + " to be different");
    }
    for (int i = 1; i < milestones.length; i++) {
      require(milestones[i] > milestones[i - 1], "SequentialLR: milestones must increase, got " + java.util.Arrays.toString(milestones));
    }
    this.schedulers = List.copyOf(schedulers);
    this.milestones = milestones.clone();
    start();
  }

  @Override
  protected double lr(double base, int group, long t) {
    int i = 0;
    while (i < milestones.length && milestones[i] <= t) i++;
    long local = i == 0 ? t : t - milestones[i - 1];
    return schedulers.get(i).lrAt(group, local);
  }

  @Override
  public Map<String, Object> stateDict() {
    Map<String, Object> s = new LinkedHashMap<>(super.stateDict());
    List<Map<String, Object>> subs = new ArrayList<>();
    for (LRScheduler sch : schedulers) subs.add(sch.stateDict());
    s.put("_schedulers", subs);
    return s;
  }

  @Override
  @SuppressWarnings("unchecked")
  public void loadStateDict(Map<String, Object> state) {
    super.loadStateDict(state);
    if (state.get("_schedulers") instanceof List<?> subs) {
      require(subs.size() == schedulers.size(), "SequentialLR: state has " + subs.size() + " schedulers, expected "
          + schedulers.size());
      for (int i = 0; i < subs.size(); i++) schedulers.get(i).loadStateDict((Map<String, Object>) subs.get(i));
    }
  }
}
