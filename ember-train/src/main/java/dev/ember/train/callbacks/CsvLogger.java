package dev.ember.train.callbacks;

import dev.ember.train.Callback;
import dev.ember.train.TrainContext;
import dev.ember.nn.io.AtomicFiles;
import dev.ember.train.report.CsvTable;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;

/**
 * Writes one CSV row per finished epoch: {@code epoch, step, time_s} (optimizer steps done, seconds
 * of training since the run began) and then every value in {@link TrainContext#logs()}, in the
 * order the keys first appeared. A value missing in a row is an empty cell. A row is appended; when
 * a key appears that earlier rows lack, the file is rewritten (atomically, via a temporary file)
 * with the widened header and every row kept. If training stops in the middle of an epoch, the
 * values logged during that partial epoch (the running loss, lr, anything that changed) are written
 * as a last row at train end; values still left from the previous epoch are left empty there.
 *
 * <p>Resuming: {@link #stateDict()} holds the header and every row written so far (one row per
 * epoch, so this stays small) and the training time; a resumed run rewrites the file from them,
 * so rows written after the checkpoint by the interrupted run are dropped and written again, not
 * duplicated, and a lost or damaged file is restored.
 */
public final class CsvLogger implements Callback {
  private static final List<String> FIXED = List.of("epoch", "step", "time_s");

  private final Path file;
  private final List<String> columns = new ArrayList<>(FIXED);
  /** Rows as written, aligned with {@link #columns}; a row shorter than the header ends in empty cells. */
  private final List<String[]> rows = new ArrayList<>();
  private long lastStep = -1;
  private double timeOffsetSeconds;
  private long startNanos;
  private boolean restored;
  private boolean started;
  private final Map<String, Double> epochStartLogs = new HashMap<>();

  /** Logs to {@code file} (its folder is created if needed; an existing file is replaced when training begins). */
  public CsvLogger(Path file) {
    if (file == null) throw new IllegalArgumentException("CsvLogger: file must not be null");
    this.file = file;
  }

  /** The file written. */
  public Path file() {
    return file;
  }

  @Override
  public void onTrainBegin(TrainContext ctx) {
    startNanos = System.nanoTime();
    started = true;
    // a run resumed inside an epoch gets no onEpochBegin: what the logs hold now is not this epoch's
    epochStartLogs.clear();
    epochStartLogs.putAll(ctx.logs());
    if (!restored) {
      columns.clear();
      columns.addAll(FIXED);
      rows.clear();
      lastStep = -1;
      timeOffsetSeconds = 0;
    }
    restored = false;
    rewrite();
  }

  @Override
  public void onEpochBegin(TrainContext ctx) {
    epochStartLogs.clear();
    epochStartLogs.putAll(ctx.logs());
  }

  @Override
  public void onEpochEnd(TrainContext ctx) {
    addRow(ctx, ctx.logs());
  }

  @Override
  public void onTrainEnd(TrainContext ctx) {
    // A run stopped inside an epoch (step limit, a stop request) would otherwise lose the values of that
    // epoch. Only what was logged during it goes in: the running loss and lr, and values that changed; the
    // metrics and validation values in the logs are still the previous epoch's and would be misread as this one's.
    boolean progressed = rows.isEmpty() ? ctx.globalStep() > 0 : ctx.globalStep() > lastStep;
    if (!progressed || ctx.logs().isEmpty()) return;
    LinkedHashMap<String, Double> fresh = new LinkedHashMap<>();
    for (var e : ctx.logs().entrySet()) {
      String k = e.getKey();
      if (k.equals("loss") || k.equals("lr") || !Objects.equals(e.getValue(), epochStartLogs.get(k))) fresh.put(k, e.getValue());
    }
    addRow(ctx, fresh);
  }

