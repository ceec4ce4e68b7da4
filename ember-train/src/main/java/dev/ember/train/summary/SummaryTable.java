package dev.ember.train.summary;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;

/** Renders a {@link ModelSummary} as an aligned text table with its totals. */
final class SummaryTable {
  private SummaryTable() {}

  static String render(ModelSummary s) {
    boolean timed = s.profile() != null;
    boolean memory = s.memory() != null;
    List<String> header = new ArrayList<>(List.of("Layer (type)", "Output shape", "Param #", "FLOPs"));
    boolean sparse = s.isPruned();
    if (sparse) header.add("Sparsity");
    if (memory) header.add("Saved act.");
    if (timed) {
      header.add("Self ms");
      header.add("Share");
    }
    List<List<String>> rows = new ArrayList<>();
    for (LayerSummary l : s.layers()) {
      List<String> r = new ArrayList<>();
      r.add("  ".repeat(l.depth()) + l.label());
      r.add(Arrays.toString(l.outputShape()));
      r.add(l.repeated() ? "(recursive)" : l.params() == 0 ? "--" : String.format(Locale.ROOT, "%,d", l.params()));
      r.add(!l.flopsKnown() ? "?" : l.flops() == 0 ? "--" : String.format(Locale.ROOT, "%,d", l.flops()));
      if (sparse) {
        double v = s.sparsity(l.name());
        r.add(Double.isNaN(v) || l.repeated() ? "--" : String.format(Locale.ROOT, "%.1f%%", 100 * v));
      }
      if (memory) r.add(l.activationBytes() <= 0 ? "--" : MemoryProfile.size(l.activationBytes()));
      if (timed) {
        r.add(String.format(Locale.ROOT, "%.3f", l.selfNanos() / 1e6));
        r.add(String.format(Locale.ROOT, "%.1f%%", 100 * s.timeShare(l)));
      }
      rows.add(r);
    }
    int[] width = new int[header.size()];
    for (int c = 0; c < width.length; c++) {
      width[c] = header.get(c).length();
      for (List<String> r : rows) width[c] = Math.max(width[c], r.get(c).length());
    }
    int total = Arrays.stream(width).sum() + 2 * (width.length - 1);
    StringBuilder sb = new StringBuilder();
    sb.append("=".repeat(total)).append('\n');
    line(sb, header, width);
    sb.append("=".repeat(total)).append('\n');
    for (List<String> r : rows) line(sb, r, width);
    sb.append("=".repeat(total)).append('\n');
    totals(sb, s);
    if (memory) sb.append(s.memory().totals());
    if (timed) profile(sb, s);
    sb.append("=".repeat(total)).append('\n');
    return sb.toString();
  }

  /** The first two columns left-aligned, the numbers right-aligned. */
  private static void line(StringBuilder sb, List<String> cells, int[] width) {
    StringBuilder l = new StringBuilder();
    for (int c = 0; c < cells.size(); c++) {
      if (c > 0) l.append("  ");
      String v = cells.get(c);
      String pad = " ".repeat(width[c] - v.length());
      l.append(c < 2 ? v + pad : pad + v);
    }
    sb.append(l.toString().stripTrailing()).append('\n');
  }

  private static void totals(StringBuilder sb, ModelSummary s) {
    sb.append(String.format(Locale.ROOT, "Total params: %,d%n", s.totalParams()));
    sb.append(String.format(Locale.ROOT, "Trainable params: %,d%n", s.trainableParams()));
    sb.append(String.format(Locale.ROOT, "Non-trainable params: %,d%n", s.nonTrainableParams()));
    sb.append(String.format(Locale.ROOT, "Param memory (MB): %.2f (buffers %.2f)%n", ModelSummary.mb(s.paramBytes()),
        ModelSummary.mb(s.bufferBytes())));
    sb.append(String.format(Locale.ROOT, "Input %s (MB): %.2f%n", Arrays.toString(s.inputShape()),
        ModelSummary.mb(s.inputBytes())));
    sb.append(String.format(Locale.ROOT, "Activation memory, layer outputs (MB): %.2f%n",
        ModelSummary.mb(s.activationBytes())));
    sb.append(String.format(Locale.ROOT, "Total forward MFLOPs: %.2f", s.totalFlops() / 1e6));
    List<LayerSummary> unknown = s.unknownFlopLayers();
    if (!unknown.isEmpty()) {
      sb.append(" (").append(unknown.size()).append(unknown.size() == 1 ? " layer" : " layers")
          .append(" of unknown cost counted as 0: ")
          .append(String.join(", ", unknown.stream().map(LayerSummary::label).distinct().limit(5).toList()))
          .append(unknown.size() > 5 ? ", ..." : "").append(')');
    }
    sb.append('\n');
    List<String> uncalled = s.uncalledLeaves();
    if (!uncalled.isEmpty()) {
      sb.append("Not seen (unused, or run with forward() instead of call()): ")
          .append(String.join(", ", uncalled.stream().limit(8).toList())).append(uncalled.size() > 8 ? ", ..." : "")
          .append("; their FLOPs are not counted\n");
    }
  }

  private static void profile(StringBuilder sb, ModelSummary s) {
    ModelSummary.Profile p = s.profile();
    sb.append(String.format(Locale.ROOT, "Timed %d passes after %d warm-up (eval mode): forward %.3f ms", p.iterations(),
        p.warmup(), p.forwardNanos() / 1e6));
    if (!Double.isNaN(p.forwardBackwardNanos())) {
      sb.append(String.format(Locale.ROOT, ", forward+backward %.3f ms", p.forwardBackwardNanos() / 1e6));
    }
    sb.append('\n').append("Bottlenecks (self time, share of the forward):\n");
    for (LayerSummary l : s.bottlenecks(5)) {
      sb.append(String.format(Locale.ROOT, "  %-40s %9.3f ms %6.1f%%", l.label(), l.selfNanos() / 1e6,
          100 * s.timeShare(l)));
      if (l.flops() > 0 && l.selfNanos() > 0) {
        sb.append(String.format(Locale.ROOT, "  %8.2f GFLOP/s", l.flops() / l.selfNanos()));
      }
      sb.append('\n');
    }
  }
}
