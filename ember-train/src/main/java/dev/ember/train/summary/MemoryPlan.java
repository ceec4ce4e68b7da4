package dev.ember.train.summary;

import dev.ember.nn.Module;
import dev.ember.nn.Sequential;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Which segments of a model to checkpoint so that a training step fits a memory budget, planned from one measured
 * step (a {@link MemoryProfile} with its peak).
 *
 * <p>The segments are the children of a top-level {@link Sequential}, or else the repeated blocks of a model (the
 * first module, in pre-order, whose two or more children are all of one type: a transformer encoder's layers), or
 * else the model's children. Segments are checkpointed one by one ({@link Module#checkpoint(boolean)}), or, for the
 * children of a Sequential (often single layers that hold no more than their output), also in runs: consecutive
 * chosen children form one checkpointed run ({@link #runs()}, {@code CheckpointSequential}). A checkpointed run
 * frees what its forward left live in the step ({@link MemoryProfile.Layer#heldBytes()}, summed over the run) but
 * for its output, and costs that again while its backward recomputes it, with the gradient of its output and that
 * of its largest inner output live (the largest output of a module called inside it). So with the runs R of a
 * choice the predicted peak is
 *
 * <pre>
 *   peak = measured peak - sum over R of (held - output) + max over R of (held + output + inner)
 * </pre>
 *
 * which came out at or above the measured peaks so far (the recomputation need not coincide with the step's peak).
 * Of the choices that fit the budget the plan takes the one that recomputes the fewest bytes (all choices are
 * tried up to 16 segments; beyond, segments are added by largest saving first). When none fits, {@link #plan}
 * throws a {@link MemoryBudgetException} naming the budget and the least peak a choice reaches.
 *
 * @param budgetBytes the budget
 * @param probePeakBytes the measured peak of the step without checkpointing
 * @param segments every candidate segment, in model order
 * @param checkpointed the names of the segments to checkpoint, in model order (empty when the step fits as it is)
 * @param predictedPeakBytes the predicted peak with those checkpointed
 * @param minimumPeakBytes the least predicted peak of any choice (at most the measured peak)
 * @param measuredPeakBytes the largest peak measured while training with the plan; -1 until known
 * @param inRuns whether consecutive checkpointed segments are checkpointed together (a choice the plan has for the
 *     children of a Sequential; blocks are always checkpointed one by one)
 */
public record MemoryPlan(long budgetBytes, long probePeakBytes, List<Segment> segments, List<String> checkpointed,
    long predictedPeakBytes, long minimumPeakBytes, long measuredPeakBytes, boolean inRuns) {

  /**
   * A candidate segment.
   *
   * @param name its dotted name in the model
   * @param type its type name
   * @param heldBytes bytes its forward left live in the measured step
   * @param outputBytes bytes of its output (kept when checkpointed)
   * @param innerBytes bytes of the largest output of a module called inside it (0 for a leaf)
   */
  public record Segment(String name, String type, long heldBytes, long outputBytes, long innerBytes) {
    /** What checkpointing it frees. */
    public long savingBytes() {
      return Math.max(0, heldBytes - outputBytes);
    }
  }

  public MemoryPlan {
    segments = List.copyOf(segments);
    checkpointed = List.copyOf(checkpointed);
  }

  /** This plan with the measured peak. */
  public MemoryPlan withMeasuredPeak(long bytes) {
    return new MemoryPlan(budgetBytes, probePeakBytes, segments, checkpointed, predictedPeakBytes, minimumPeakBytes,
        bytes, inRuns);
  }

  /**
   * The checkpointed segments as runs: each run of consecutive segments (children of a Sequential) is checkpointed
   * as one, as [first index, last index + 1) in {@link #segments()}; without {@link #inRuns()} each on its own.
   */
  public List<int[]> runs() {
    List<Integer> idx = new ArrayList<>();
    for (int i = 0; i < segments.size(); i++) if (checkpointed.contains(segments.get(i).name())) idx.add(i);
    return groups(idx, inRuns);
  }

  private static List<int[]> groups(List<Integer> chosen, boolean inRuns) {
    List<int[]> out = new ArrayList<>();
    for (int i : chosen) {
      int[] last = out.isEmpty() ? null : out.get(out.size() - 1);
      if (inRuns && last != null && last[1] == i) last[1] = i + 1;
      else out.add(new int[] {i, i + 1});
    }
    return out;
  }

  /** The candidate segments of {@code model}: dotted names, in model order (see the class comment). */
  public static List<String> segmentNames(Module model) {
    if (model instanceof Sequential) return children("", model);
    for (var e : model.namedModules().entrySet()) {
      Map<String, Module> ch = e.getValue().namedChildren();
      if (ch.size() < 2) continue;
      Class<?> type = null;
      boolean same = true;
      for (Module m : ch.values()) {
        if (type == null) type = m.getClass();
        else if (m.getClass() != type) same = false;
      }
      if (same) return children(e.getKey(), e.getValue());
    }
    return children("", model);
  }

  private static List<String> children(String prefix, Module m) {
    List<String> names = new ArrayList<>();
    for (String n : m.namedChildren().keySet()) names.add(prefix.isEmpty() ? n : prefix + "." + n);
    return names;
  }

  /** The segments named {@code names}, with their sizes from {@code profile} (their first call). */
  public static List<Segment> segments(MemoryProfile profile, List<String> names) {
    List<Segment> out = new ArrayList<>();
    List<MemoryProfile.Layer> rows = profile.layers();
    for (String n : names) {
      for (int k = 0; k < rows.size(); k++) {
        MemoryProfile.Layer l = rows.get(k);
        if (!l.name().equals(n)) continue;
        long inner = 0;
        for (int j = k + 1; j < rows.size() && rows.get(j).depth() > l.depth(); j++) {
          inner = Math.max(inner, rows.get(j).outputBytes());
        }
        out.add(new Segment(n, l.type(), l.heldBytes(), l.outputBytes(), inner));
        break;
      }
    }
    return out;
  }

  /** The plan for {@code model}, from a step measured by {@code profile} (its peak must be known). */
  public static MemoryPlan plan(long budgetBytes, Module model, MemoryProfile profile) {
    if (profile.peakStepBytes() < 0) {
      throw new IllegalArgumentException("memory budget: the profile has no measured step peak");
    }
    return plan(budgetBytes, profile.peakStepBytes(), segments(profile, segmentNames(model)), model instanceof Sequential);
  }

  /** {@link #plan(long, long, List, boolean)} for blocks checkpointed one by one. */
  public static MemoryPlan plan(long budgetBytes, long probePeakBytes, List<Segment> segments) {
    return plan(budgetBytes, probePeakBytes, segments, false);
  }

  /**
   * The plan for {@code segments} (in model order) of a step whose peak without checkpointing was
   * {@code probePeakBytes}; {@code inRuns}: consecutive checkpointed segments are checkpointed together.
   *
   * @throws IllegalArgumentException if the budget is not positive
   * @throws MemoryBudgetException if no choice fits
   */
  public static MemoryPlan plan(long budgetBytes, long probePeakBytes, List<Segment> segments, boolean inRuns) {
    if (budgetBytes <= 0) throw new IllegalArgumentException("memory budget: must be > 0 bytes, got " + budgetBytes);
    int n = segments.size();
    boolean[] modes = inRuns ? new boolean[] {false, true} : new boolean[] {false};
    List<Integer> best = null;
    boolean bestRuns = false;
    long bestPeak = probePeakBytes;
    long minimum = probePeakBytes;
    if (n <= 16) {
      long bestCost = Long.MAX_VALUE;
      int bestCount = Integer.MAX_VALUE;
      for (int mask = 1; mask < 1 << n; mask++) {
        List<Integer> chosen = new ArrayList<>();
        long cost = 0;
        for (int i = 0; i < n; i++) {
          if ((mask & 1 << i) != 0) {
            chosen.add(i);
            cost += segments.get(i).heldBytes();
          }
        }
        for (boolean runs : modes) {
          long peak = predict(probePeakBytes, segments, chosen, runs);
          minimum = Math.min(minimum, peak);
          if (peak <= budgetBytes && (cost < bestCost || cost == bestCost && chosen.size() < bestCount)) {
            best = chosen;
            bestRuns = runs;
            bestPeak = peak;
            bestCost = cost;
            bestCount = chosen.size();
          }
        }
      }
    } else {
      List<Integer> order = new ArrayList<>();
      for (int i = 0; i < n; i++) order.add(i);
      order.sort(Comparator.comparingLong((Integer i) -> segments.get(i).savingBytes()).reversed()
          .thenComparingInt(i -> i));
      List<Integer> chosen = new ArrayList<>();
      for (int i : order) {
        chosen.add(i);
        chosen.sort(null);
        long peak = predict(probePeakBytes, segments, chosen, false);
        minimum = Math.min(minimum, peak);
        if (best == null && peak <= budgetBytes) {
          best = new ArrayList<>(chosen);
          bestPeak = peak;
        }
      }
    }
    if (probePeakBytes <= budgetBytes) {
      return new MemoryPlan(budgetBytes, probePeakBytes, segments, List.of(), probePeakBytes, minimum, -1, false);
    }
    if (best == null) throw new MemoryBudgetException(budgetBytes, probePeakBytes, minimum, segments);
    List<String> names = new ArrayList<>();
    for (int i : best) names.add(segments.get(i).name());
    return new MemoryPlan(budgetBytes, probePeakBytes, segments, names, bestPeak, minimum, -1, bestRuns);
  }

  /** The predicted peak with the segments at {@code chosen} (increasing) checkpointed one by one. */
  public static long predict(long probePeakBytes, List<Segment> segments, List<Integer> chosen) {
    return predict(probePeakBytes, segments, chosen, false);
  }

  /** The predicted peak with the segments at {@code chosen} (increasing) checkpointed, in runs if {@code inRuns}. */
  public static long predict(long probePeakBytes, List<Segment> segments, List<Integer> chosen, boolean inRuns) {
    long saved = 0;
    long recompute = 0;
    for (int[] run : groups(chosen, inRuns)) {
      long held = 0;
      long inner = 0;
      for (int i = run[0]; i < run[1]; i++) {
        Segment s = segments.get(i);
        held += s.heldBytes();
        inner = Math.max(inner, s.innerBytes());
        if (i < run[1] - 1) inner = Math.max(inner, s.outputBytes()); // an inner output of the run
      }
      long out = segments.get(run[1] - 1).outputBytes();
      saved += Math.max(0, held - out);
      recompute = Math.max(recompute, held + out + inner);
    }
    return probePeakBytes - saved + recompute;
  }

  /** The plan in a few lines: budget, measured and predicted peaks, the checkpointed segments. */
  public String describe() {
    StringBuilder sb = new StringBuilder();
    sb.append(String.format(Locale.ROOT, "memory budget %s: a step peaks at %s without checkpointing", mib(budgetBytes),
        mib(probePeakBytes)));
    if (checkpointed.isEmpty()) {
      sb.append("; it fits, nothing checkpointed");
    } else {
      List<String> runs = new ArrayList<>();
      for (int[] r : runs()) {
        runs.add(r[1] - r[0] == 1 ? segments.get(r[0]).name()
            : segments.get(r[0]).name() + ".." + segments.get(r[1] - 1).name());
      }
      sb.append(String.format(Locale.ROOT, "; checkpointing %d of %d segments (%s): predicted peak %s",
          checkpointed.size(), segments.size(), String.join(", ", runs), mib(predictedPeakBytes)));
    }
    if (measuredPeakBytes >= 0) sb.append(String.format(Locale.ROOT, "; measured peak %s", mib(measuredPeakBytes)));
    return sb.toString();
  }

  /** The plan as plain maps and lists (profile.json's {@code memory.plan}). */
  public Map<String, Object> toMap() {
    LinkedHashMap<String, Object> m = new LinkedHashMap<>();
    m.put("budget_bytes", budgetBytes);
    m.put("probe_peak_bytes", probePeakBytes);
    m.put("checkpointed", checkpointed);
    m.put("in_runs", inRuns);
    m.put("predicted_peak_bytes", predictedPeakBytes);
    m.put("minimum_peak_bytes", minimumPeakBytes);
    m.put("measured_peak_bytes", measuredPeakBytes);
    List<Object> segs = new ArrayList<>();
    for (Segment s : segments) {
      LinkedHashMap<String, Object> e = new LinkedHashMap<>();
      e.put("name", s.name());
      e.put("type", s.type());
      e.put("held_bytes", s.heldBytes());
      e.put("output_bytes", s.outputBytes());
      e.put("inner_bytes", s.innerBytes());
      segs.add(e);
    }
    m.put("segments", segs);
    return m;
  }

  static String mib(long bytes) {
    return String.format(Locale.ROOT, "%.1f MiB", bytes / (1024.0 * 1024.0));
  }

  /**
   * A size such as {@code 300m}: a non-negative number with an optional suffix {@code k}, {@code m}, {@code g}
   * (or {@code kb}, {@code mib}, ...; case-insensitive) for KiB, MiB, GiB (powers of 1024, as the JVM's
   * {@code -Xmx}); a bare number is bytes.
   *
   * @throws IllegalArgumentException naming {@code what} and the text when it is not such a size or not positive
   */
  public static long parseSize(String what, String text) {
    String bad = what + ": expected a size such as 300m, 2g, 512k or 1048576 (bytes; k/m/g = KiB/MiB/GiB), got '"
        + text + "'";
    if (text == null) throw new IllegalArgumentException(bad);
    String t = text.trim().toLowerCase(Locale.ROOT);
    long unit = 1;
    String[][] suffixes = {{"kib", "1024"}, {"mib", "1048576"}, {"gib", "1073741824"}, {"kb", "1024"},
        {"mb", "1048576"}, {"gb", "1073741824"}, {"k", "1024"}, {"m", "1048576"}, {"g", "1073741824"}, {"b", "1"}};
    for (String[] s : suffixes) {
      if (t.endsWith(s[0])) {
        unit = Long.parseLong(s[1]);
        t = t.substring(0, t.length() - s[0].length()).trim();
        break;
      }
    }
    if (t.isEmpty() || !t.matches("[0-9]+(\\.[0-9]+)?")) throw new IllegalArgumentException(bad);
    double v = Double.parseDouble(t) * unit;
    if (!(v >= 1) || v > Long.MAX_VALUE / 2.0) {
      throw new IllegalArgumentException(what + ": the size must be at least 1 byte and finite, got '" + text + "'");
    }
    return (long) v;
  }
}
