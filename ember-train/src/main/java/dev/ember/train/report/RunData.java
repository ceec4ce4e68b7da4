package dev.ember.train.report;

import dev.ember.nn.io.Json;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The files of a run folder, read and checked: {@code metrics.csv} (required),
 * {@code confusion_matrix.json}, {@code profile.json} and {@code histograms.jsonl} (optional). Every
 * file's size is checked before it is read, so a huge or corrupt file is rejected up front.
 */
final class RunData {
  /** Largest metrics.csv, confusion_matrix.json or profile.json read (bytes). */
  static final long MAX_FILE_BYTES = 64L << 20;
  /** Longest line accepted in histograms.jsonl (bytes). */
  static final int MAX_LINE_BYTES = 4 << 20;

  /** metrics.csv: column names in file order and, per column, one value per row (NaN = empty cell). */
  record Metrics(List<String> columns, Map<String, double[]> values, int rows) {
    double[] column(String name) {
      return values.get(name);
    }

    boolean has(String name) {
      return values.containsKey(name);
    }
  }

  record Confusion(List<String> labels, long[][] matrix) {}

  record PhaseRow(String phase, double totalSeconds, double meanMillis, double percent) {}

  /** {@code device} is "cpu" for runs written before devices; {@code deviceMemory} is empty on the CPU. */
  record Profile(long steps, double stepSeconds, List<PhaseRow> phases, Map<String, Double> alloc,
      Map<String, Double> heap, String device, Map<String, Double> deviceMemory, Memory memory) {}

  /**
   * profile.json's {@code memory}: the totals (bytes by key), the per-layer rows and the memory-budget plan's
   * fields (empty without a budget).
   */
  record Memory(Map<String, Double> totals, List<MemoryRow> layers, Map<String, Object> plan) {}

  /** One module call of the memory profile. */
  record MemoryRow(String name, String type, int depth, double activationBytes, double paramBytes, double gradBytes,
      double optimizerStateBytes) {}

  /** One histogram: {@code counts} over [lo, hi]. */
  record Hist(double lo, double hi, long[] counts, double mean, double std, long nonfinite) {}

  /** First and last snapshot of one parameter. */
  record ParamHist(String name, long numel, long firstStep, Hist firstWeight, long lastStep, Hist lastWeight,
      Hist lastGrad, int snapshots) {}

  final Metrics metrics;
  final Confusion confusion;
  final Profile profile;
  final List<ParamHist> histograms;

  private RunData(Metrics metrics, Confusion confusion, Profile profile, List<ParamHist> histograms) {
    this.metrics = metrics;
    this.confusion = confusion;
    this.profile = profile;
    this.histograms = histograms;
  }

  static RunData read(Path runDir) throws IOException {
    Path csv = runDir.resolve("metrics.csv");
    if (!Files.isRegularFile(csv)) {
      throw new NoSuchFileException(csv.toString(), null, "HtmlReport: the run folder has no metrics.csv;"
          + " hint: add a CsvLogger(runDir.resolve(\"metrics.csv\")) to the trainer's callbacks");
    }
    Metrics m = readMetrics(csv);
    Path cm = runDir.resolve("confusion_matrix.json");
    Confusion c = Files.isRegularFile(cm) ? readConfusion(cm) : null;
    Path pj = runDir.resolve("profile.json");
    Profile p = Files.isRegularFile(pj) ? readProfile(pj) : null;
    Path hj = runDir.resolve("histograms.jsonl");
    List<ParamHist> h = Files.isRegularFile(hj) ? readHistograms(hj) : List.of();
    return new RunData(m, c, p, h);
  }

  private static String readSmall(Path file) throws IOException {
    long size = Files.size(file);
    if (size > MAX_FILE_BYTES) {
      throw new RunFileException(file, -1, "file of " + size + " bytes is larger than the " + MAX_FILE_BYTES
          + " bytes a run file may have");
    }
    byte[] b = Files.readAllBytes(file);
    var decoder = StandardCharsets.UTF_8.newDecoder();
    try {
      return decoder.decode(java.nio.ByteBuffer.wrap(b)).toString();
    } catch (java.nio.charset.CharacterCodingException e) {
      throw new RunFileException(file, -1, "not valid UTF-8 text");
    }
  }

