package dev.ember.train;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.train.callbacks.CsvLogger;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class CsvLoggerTest {
  @TempDir Path dir;

  private static List<String> lines(Path f) throws IOException {
    return Files.readAllLines(f);
  }

  /** Cell {@code col} of every data row. */
  private static List<String> column(Path f, String col) throws IOException {
    List<String> l = lines(f);
    int c = List.of(l.get(0).split(",", -1)).indexOf(col);
    List<String> out = new ArrayList<>();
    for (String row : l.subList(1, l.size())) out.add(row.split(",", -1)[c]);
    return out;
  }

  @Test
  void oneRowPerEpochAndTheHeaderWidensKeepingEveryRow() throws IOException {
    Path f = dir.resolve("run/metrics.csv");
    CsvLogger csv = new CsvLogger(f);
    CallbackDriver d = new CallbackDriver(3, 4, csv);
    d.trainBegin();
    assertEquals(List.of("epoch,step,time_s"), lines(f));
    d.epoch(1, 4, Map.of("accuracy", 0.5), Map.of());
    assertEquals("epoch,step,time_s,loss,lr,accuracy", lines(f).get(0));
    d.epoch(2, 4, Map.of("accuracy", 0.75), Map.of("val_loss", 0.4, "val_accuracy", 0.7));
    d.epoch(3, 4, Map.of("accuracy", 0.875), Map.of("val_loss", 0.3, "val_accuracy", 0.8));
    d.trainEnd();

    List<String> l = lines(f);
    assertEquals(4, l.size(), String.join("\n", l));
    List<String> header = List.of(l.get(0).split(","));
    assertEquals("epoch", header.get(0));
    assertEquals("step", header.get(1));
    assertEquals("time_s", header.get(2));
    assertEquals(List.of("loss", "lr", "accuracy"), header.subList(3, 6));
    assertTrue(header.containsAll(List.of("val_loss", "val_accuracy")), header.toString());
    assertEquals(List.of("1", "2", "3"), column(f, "epoch"));
    assertEquals(List.of("4", "8", "12"), column(f, "step"));
    assertEquals(List.of("0.5", "0.75", "0.875"), column(f, "accuracy"));
    assertEquals(List.of("", "0.4", "0.3"), column(f, "val_loss"), "epoch 1 had no validation: empty cell");
    for (String row : l) assertEquals(header.size(), row.split(",", -1).length, row);
    // running loss of the last batch of each epoch: 1/(e+3)
    assertEquals(List.of(Double.toString(1.0 / 4), Double.toString(1.0 / 5), Double.toString(1.0 / 6)), column(f, "loss"));
    try (Stream<Path> s = Files.list(f.getParent())) {
      assertEquals(List.of(f), s.toList(), "no temporary file is left beside the CSV");
    }
  }

  @Test
  void aDivergedValueStaysVisibleAsNaN() throws IOException {
    Path f = dir.resolve("metrics.csv");
    CallbackDriver d = new CallbackDriver(1, 1, new CsvLogger(f));
    d.trainBegin();
    d.epochBegin(1);
    d.batch(0, Double.NaN, null);
    d.epochEnd(Map.of(), Map.of());
    assertEquals(List.of("NaN"), column(f, "loss"));
  }

  @Test
  void aRunStoppedInsideAnEpochWritesItsValuesAtTrainEnd() throws IOException {
    Path f = dir.resolve("metrics.csv");
    CallbackDriver d = new CallbackDriver(3, 4, new CsvLogger(f));
    d.trainBegin();
    d.epoch(1, 4, Map.of("accuracy", 0.5), Map.of("val_loss", 0.75));
    d.epochBegin(2);
    d.batch(0, 0.25, null);
    d.trainEnd();
    assertEquals(List.of("1", "2"), column(f, "epoch"));
    assertEquals(List.of("0.5", ""), column(f, "accuracy"), "epoch 1's accuracy is not repeated as epoch 2's");
    assertEquals(List.of("0.75", ""), column(f, "val_loss"));
    assertEquals(List.of("4", "5"), column(f, "step"));
    // epoch 1 ends on batch 3 (running loss 1/4); the partial epoch 2 has its one batch's 0.25
    assertEquals(List.of("0.25", "0.25"), column(f, "loss"));
  }

  @Test
  void resumingFromAMidEpochCheckpointNeitherDuplicatesNorLosesRows() throws IOException {
    Path f = dir.resolve("metrics.csv");
    CsvLogger first = new CsvLogger(f);
    CallbackDriver a = new CallbackDriver(4, 4, first);
    a.trainBegin();
    a.epoch(1, 4, Map.of("accuracy", 0.5), Map.of());
    a.epoch(2, 4, Map.of("accuracy", 0.6), Map.of("val_loss", 0.5));
    a.epochBegin(3);
    a.batch(0, 0.3, null);
    a.batch(1, 0.3, null);
    // checkpoint in the middle of epoch 3 (the Trainer takes it after onBatchEnd)
    Map<String, Object> state = new LinkedHashMap<>(first.stateDict());
    long stepAtCheckpoint = a.ctx.globalStep;
    a.batch(2, 0.3, null);
    a.batch(3, 0.3, null);
    a.epochEnd(Map.of("accuracy", 0.7), Map.of("val_loss", 0.4));
    a.epochBegin(4);
    a.batch(0, 0.2, null);
    // the process dies here: rows 1..3 are on disk, the checkpoint knows rows 1..2
    assertEquals(List.of("1", "2", "3"), column(f, "epoch"));

    CsvLogger second = new CsvLogger(f);
    second.loadStateDict(state);
    CallbackDriver b = new CallbackDriver(4, 4, second);
    b.ctx.globalStep = stepAtCheckpoint;
    b.ctx.epoch = 3;
    b.trainBegin();
    assertEquals(List.of("1", "2"), column(f, "epoch"), "rows written after the checkpoint are dropped");
    b.batch(2, 0.3, null);
    b.batch(3, 0.3, null);
    b.epochEnd(Map.of("accuracy", 0.7), Map.of("val_loss", 0.4, "val_accuracy", 0.65));
    b.epoch(4, 4, Map.of("accuracy", 0.8), Map.of("val_loss", 0.3, "val_accuracy", 0.7));
    b.trainEnd();
    assertEquals(List.of("1", "2", "3", "4"), column(f, "epoch"));
    assertEquals(List.of("4", "8", "12", "16"), column(f, "step"));
    assertEquals(List.of("0.5", "0.6", "0.7", "0.8"), column(f, "accuracy"));
    assertEquals(List.of("", "0.5", "0.4", "0.3"), column(f, "val_loss"));
    assertEquals(List.of("", "", "0.65", "0.7"), column(f, "val_accuracy"));
    List<Double> times = column(f, "time_s").stream().map(Double::parseDouble).toList();
    for (int i = 1; i < times.size(); i++) assertTrue(times.get(i) >= times.get(i - 1), "time_s continues: " + times);
  }

  @Test
  void aLostFileIsRestoredFromTheCheckpointState() throws IOException {
    Path f = dir.resolve("metrics.csv");
    CsvLogger first = new CsvLogger(f);
    CallbackDriver a = new CallbackDriver(3, 2, first);
    a.trainBegin();
    a.epoch(1, 2, Map.of(), Map.of());
    Map<String, Object> state = first.stateDict();
    Files.delete(f);
    CsvLogger second = new CsvLogger(f);
    second.loadStateDict(state);
    CallbackDriver b = new CallbackDriver(3, 2, second);
    b.ctx.globalStep = 2;
    b.trainBegin();
    b.epoch(2, 2, Map.of(), Map.of());
    assertEquals(List.of("1", "2"), column(f, "epoch"));
  }

  @Test
  void aFreshRunReplacesAnOldFileAndBadStateIsRejected() throws IOException {
    Path f = dir.resolve("metrics.csv");
    Files.writeString(f, "old,stuff\n1,2\n");
    CsvLogger csv = new CsvLogger(f);
    new CallbackDriver(1, 1, csv).trainBegin();
    assertEquals(List.of("epoch,step,time_s"), lines(f));
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> csv.loadStateDict(Map.of("columns", List.of("epoch", "step", "time_s"), "cells", List.of("1", "2"),
            "last_step", 2L, "time_s", 1.0)));
    assertTrue(e.getMessage().startsWith("CsvLogger.loadStateDict: 2 cells do not fill rows"), e.getMessage());
  }

  @Test
  void keysWithCommasAndQuotesAreQuoted() throws IOException {
    Path f = dir.resolve("metrics.csv");
    CallbackDriver d = new CallbackDriver(1, 1, new CsvLogger(f));
    d.trainBegin();
    d.epoch(1, 1, Map.of("f1,\"macro\"", 0.5), Map.of());
    assertTrue(lines(f).get(0).endsWith(",\"f1,\"\"macro\"\"\""), lines(f).get(0));
    var parsed = dev.ember.train.report.CsvTable.parse(Files.readString(f), f);
    assertEquals("f1,\"macro\"", parsed.get(0).getLast());
    assertEquals("0.5", parsed.get(1).getLast());
  }
}
