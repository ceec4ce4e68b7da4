package dev.ember.train.report;

import dev.ember.nn.io.AtomicFiles;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Writes {@code report.html} into a run folder: one self-contained page (inline CSS and SVG, no
 * script, nothing fetched from the network) with
 * <ul>
 *   <li>the run's settings (the {@code info} map) and a summary of the final and best values;</li>
 *   <li>line charts per epoch from {@code metrics.csv}: loss (train and validation), accuracy
 *       (train and validation), then every other metric, the learning rate, the epoch time and, for a
 *       run that scales its loss (fp16), the loss scale and the steps it skipped, with axes, ticks, labels
 *       and a legend;</li>
 *   <li>the confusion matrix from {@code confusion_matrix.json} ({@code {"labels":[..],"matrix":[[..]]}},
 *       rows = true class) as a table shaded by each row's share, with per-class recall;</li>
 *   <li>the step profile from {@code profile.json} (as {@link dev.ember.train.callbacks.Profiling}
 *       writes it) as a table and a stacked bar;</li>
 *   <li>weight and gradient histograms from {@code histograms.jsonl} (as
 *       {@link dev.ember.train.callbacks.HistogramLogger} writes it): first and last snapshot;</li>
 *   <li>the metrics table itself.</li>
 * </ul>
 * Only {@code metrics.csv} is required. The page is written atomically (temporary file + rename).
 * Train values are drawn in {@link #TRAIN_COLOR}, validation values in {@link #VAL_COLOR}.
 */
public final class HtmlReport {
  /** Stroke color of training curves. */
  public static final String TRAIN_COLOR = "#1f77b4";
  /** Stroke color of validation curves. */
  public static final String VAL_COLOR = "#ff7f0e";
  /** Stroke color of single-series curves (learning rate, epoch time, ...). */
  public static final String OTHER_COLOR = "#2ca02c";

  /** Colors of the profile's phases: none of them is a curve color, so curves stay recognisable in a picture. */
  private static final String[] PALETTE = {"#8c564b", "#9467bd", "#bcbd22", "#d62728", "#17becf", "#7f7f7f",
      "#e377c2", "#393b79", "#637939", "#843c39"};
  private static final int MAX_MATRIX_CLASSES = 60;
  private static final int MAX_HISTOGRAM_PARAMS = 60;
  private static final int MAX_TABLE_ROWS = 300;
  private static final java.util.Set<String> AXIS_COLUMNS = java.util.Set.of("epoch", "step", "time_s");
  /** Single-series charts after the metrics, with their titles, in this order. */
  private static final Map<String, String> SINGLES = new java.util.LinkedHashMap<>();

  static {
    SINGLES.put("lr", "learning rate");
    SINGLES.put("epoch_time_s", "seconds per epoch");
    SINGLES.put("loss_scale", "loss scale");
    SINGLES.put("skipped_steps", "skipped steps per epoch");
  }

  private HtmlReport() {}

  /** Writes {@code runDir/report.html} from the files in {@code runDir}; returns its path. */
  public static Path write(Path runDir) throws IOException {
    return write(runDir, Map.of());
  }

  /**
   * Writes {@code runDir/report.html}; {@code info} (e.g. model, optimizer, test accuracy) is shown
   * as the run's settings, in the map's order.
   *
   * @throws java.nio.file.NoSuchFileException if {@code runDir/metrics.csv} does not exist
   * @throws RunFileException if a run file is malformed (it names the file and where)
   */
  public static Path write(Path runDir, Map<String, ?> info) throws IOException {
    if (runDir == null) throw new IllegalArgumentException("HtmlReport.write: runDir must not be null");
    RunData data = RunData.read(runDir);
    String html = render(data, info == null ? Map.of() : info, runDir.toAbsolutePath().normalize().getFileName());
    Path out = runDir.resolve("report.html");
    AtomicFiles.write(out, html);
    return out;
  }

  static String render(RunData data, Map<String, ?> info, Path name) {
    StringBuilder sb = new StringBuilder(64 * 1024);
    String title = "Training report" + (name == null ? "" : " \u2014 " + name);
    sb.append("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n<title>").append(esc(title))
        .append("</title>\n<style>\n").append(CSS).append("</style>\n</head>\n<body>\n");
    sb.append("<h1>").append(esc(title)).append("</h1>\n");
    sb.append("<div class=\"top\">\n");
    infoTable(sb, info);
    summary(sb, data.metrics);
    sb.append("</div>\n");
    charts(sb, data.metrics);
    if (data.confusion != null) confusion(sb, data.confusion);
    if (data.profile != null) profile(sb, data.profile);
    if (data.profile != null && data.profile.memory() != null) memory(sb, data.profile.memory());
    if (!data.histograms.isEmpty()) histograms(sb, data.histograms);
    metricsTable(sb, data.metrics);
    sb.append("<p class=\"foot\">Written by Ember from the files of the run folder.</p>\n</body>\n</html>\n");
    return sb.toString();
  }

  private static final String CSS = """
      body{font-family:-apple-system,"Segoe UI",Helvetica,Arial,sans-serif;font-size:14px;color:#222;\
      max-width:1160px;margin:16px auto;padding:0 12px;background:#fff}
      h1{font-size:22px;margin:4px 0 12px}
      h2{font-size:17px;margin:22px 0 8px;border-bottom:1px solid #ddd;padding-bottom:4px}
      .top{display:flex;gap:24px;flex-wrap:wrap}
      .top>div{flex:1;min-width:320px}
      table{border-collapse:collapse}
      td,th{padding:3px 8px;text-align:left;font-variant-numeric:tabular-nums}
      table.kv td:first-child{color:#555}
      table.kv td{border-bottom:1px solid #eee}
      .charts{display:flex;flex-wrap:wrap;gap:12px}
      .chart{width:562px;border:1px solid #e3e3e3;border-radius:4px}
      .chart svg{display:block}
      table.cm td{text-align:right;min-width:34px;border:1px solid #fff;font-size:12px}
      table.cm th{font-size:12px;font-weight:600;color:#444}
      table.cm th.rot{writing-mode:vertical-rl;transform:rotate(180deg);text-align:left;vertical-align:bottom}
      table.num td,table.num th{text-align:right;border-bottom:1px solid #eee}
      table.num td:first-child,table.num th:first-child{text-align:left}
      .hists{display:flex;flex-wrap:wrap;gap:12px}
      .hist{width:352px;border:1px solid #e3e3e3;border-radius:4px;padding:6px}
      .hist .name{font-weight:600;font-family:monospace}
      .small{font-size:12px;color:#555}
      .legend span{display:inline-block;margin-right:14px}
      .sw{display:inline-block;width:12px;height:12px;vertical-align:-1px;margin-right:4px}
      .foot{color:#888;font-size:12px;margin-top:28px}
      """;

  private static void infoTable(StringBuilder sb, Map<String, ?> info) {
    sb.append("<div>\n<h2>Run</h2>\n");
    if (info.isEmpty()) {
      sb.append("<p class=\"small\">No run settings were given.</p>\n");
    } else {
      sb.append("<table class=\"kv\">\n");
      for (var e : info.entrySet()) {
        sb.append("<tr><td>").append(esc(String.valueOf(e.getKey()))).append("</td><td>")
            .append(esc(String.valueOf(e.getValue()))).append("</td></tr>\n");
      }
      sb.append("</table>\n");
    }
    sb.append("</div>\n");
  }

  private static void summary(StringBuilder sb, RunData.Metrics m) {
    sb.append("<div>\n<h2>Summary</h2>\n<table class=\"kv\">\n");
    double[] x = xValues(m);
    kv(sb, "epochs logged", Integer.toString(m.rows()));
    if (m.has("step") && m.rows() > 0) kv(sb, "optimizer steps", fmt(last(m.column("step"))));
    if (m.has("time_s") && m.rows() > 0) kv(sb, "training time", duration(last(m.column("time_s"))));
    for (String key : List.of("loss", "val_loss", "accuracy", "val_accuracy")) {
      if (!m.has(key)) continue;
      double[] v = m.column(key);
      int lastIdx = lastFinite(v);
      if (lastIdx < 0) continue;
      boolean lower = key.endsWith("loss");
      int best = lastIdx;
      for (int i = 0; i < v.length; i++) {
        if (Double.isFinite(v[i]) && (lower ? v[i] < v[best] : v[i] > v[best])) best = i;
      }
      kv(sb, key, "final " + fmt(v[lastIdx]) + ", best " + fmt(v[best]) + " (epoch " + fmt(x[best]) + ")");
    }
    if (m.has("skipped_steps")) {                       // logged in the epochs that skipped any
      double total = 0;
      for (double d : m.column("skipped_steps")) if (Double.isFinite(d)) total += d;
      kv(sb, "skipped steps", fmt(total));
    }
    if (m.has("loss_scale") && lastFinite(m.column("loss_scale")) >= 0) {
      double[] v = m.column("loss_scale");
      kv(sb, "loss scale", "final " + fmt(v[lastFinite(v)]));
    }
    sb.append("</table>\n</div>\n");
  }

  private static void kv(StringBuilder sb, String k, String v) {
    sb.append("<tr><td>").append(esc(k)).append("</td><td>").append(esc(v)).append("</td></tr>\n");
  }

  /** A line series: points with a non-finite y are left out. */
  record Series(String name, String color, double[] x, double[] y, boolean dashed) {}

  private static double[] xValues(RunData.Metrics m) {
    double[] epoch = m.column("epoch");
    boolean ok = epoch != null;
    if (ok) for (double e : epoch) ok &= Double.isFinite(e);
    if (ok) return epoch;
    double[] x = new double[m.rows()];
    for (int i = 0; i < x.length; i++) x[i] = i + 1;
    return x;
  }

  private static void charts(StringBuilder sb, RunData.Metrics m) {
    sb.append("<h2>Curves</h2>\n");
    double[] x = xValues(m);
    String xLabel = m.has("epoch") ? "epoch" : "row";
    List<String> bases = new ArrayList<>();
    List<String> singles = new ArrayList<>();
    if (m.has("loss") || m.has("val_loss")) bases.add("loss");
    if (m.has("accuracy") || m.has("val_accuracy")) bases.add("accuracy");
    for (String c : m.columns()) {
      if (AXIS_COLUMNS.contains(c) || SINGLES.containsKey(c)) continue;
      String base = c.startsWith("val_") ? c.substring(4) : c;
      if (!bases.contains(base)) bases.add(base);
    }
    for (String c : SINGLES.keySet()) if (m.has(c)) singles.add(c);
    sb.append("<div class=\"charts\">\n");
    int charts = 0;
    for (String base : bases) {
      List<Series> s = new ArrayList<>();
      if (m.has(base)) s.add(new Series(base, TRAIN_COLOR, x, m.column(base), false));
      if (m.has("val_" + base)) s.add(new Series("val_" + base, VAL_COLOR, x, m.column("val_" + base), false));
      if (s.stream().allMatch(se -> lastFinite(se.y()) < 0)) continue;
      lineChart(sb, base, xLabel, s);
      charts++;
    }
    for (String c : singles) {
      if (lastFinite(m.column(c)) < 0) continue;
      String title = SINGLES.get(c);
      lineChart(sb, title, xLabel, List.of(new Series(c, OTHER_COLOR, x, m.column(c), false)));
      charts++;
    }
    sb.append("</div>\n");
    if (charts == 0) sb.append("<p class=\"small\">metrics.csv holds no values to draw yet.</p>\n");
  }

  static final int CW = 560;
  static final int CH = 300;
  private static final int ML = 64;
  private static final int MR = 18;
  private static final int MT = 36;
  private static final int MB = 48;

  /** An SVG line chart with grid, ticks, axis labels and a legend; one polyline per series. */
  static void lineChart(StringBuilder sb, String title, String xLabel, List<Series> series) {
    double xmin = Double.POSITIVE_INFINITY;
    double xmax = Double.NEGATIVE_INFINITY;
    double ymin = Double.POSITIVE_INFINITY;
    double ymax = Double.NEGATIVE_INFINITY;
    for (Series s : series) {
      for (int i = 0; i < s.y().length; i++) {
        if (!Double.isFinite(s.y()[i]) || !Double.isFinite(s.x()[i])) continue;
        xmin = Math.min(xmin, s.x()[i]);
        xmax = Math.max(xmax, s.x()[i]);
        ymin = Math.min(ymin, s.y()[i]);
        ymax = Math.max(ymax, s.y()[i]);
      }
    }
    double[] yt = ticks(ymin, ymax, 6, false);
    double[] xt = ticks(xmin, xmax, 8, true);
    double x0 = xt[0];
    double x1 = xt[xt.length - 1];
    double y0 = yt[0];
    double y1 = yt[yt.length - 1];
    int pw = CW - ML - MR;
    int ph = CH - MT - MB;
    sb.append("<div class=\"chart\"><svg xmlns=\"http://www.w3.org/2000/svg\" width=\"").append(CW).append("\" height=\"")
        .append(CH).append("\" viewBox=\"0 0 ").append(CW).append(' ').append(CH).append("\" role=\"img\" aria-label=\"")
        .append(esc(title)).append("\" class=\"linechart\" data-title=\"").append(esc(title)).append("\">\n");
    sb.append("<text x=\"").append(ML).append("\" y=\"22\" font-size=\"15\" font-weight=\"600\" fill=\"#222\">")
        .append(esc(title)).append("</text>\n");
    // grid and y ticks
    int yDecimals = decimals(yt);
    for (double t : yt) {
      double py = MT + ph - (t - y0) / (y1 - y0) * ph;
      sb.append("<line x1=\"").append(ML).append("\" x2=\"").append(ML + pw).append("\" y1=\"").append(f1(py))
          .append("\" y2=\"").append(f1(py)).append("\" stroke=\"#e6e6e6\" stroke-width=\"1\"/>");
      sb.append("<text x=\"").append(ML - 7).append("\" y=\"").append(f1(py + 4))
          .append("\" font-size=\"11\" text-anchor=\"end\" fill=\"#444\">").append(tickLabel(t, yDecimals)).append("</text>\n");
    }
    int xDecimals = decimals(xt);
    for (double t : xt) {
      double px = ML + (t - x0) / (x1 - x0) * pw;
      sb.append("<line x1=\"").append(f1(px)).append("\" x2=\"").append(f1(px)).append("\" y1=\"").append(MT + ph)
          .append("\" y2=\"").append(MT + ph + 5).append("\" stroke=\"#333\" stroke-width=\"1\"/>");
      sb.append("<text x=\"").append(f1(px)).append("\" y=\"").append(MT + ph + 18)
          .append("\" font-size=\"11\" text-anchor=\"middle\" fill=\"#444\">").append(tickLabel(t, xDecimals)).append("</text>\n");
    }
    // axes
    sb.append("<line x1=\"").append(ML).append("\" x2=\"").append(ML).append("\" y1=\"").append(MT).append("\" y2=\"")
        .append(MT + ph).append("\" stroke=\"#333\" stroke-width=\"1\"/>");
    sb.append("<line x1=\"").append(ML).append("\" x2=\"").append(ML + pw).append("\" y1=\"").append(MT + ph)
        .append("\" y2=\"").append(MT + ph).append("\" stroke=\"#333\" stroke-width=\"1\"/>\n");
    sb.append("<text x=\"").append(ML + pw / 2).append("\" y=\"").append(CH - 8)
        .append("\" font-size=\"12\" text-anchor=\"middle\" fill=\"#333\">").append(esc(xLabel)).append("</text>\n");
    sb.append("<text x=\"14\" y=\"").append(MT + ph / 2).append("\" font-size=\"12\" text-anchor=\"middle\" fill=\"#333\"")
        .append(" transform=\"rotate(-90 14 ").append(MT + ph / 2).append(")\">").append(esc(title)).append("</text>\n");
    // series
    for (Series s : series) {
      StringBuilder pts = new StringBuilder();
      int n = 0;
      for (int i = 0; i < s.y().length; i++) {
        if (!Double.isFinite(s.y()[i]) || !Double.isFinite(s.x()[i])) continue;
        double px = ML + (s.x()[i] - x0) / (x1 - x0) * pw;
        double py = MT + ph - (s.y()[i] - y0) / (y1 - y0) * ph;
        if (n++ > 0) pts.append(' ');
        pts.append(f1(px)).append(',').append(f1(py));
      }
      if (n == 0) continue;
      sb.append("<polyline class=\"series\" data-series=\"").append(esc(s.name())).append("\" fill=\"none\" stroke=\"")
          .append(s.color()).append("\" stroke-width=\"2.5\" stroke-linejoin=\"round\" stroke-linecap=\"round\"")
          .append(s.dashed() ? " stroke-dasharray=\"6 4\"" : "").append(" points=\"").append(pts).append("\"/>\n");
      if (n <= 60) {
        for (String p : pts.toString().split(" ")) {
          String[] xy = p.split(",");
          sb.append("<circle cx=\"").append(xy[0]).append("\" cy=\"").append(xy[1]).append("\" r=\"3\" fill=\"")
              .append(s.color()).append("\"/>");
        }
        sb.append('\n');
      }
    }
    // legend, right-aligned in the title row
    double lx = CW - MR;
    for (int k = series.size() - 1; k >= 0; k--) {
      Series s = series.get(k);
      double w = 28 + 7.0 * s.name().length();
      lx -= w;
      sb.append("<line x1=\"").append(f1(lx)).append("\" x2=\"").append(f1(lx + 20)).append("\" y1=\"17\" y2=\"17\" stroke=\"")
          .append(s.color()).append("\" stroke-width=\"3\"/>");
      sb.append("<text x=\"").append(f1(lx + 24)).append("\" y=\"21\" font-size=\"12\" fill=\"#333\">").append(esc(s.name()))
          .append("</text>\n");
      lx -= 8;
    }
    sb.append("</svg></div>\n");
  }

  /**
   * Round tick values covering [lo, hi] (about {@code target} of them); {@code integer} keeps the
   * step a whole number (epochs). An empty or one-point range is widened.
   */
  static double[] ticks(double lo, double hi, int target, boolean integer) {
    if (!Double.isFinite(lo) || !Double.isFinite(hi)) {
      lo = 0;
      hi = 1;
    }
    if (hi - lo < 1e-12 * Math.max(1, Math.abs(hi))) {
      double pad = integer ? 1 : Math.abs(lo) > 0 ? Math.abs(lo) * 0.1 : 1;
      lo -= pad;
      hi += pad;
      if (integer && lo < 0 && hi - pad >= 0) lo = Math.max(lo, 0);
    }
    double step = nice((hi - lo) / Math.max(1, target - 1));
    if (integer) step = Math.max(1, Math.round(step));
    double start = Math.floor(lo / step + 1e-9) * step;
    double end = Math.ceil(hi / step - 1e-9) * step;
    int n = (int) Math.round((end - start) / step) + 1;
    double[] t = new double[Math.max(2, n)];
    for (int i = 0; i < t.length; i++) t[i] = start + i * step;
    return t;
  }

  /** 1, 2 or 5 times a power of ten, nearest to {@code x}. */
  private static double nice(double x) {
    double e = Math.pow(10, Math.floor(Math.log10(x)));
    double f = x / e;
    return (f < 1.5 ? 1 : f < 3 ? 2 : f < 7 ? 5 : 10) * e;
  }

  private static int decimals(double[] ticks) {
    double step = ticks.length > 1 ? ticks[1] - ticks[0] : 1;
    return Math.max(0, Math.min(8, (int) -Math.floor(Math.log10(step) + 1e-9)));
  }

  private static String tickLabel(double v, int decimals) {
    if (Math.abs(v) < 1e-12) v = 0;
    double a = Math.abs(v);
    if (a != 0 && (a >= 1e6 || decimals > 5)) return String.format(Locale.ROOT, "%.2g", v);
    return String.format(Locale.ROOT, "%." + decimals + "f", v);
  }

  private static void confusion(StringBuilder sb, RunData.Confusion c) {
    int k = c.labels().size();
    long[][] m = c.matrix();
    long total = 0;
    long correct = 0;
    for (int i = 0; i < k; i++) {
      for (int j = 0; j < k; j++) total += m[i][j];
      correct += m[i][i];
    }
    sb.append("<h2>Confusion matrix</h2>\n<p class=\"small\">Rows: true class, columns: predicted class; shading is the share of the row. ")
        .append(total).append(" samples, accuracy ").append(total == 0 ? "-" : fmt((double) correct / total)).append(".</p>\n");
    if (k > MAX_MATRIX_CLASSES) {
      sb.append("<p class=\"small\">").append(k).append(" classes are too many to draw; per-class recall:</p>\n<table class=\"num\">");
      sb.append("<tr><th>class</th><th>samples</th><th>recall</th></tr>\n");
      for (int i = 0; i < k; i++) {
        long row = 0;
        for (long v : m[i]) row += v;
        sb.append("<tr><td>").append(esc(c.labels().get(i))).append("</td><td>").append(row).append("</td><td>")
            .append(row == 0 ? "-" : fmt((double) m[i][i] / row)).append("</td></tr>\n");
      }
      sb.append("</table>\n");
      return;
    }
    sb.append("<table class=\"cm\">\n<tr><th>true \\ predicted</th>");
    for (String l : c.labels()) sb.append("<th class=\"rot\">").append(esc(l)).append("</th>");
    sb.append("<th>recall</th></tr>\n");
    for (int i = 0; i < k; i++) {
      long row = 0;
      for (long v : m[i]) row += v;
      sb.append("<tr><th>").append(esc(c.labels().get(i))).append("</th>");
      for (int j = 0; j < k; j++) {
        double share = row == 0 ? 0 : (double) m[i][j] / row;
        // white to a deep blue (8,81,156); the diagonal in the same scale, so a good model shows a dark diagonal
        int r = (int) Math.round(255 + (8 - 255) * share);
        int g = (int) Math.round(255 + (81 - 255) * share);
        int b = (int) Math.round(255 + (156 - 255) * share);
        String fg = share > 0.45 ? "#fff" : "#222";
        sb.append("<td style=\"background:").append(String.format(Locale.ROOT, "#%02x%02x%02x", r, g, b)).append(";color:")
            .append(fg).append(i == j ? ";font-weight:600" : "").append("\" title=\"").append(esc(c.labels().get(i)))
            .append(" predicted as ").append(esc(c.labels().get(j))).append(": ").append(m[i][j]).append("\">")
            .append(m[i][j]).append("</td>");
      }
      sb.append("<td>").append(row == 0 ? "-" : fmt((double) m[i][i] / row)).append("</td></tr>\n");
    }
    sb.append("</table>\n");
  }

  private static void profile(StringBuilder sb, RunData.Profile p) {
    sb.append("<h2>Where a training step's time goes</h2>\n<p class=\"small\">");
    if (!"cpu".equals(p.device())) {
      sb.append("On ").append(esc(p.device())).append(" (each phase waits for its kernels, so its time is the device's). ");
    }
    sb.append(p.steps()).append(" steps, ")
        .append(String.format(Locale.ROOT, "%.2f", p.stepSeconds())).append(" s in steps");
    if (p.steps() > 0) sb.append(String.format(Locale.ROOT, ", %.3f ms per step", p.stepSeconds() * 1e3 / p.steps()));
    sb.append(".</p>\n");
    // stacked bar
    int w = 1000;
    int h = 34;
    sb.append("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"").append(w).append("\" height=\"").append(h)
        .append("\" viewBox=\"0 0 ").append(w).append(' ').append(h).append("\" class=\"profilebar\">\n");
    double x = 0;
    double sum = p.phases().stream().mapToDouble(RunData.PhaseRow::percent).sum();
    for (int i = 0; i < p.phases().size(); i++) {
      RunData.PhaseRow r = p.phases().get(i);
      double pw = sum > 0 ? r.percent() / sum * w : 0;
      if (pw <= 0) continue;
      sb.append("<rect x=\"").append(f1(x)).append("\" y=\"2\" width=\"").append(f1(pw)).append("\" height=\"").append(h - 4)
          .append("\" fill=\"").append(PALETTE[i % PALETTE.length]).append("\" data-phase=\"").append(esc(r.phase()))
          .append("\"><title>").append(esc(r.phase())).append(String.format(Locale.ROOT, " %.1f%%", r.percent()))
          .append("</title></rect>");
      if (pw > 70) {
        sb.append("<text x=\"").append(f1(x + pw / 2)).append("\" y=\"").append(h / 2 + 4)
            .append("\" font-size=\"12\" text-anchor=\"middle\" fill=\"#fff\">").append(esc(r.phase()))
            .append(String.format(Locale.ROOT, " %.0f%%", r.percent())).append("</text>");
      }
      sb.append('\n');
      x += pw;
    }
    sb.append("</svg>\n<div class=\"legend small\">");
    for (int i = 0; i < p.phases().size(); i++) {
      sb.append("<span><i class=\"sw\" style=\"background:").append(PALETTE[i % PALETTE.length]).append("\"></i>")
          .append(esc(p.phases().get(i).phase())).append("</span>");
    }
    sb.append("</div>\n<table class=\"num\">\n<tr><th>phase</th><th>total s</th><th>mean ms/step</th><th>% of step</th></tr>\n");
    for (RunData.PhaseRow r : p.phases()) {
      sb.append("<tr><td>").append(esc(r.phase())).append("</td><td>").append(String.format(Locale.ROOT, "%.3f", r.totalSeconds()))
          .append("</td><td>").append(String.format(Locale.ROOT, "%.3f", r.meanMillis())).append("</td><td>")
          .append(String.format(Locale.ROOT, "%.1f", r.percent())).append("</td></tr>\n");
    }
    sb.append("</table>\n");
    if (!p.alloc().isEmpty() || !p.heap().isEmpty()) {
      sb.append("<table class=\"kv\">\n");
      if (!p.alloc().isEmpty()) kv(sb, "new heap allocation per step (training thread; reuse from Ember's buffer pool not counted)", bytesRange(p.alloc()));
      if (!p.heap().isEmpty()) kv(sb, "heap used after a step", bytesRange(p.heap()));
      sb.append("</table>\n");
    }
    if (p.deviceMemory().containsKey("allocated_bytes.all.peak")) {
      sb.append("<table class=\"kv\">\n");
      kv(sb, "device memory allocated to tensors on " + p.device() + " (peak)",
          mib(p.deviceMemory().get("allocated_bytes.all.peak")));
      kv(sb, "device memory reserved by the caching allocator (peak)",
          mib(p.deviceMemory().getOrDefault("reserved_bytes.all.peak", 0.0)));
      sb.append("</table>\n");
    }
  }

  /** Rows of the memory table at most (the biggest activations first when there are more). */
  private static final int MAX_MEMORY_ROWS = 40;

  private static void memory(StringBuilder sb, RunData.Memory m) {
    sb.append("<h2>Where a training step's memory goes</h2>\n<table class=\"kv\">\n");
    String[][] keys = {{"peak_step_bytes", "peak live bytes in one training step (measured)"},
        {"activation_bytes", "activations kept for backward"}, {"param_bytes", "parameters"}, {"grad_bytes", "gradients"},
        {"optimizer_state_bytes", "optimizer state"}, {"buffer_bytes", "buffers"}, {"input_bytes", "input batch"}};
    for (String[] k : keys) {
      Double v = m.totals().get(k[0]);
      if (v != null && v >= 0) kv(sb, k[1], mib(v));
    }
    if (!m.plan().isEmpty()) {
      Map<String, Object> p = m.plan();
      kv(sb, "memory budget", mib(p.get("budget_bytes") instanceof Number n ? n.doubleValue() : null));
      kv(sb, "checkpointed segments", p.get("checkpointed") instanceof List<?> l && !l.isEmpty()
          ? String.join(", ", l.stream().map(String::valueOf).toList()) : "none");
      kv(sb, "predicted peak", mib(p.get("predicted_peak_bytes") instanceof Number n ? n.doubleValue() : null));
      kv(sb, "measured peak", mib(p.get("measured_peak_bytes") instanceof Number n ? n.doubleValue() : null));
    }
    sb.append("</table>\n");
    List<RunData.MemoryRow> rows = m.layers();
    if (rows.size() > MAX_MEMORY_ROWS) {
      rows = rows.stream().sorted(java.util.Comparator.comparingDouble(RunData.MemoryRow::activationBytes).reversed())
          .limit(MAX_MEMORY_ROWS).toList();
      sb.append("<p class=\"small\">The ").append(MAX_MEMORY_ROWS).append(" of ").append(m.layers().size())
          .append(" module calls that keep the most activations; profile.json has them all.</p>\n");
    }
    sb.append("<table class=\"num\">\n<tr><th>layer</th><th>activations MiB</th><th>params MiB</th><th>grads MiB</th>"
        + "<th>optimizer state MiB</th></tr>\n");
    for (RunData.MemoryRow r : rows) {
      sb.append("<tr><td>").append("&nbsp;&nbsp;".repeat(Math.max(0, r.depth())))
          .append(esc(r.name().isEmpty() ? r.type() : r.name() + " (" + r.type() + ")")).append("</td><td>")
          .append(mibNum(r.activationBytes())).append("</td><td>").append(mibNum(r.paramBytes())).append("</td><td>")
          .append(mibNum(r.gradBytes())).append("</td><td>").append(mibNum(r.optimizerStateBytes())).append("</td></tr>\n");
    }
    sb.append("</table>\n");
  }

  private static String mibNum(double b) {
    return Double.isNaN(b) ? "-" : String.format(Locale.ROOT, "%.3f", b / (1024.0 * 1024.0));
  }

  private static String bytesRange(Map<String, Double> m) {
    return "mean " + mib(m.get("mean")) + ", min " + mib(m.get("min")) + ", max " + mib(m.get("max"));
  }

  private static String mib(Double b) {
    return b == null || b.isNaN() ? "-" : String.format(Locale.ROOT, "%.2f MiB", b / (1024.0 * 1024.0));
  }

  private static void histograms(StringBuilder sb, List<RunData.ParamHist> params) {
    sb.append("<h2>Weights and gradients</h2>\n<p class=\"small\">Blue bars: weights at the last snapshot; grey outline:"
        + " the first snapshot; orange: gradients at the last snapshot.</p>\n<div class=\"hists\">\n");
    int shown = 0;
    for (RunData.ParamHist p : params) {
      if (shown++ == MAX_HISTOGRAM_PARAMS) {
        sb.append("</div>\n<p class=\"small\">").append(params.size() - MAX_HISTOGRAM_PARAMS)
            .append(" more parameters are in histograms.jsonl.</p>\n<div>\n");
        break;
      }
      sb.append("<div class=\"hist\"><div class=\"name\">").append(esc(p.name())).append("</div><div class=\"small\">");
      if (p.numel() >= 0) sb.append(p.numel()).append(" values, ");
      sb.append("step ").append(p.firstStep()).append(" \u2192 ").append(p.lastStep()).append(" (").append(p.snapshots())
          .append(p.snapshots() == 1 ? " snapshot" : " snapshots").append("); weights mean ").append(fmt(p.lastWeight().mean()))
          .append(", std ").append(fmt(p.lastWeight().std())).append("</div>\n");
      histogram(sb, p.lastWeight(), p.snapshots() > 1 ? p.firstWeight() : null, TRAIN_COLOR, "weights");
      if (p.lastGrad() != null) histogram(sb, p.lastGrad(), null, VAL_COLOR, "gradients");
      sb.append("</div>\n");
    }
    sb.append("</div>\n");
  }

  /** Bars of {@code h} on an axis spanning both {@code h} and {@code outline}; {@code outline} as a step line. */
  private static void histogram(StringBuilder sb, RunData.Hist h, RunData.Hist outline, String color, String label) {
    int w = 340;
    int ht = 96;
    int top = 6;
    int bottom = 18;
    double lo = h.lo();
    double hi = h.hi();
    if (outline != null && Double.isFinite(outline.lo())) {
      lo = Math.min(lo, outline.lo());
      hi = Math.max(hi, outline.hi());
    }
    sb.append("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"").append(w).append("\" height=\"").append(ht)
        .append("\" viewBox=\"0 0 ").append(w).append(' ').append(ht).append("\" class=\"histogram\" data-kind=\"")
        .append(label).append("\">\n");
    if (!Double.isFinite(lo) || !Double.isFinite(hi) || hi <= lo) {
      sb.append("<text x=\"4\" y=\"40\" font-size=\"12\" fill=\"#555\">").append(label).append(": no finite values</text></svg>\n");
      return;
    }
    long max = 1;
    for (long c : h.counts()) max = Math.max(max, c);
    if (outline != null) for (long c : outline.counts()) max = Math.max(max, c);
    double ph = ht - top - bottom;
    double span = hi - lo;
    int nb = h.counts().length;
    double bw = (h.hi() - h.lo()) / nb;
    for (int i = 0; i < nb; i++) {
      if (h.counts()[i] == 0) continue;
      double x0 = (h.lo() + i * bw - lo) / span * w;
      double x1 = (h.lo() + (i + 1) * bw - lo) / span * w;
      double bh = (double) h.counts()[i] / max * ph;
      sb.append("<rect x=\"").append(f1(x0)).append("\" y=\"").append(f1(top + ph - bh)).append("\" width=\"")
          .append(f1(Math.max(0.5, x1 - x0))).append("\" height=\"").append(f1(bh)).append("\" fill=\"").append(color)
          .append("\" fill-opacity=\"0.75\"/>");
    }
    sb.append('\n');
    if (outline != null) {
      StringBuilder pts = new StringBuilder();
      int ob = outline.counts().length;
      double obw = (outline.hi() - outline.lo()) / ob;
      for (int i = 0; i < ob; i++) {
        double x0 = (outline.lo() + i * obw - lo) / span * w;
        double x1 = (outline.lo() + (i + 1) * obw - lo) / span * w;
        double y = top + ph - (double) outline.counts()[i] / max * ph;
        pts.append(f1(x0)).append(',').append(f1(y)).append(' ').append(f1(x1)).append(',').append(f1(y)).append(' ');
      }
      sb.append("<polyline fill=\"none\" stroke=\"#777\" stroke-width=\"1.2\" points=\"").append(pts.toString().strip())
          .append("\"/>\n");
    }
    sb.append("<line x1=\"0\" x2=\"").append(w).append("\" y1=\"").append(f1(top + ph)).append("\" y2=\"").append(f1(top + ph))
        .append("\" stroke=\"#333\" stroke-width=\"1\"/>\n");
    sb.append("<text x=\"2\" y=\"").append(ht - 4).append("\" font-size=\"11\" fill=\"#444\">").append(fmt(lo)).append("</text>");
    sb.append("<text x=\"").append(w / 2).append("\" y=\"").append(ht - 4).append("\" font-size=\"11\" text-anchor=\"middle\" fill=\"#444\">")
        .append(label).append("</text>");
    sb.append("<text x=\"").append(w - 2).append("\" y=\"").append(ht - 4).append("\" font-size=\"11\" text-anchor=\"end\" fill=\"#444\">")
        .append(fmt(hi)).append("</text>\n</svg>\n");
  }

  private static void metricsTable(StringBuilder sb, RunData.Metrics m) {
    if (m.rows() == 0) return;
    sb.append("<h2>Metrics per epoch</h2>\n");
    int from = Math.max(0, m.rows() - MAX_TABLE_ROWS);
    if (from > 0) sb.append("<p class=\"small\">The last ").append(MAX_TABLE_ROWS).append(" of ").append(m.rows()).append(" rows.</p>\n");
    sb.append("<table class=\"num\">\n<tr>");
    for (String c : m.columns()) sb.append("<th>").append(esc(c)).append("</th>");
    sb.append("</tr>\n");
    for (int r = from; r < m.rows(); r++) {
      sb.append("<tr>");
      for (String c : m.columns()) {
        double v = m.column(c)[r];
        sb.append("<td>").append(Double.isNaN(v) ? "" : fmt(v)).append("</td>");
      }
      sb.append("</tr>\n");
    }
    sb.append("</table>\n");
  }

  private static int lastFinite(double[] v) {
    for (int i = v.length - 1; i >= 0; i--) if (Double.isFinite(v[i])) return i;
    return -1;
  }

  private static double last(double[] v) {
    return v.length == 0 ? Double.NaN : v[v.length - 1];
  }

  private static String duration(double s) {
    if (!Double.isFinite(s)) return "-";
    if (s < 60) return String.format(Locale.ROOT, "%.1f s", s);
    long t = Math.round(s);
    return t >= 3600 ? String.format(Locale.ROOT, "%d:%02d:%02d", t / 3600, t / 60 % 60, t % 60)
        : String.format(Locale.ROOT, "%d:%02d", t / 60, t % 60);
  }

  /** A number for people: integers as such, others with 4 significant digits. */
  static String fmt(double v) {
    if (Double.isNaN(v)) return "NaN";
    if (Double.isInfinite(v)) return v > 0 ? "Infinity" : "-Infinity";
    if (v == Math.rint(v) && Math.abs(v) < 1e12) return Long.toString((long) v);
    double a = Math.abs(v);
    if (a >= 1e-3 && a < 1e6) {
      String s = String.format(Locale.ROOT, "%.4g", v);
      return s.contains("e") ? s : s.replaceAll("(\\.\\d*?)0+$", "$1").replaceAll("\\.$", "");
    }
    return String.format(Locale.ROOT, "%.3e", v);
  }

  private static String f1(double v) {
    return String.format(Locale.ROOT, "%.1f", v);
  }

  /** Text safe in HTML/XML content and attribute values. */
  static String esc(String s) {
    StringBuilder sb = new StringBuilder(s.length());
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      switch (c) {
        case '&' -> sb.append("&amp;");
        case '<' -> sb.append("&lt;");
        case '>' -> sb.append("&gt;");
        case '"' -> sb.append("&quot;");
        case '\'' -> sb.append("&#39;");
        default -> {
          // control characters are not allowed in XML text; show them as a replacement mark
          if (c < 0x20 && c != '\n' && c != '\t') sb.append('\uFFFD');
          else sb.append(c);
        }
      }
    }
    return sb.toString();
  }
}