  static Metrics readMetrics(Path file) throws IOException {
    List<List<String>> rows = CsvTable.parse(readSmall(file), file);
    if (rows.isEmpty()) throw new RunFileException(file, 0, "empty file; expected a header row (epoch,step,time_s,...)");
    List<String> header = rows.get(0);
    for (int c = 0; c < header.size(); c++) {
      if (header.get(c).isEmpty()) throw new RunFileException(file, -1, "line 1: column " + (c + 1) + " has an empty name");
      if (header.indexOf(header.get(c)) != c) {
        throw new RunFileException(file, -1, "line 1: column '" + header.get(c) + "' appears twice");
      }
    }
    int n = rows.size() - 1;
    LinkedHashMap<String, double[]> values = new LinkedHashMap<>();
    for (String h : header) values.put(h, new double[n]);
    for (int r = 0; r < n; r++) {
      List<String> row = rows.get(r + 1);
      if (row.size() > header.size()) {
        throw new RunFileException(file, -1, "line " + (r + 2) + ": " + row.size() + " cells but the header has "
            + header.size() + " columns");
      }
      for (int c = 0; c < header.size(); c++) {
        String cell = c < row.size() ? row.get(c).strip() : "";
        double v;
        if (cell.isEmpty()) {
          v = Double.NaN;
        } else {
          try {
            v = Double.parseDouble(cell);
          } catch (NumberFormatException e) {
            throw new RunFileException(file, -1, "line " + (r + 2) + ", column '" + header.get(c) + "': '" + cell
                + "' is not a number");
          }
        }
        values.get(header.get(c))[r] = v;
      }
    }
    return new Metrics(List.copyOf(header), values, n);
  }

  static Confusion readConfusion(Path file) throws IOException {
    Object root = parseJson(readSmall(file), file, 0);
    if (!(root instanceof Map<?, ?> obj) || !(obj.get("matrix") instanceof List<?> rows)) {
      throw new RunFileException(file, -1, "expected an object with \"matrix\" (a list of rows) and optional \"labels\"");
    }
    int k = rows.size();
    long[][] m = new long[k][];
    for (int i = 0; i < k; i++) {
      if (!(rows.get(i) instanceof List<?> row) || row.size() != k) {
        throw new RunFileException(file, -1, "matrix row " + i + " must be a list of " + k + " counts (the matrix is square)");
      }
      m[i] = new long[k];
      for (int j = 0; j < k; j++) {
        if (!(row.get(j) instanceof Number num) || num.doubleValue() < 0 || num.doubleValue() != Math.rint(num.doubleValue())) {
          throw new RunFileException(file, -1, "matrix[" + i + "][" + j + "] must be a non-negative whole number, got " + row.get(j));
        }
        m[i][j] = num.longValue();
      }
    }
    List<String> labels = new ArrayList<>();
    if (obj.get("labels") instanceof List<?> l) {
      if (l.size() != k) throw new RunFileException(file, -1, l.size() + " labels for a " + k + "x" + k + " matrix");
      for (Object o : l) labels.add(String.valueOf(o));
    } else if (obj.containsKey("labels")) {
      throw new RunFileException(file, -1, "\"labels\" must be a list of names");
    } else {
      for (int i = 0; i < k; i++) labels.add(Integer.toString(i));
    }
    return new Confusion(List.copyOf(labels), m);
  }

  static Profile readProfile(Path file) throws IOException {
    Object root = parseJson(readSmall(file), file, 0);
    if (!(root instanceof Map<?, ?> obj) || !(obj.get("phases") instanceof List<?> phases)
        || !(obj.get("steps") instanceof Number steps)) {
      throw new RunFileException(file, -1, "expected an object with \"steps\" and \"phases\" (as Profiling writes)");
    }
    List<PhaseRow> rows = new ArrayList<>();
    for (Object o : phases) {
      if (!(o instanceof Map<?, ?> p) || !(p.get("phase") instanceof String name) || !(p.get("total_s") instanceof Number t)
          || !(p.get("mean_ms") instanceof Number ms) || !(p.get("percent") instanceof Number pct)) {
        throw new RunFileException(file, -1, "each phase must have phase, total_s, mean_ms and percent, got " + o);
      }
      rows.add(new PhaseRow(name, t.doubleValue(), ms.doubleValue(), pct.doubleValue()));
    }
    double stepSeconds = obj.get("step_total_s") instanceof Number s ? s.doubleValue()
        : rows.stream().mapToDouble(PhaseRow::totalSeconds).sum();
    return new Profile(steps.longValue(), stepSeconds, List.copyOf(rows), numbers(obj.get("alloc_bytes_per_step")),
        numbers(obj.get("heap_used_bytes")), obj.get("device") instanceof String d ? d : "cpu",
        numbers(obj.get("device_memory")), memory(obj.get("memory"), file));
  }

  private static Memory memory(Object o, Path file) throws RunFileException {
    if (o == null) return null;
    if (!(o instanceof Map<?, ?> m)) throw new RunFileException(file, -1, "\"memory\" must be an object");
    List<MemoryRow> rows = new ArrayList<>();
    if (m.get("layers") instanceof List<?> layers) {
      for (Object l : layers) {
        if (!(l instanceof Map<?, ?> r) || !(r.get("name") instanceof String name) || !(r.get("type") instanceof String type)) {
          throw new RunFileException(file, -1, "each memory layer needs a name and a type, got " + l);
        }
        rows.add(new MemoryRow(name, type, r.get("depth") instanceof Number d ? d.intValue() : 0, num(r.get("activation_bytes")),
            num(r.get("param_bytes")), num(r.get("grad_bytes")), num(r.get("optimizer_state_bytes"))));
      }
    }
    LinkedHashMap<String, Object> plan = new LinkedHashMap<>();
    if (m.get("plan") instanceof Map<?, ?> p) for (var e : p.entrySet()) plan.put(String.valueOf(e.getKey()), e.getValue());
    return new Memory(numbers(m), List.copyOf(rows), plan);
  }