  private void addRow(TrainContext ctx, Map<String, Double> logs) {
    if (!started) {
      throw new IllegalStateException("CsvLogger: a row was requested before onTrainBegin; file=" + file);
    }
    boolean widened = false;
    for (String key : logs.keySet()) {
      if (!columns.contains(key)) {
        columns.add(key);
        widened = true;
      }
    }
    String[] row = new String[columns.size()];
    Arrays.fill(row, "");
    row[0] = Integer.toString(ctx.epoch());
    row[1] = Long.toString(ctx.globalStep());
    row[2] = String.format(Locale.ROOT, "%.3f", elapsedSeconds());
    for (var e : logs.entrySet()) {
      Double v = e.getValue();
      if (v != null) row[columns.indexOf(e.getKey())] = format(v);
    }
    rows.add(row);
    lastStep = ctx.globalStep();
    if (widened || !Files.exists(file)) {
      rewrite();
    } else {
      StringBuilder sb = new StringBuilder();
      appendRow(sb, row);
      try {
        Files.writeString(file, sb, StandardCharsets.UTF_8, StandardOpenOption.WRITE, StandardOpenOption.APPEND);
      } catch (IOException e) {
        throw new UncheckedIOException("CsvLogger: appending epoch " + ctx.epoch() + " to " + file + " failed", e);
      }
    }
  }

  private double elapsedSeconds() {
    return timeOffsetSeconds + (System.nanoTime() - startNanos) / 1e9;
  }

  /** The header and every row, written atomically. */
  private void rewrite() {
    StringBuilder sb = new StringBuilder();
    CsvTable.row(sb, columns);
    for (String[] row : rows) appendRow(sb, row);
    try {
      AtomicFiles.write(file, sb.toString());
    } catch (IOException e) {
      throw new UncheckedIOException("CsvLogger: writing " + file + " failed", e);
    }
  }

  /** A row padded with empty cells to the current header. */
  private void appendRow(StringBuilder sb, String[] row) {
    for (int c = 0; c < columns.size(); c++) {
      if (c > 0) sb.append(',');
      if (c < row.length) CsvTable.cell(sb, row[c]);
    }
    sb.append('\n');
  }

  /** Shortest text that reads back to the same double; integers without a fraction; NaN and infinities spelled out. */
  static String format(double v) {
    if (Double.isNaN(v)) return "NaN";
    if (Double.isInfinite(v)) return v > 0 ? "Infinity" : "-Infinity";
    if (v == Math.rint(v) && Math.abs(v) < 1e15 && !(v == 0 && 1 / v < 0)) return Long.toString((long) v);
    return Double.toString(v);
  }

  @Override
  public Map<String, Object> stateDict() {
    List<String> cells = new ArrayList<>(rows.size() * columns.size());
    for (String[] row : rows) {
      for (int c = 0; c < columns.size(); c++) cells.add(c < row.length ? row[c] : "");
    }
    return Map.of("columns", List.copyOf(columns), "cells", cells, "last_step", lastStep,
        "time_s", started ? elapsedSeconds() : timeOffsetSeconds);
  }

  @Override
  public void loadStateDict(Map<String, Object> state) {
    if (!(state.get("columns") instanceof List<?> cols) || !(state.get("cells") instanceof List<?> cells)
        || !(state.get("last_step") instanceof Number last) || !(state.get("time_s") instanceof Number t)) {
      throw new IllegalArgumentException("CsvLogger.loadStateDict: expected columns (list), cells (list), last_step (number)"
          + " and time_s (number), got keys " + state.keySet() + "; file=" + file);
    }
    if (cols.size() < FIXED.size() || !cols.subList(0, FIXED.size()).equals(FIXED) || cells.size() % cols.size() != 0) {
      throw new IllegalArgumentException("CsvLogger.loadStateDict: " + cells.size() + " cells do not fill rows of the "
          + cols.size() + " columns " + cols + " (which must start with " + FIXED + "); file=" + file);
    }
    columns.clear();
    for (Object c : cols) columns.add(String.valueOf(c));
    rows.clear();
    int width = columns.size();
    for (int r = 0; r < cells.size() / width; r++) {
      String[] row = new String[width];
      for (int c = 0; c < width; c++) row[c] = String.valueOf(cells.get(r * width + c));
      rows.add(row);
    }
    lastStep = last.longValue();
    timeOffsetSeconds = t.doubleValue();
    restored = true;
  }
}