  private static Map<String, Double> numbers(Object o) {
    LinkedHashMap<String, Double> m = new LinkedHashMap<>();
    if (o instanceof Map<?, ?> map) {
      for (var e : map.entrySet()) if (e.getValue() instanceof Number n) m.put(String.valueOf(e.getKey()), n.doubleValue());
    }
    return m;
  }

  static List<ParamHist> readHistograms(Path file) throws IOException {
    LinkedHashMap<String, ParamHist> byName = new LinkedHashMap<>();
    try (InputStream in = Files.newInputStream(file)) {
      LineReader lines = new LineReader(in, file);
      String line;
      while ((line = lines.next()) != null) {
        if (line.isBlank()) continue;
        Object root = parseJson(line, file, lines.lineStart());
        if (!(root instanceof Map<?, ?> obj) || !(obj.get("name") instanceof String name)
            || !(obj.get("step") instanceof Number step) || !(obj.get("weight") instanceof Map<?, ?> w)) {
          throw new RunFileException(file, lines.lineStart(), "expected an object with name, step and weight (as HistogramLogger writes)");
        }
        Hist weight = hist(w, file, lines.lineStart());
        Hist grad = obj.get("grad") instanceof Map<?, ?> g ? hist(g, file, lines.lineStart()) : null;
        long numel = obj.get("numel") instanceof Number n ? n.longValue() : -1;
        ParamHist old = byName.get(name);
        if (old == null) {
          byName.put(name, new ParamHist(name, numel, step.longValue(), weight, step.longValue(), weight, grad, 1));
        } else {
          byName.put(name, new ParamHist(name, numel, old.firstStep(), old.firstWeight(), step.longValue(), weight, grad,
              old.snapshots() + 1));
        }
      }
    }
    return List.copyOf(byName.values());
  }

  private static Hist hist(Map<?, ?> h, Path file, long at) throws RunFileException {
    if (!(h.get("counts") instanceof List<?> counts) || counts.isEmpty()) {
      throw new RunFileException(file, at, "a histogram needs a non-empty counts list");
    }
    long[] c = new long[counts.size()];
    for (int i = 0; i < c.length; i++) {
      if (!(counts.get(i) instanceof Number n) || n.longValue() < 0) {
        throw new RunFileException(file, at, "histogram count " + i + " must be a non-negative number, got " + counts.get(i));
      }
      c[i] = n.longValue();
    }
    return new Hist(num(h.get("lo")), num(h.get("hi")), c, num(h.get("mean")), num(h.get("std")),
        h.get("nonfinite") instanceof Number n ? n.longValue() : 0);
  }

  private static double num(Object o) {
    return o instanceof Number n ? n.doubleValue() : Double.NaN;
  }

  /** UTF-8 lines with their byte offsets, each at most {@link #MAX_LINE_BYTES} long. */
  private static final class LineReader {
    private final InputStream in;
    private final Path file;
    private final byte[] buf = new byte[1 << 16];
    private int pos;
    private int len;
    private long offset;
    private long lineStart;
    private final java.io.ByteArrayOutputStream line = new java.io.ByteArrayOutputStream();

    LineReader(InputStream in, Path file) {
      this.in = in;
      this.file = file;
    }

    long lineStart() {
      return lineStart;
    }

    String next() throws IOException {
      line.reset();
      lineStart = offset;
      boolean any = false;
      while (true) {
        if (pos == len) {
          len = in.read(buf);
          pos = 0;
          if (len <= 0) {
            len = 0;
            return any ? decode() : null;
          }
        }
        any = true;
        int start = pos;
        while (pos < len && buf[pos] != '\n') pos++;
        line.write(buf, start, pos - start);
        offset += pos - start;
        if (line.size() > MAX_LINE_BYTES) {
          throw new RunFileException(file, lineStart, "line longer than " + MAX_LINE_BYTES + " bytes");
        }
        if (pos < len) {
          pos++;
          offset++;
          return decode();
        }
      }
    }

    private String decode() throws RunFileException {
      try {
        return StandardCharsets.UTF_8.newDecoder().decode(java.nio.ByteBuffer.wrap(line.toByteArray())).toString();
      } catch (java.nio.charset.CharacterCodingException e) {
        throw new RunFileException(file, lineStart, "line is not valid UTF-8");
      }
    }
  }

  /** One JSON value of a run file; {@code base} is the byte offset of {@code text} in {@code file}. */
  private static Object parseJson(String text, Path file, long base) throws RunFileException {
    try {
      return Json.parsePlain(text.getBytes(StandardCharsets.UTF_8), base, Json.MAX_DEPTH, Json.NonFinite.REJECT);
    } catch (Json.SyntaxError e) {
      throw new RunFileException(file, e.pos, e.getMessage());
    }
  }
}
