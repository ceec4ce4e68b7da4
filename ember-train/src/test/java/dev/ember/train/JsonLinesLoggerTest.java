package dev.ember.train;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.nn.io.Json;
import dev.ember.train.callbacks.JsonLinesLogger;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class JsonLinesLoggerTest {
  @TempDir Path dir;

  @SuppressWarnings("unchecked")
  private static List<Map<String, Object>> read(Path f) throws IOException {
    List<Map<String, Object>> out = new ArrayList<>();
    for (String line : Files.readAllLines(f)) {
      try {
        out.add((Map<String, Object>) Json.parsePlain(line, Json.NonFinite.REJECT));
      } catch (Json.SyntaxError e) {
        throw new AssertionError(f + ": " + e.getMessage() + " at byte " + e.pos + " of line " + (out.size() + 1), e);
      }
    }
    return out;
  }

  private static List<String> events(List<Map<String, Object>> lines) {
    return lines.stream().map(m -> m.get("event") + "@" + m.get("epoch") + "/" + m.get("step")).toList();
  }

  @Test
  void epochLinesAndBatchLinesEveryN() throws IOException {
    Path f = dir.resolve("log.jsonl");
    CallbackDriver d = new CallbackDriver(2, 4, new JsonLinesLogger(f, 2));
    d.trainBegin();
    d.epoch(1, 4, Map.of("accuracy", 0.5), Map.of("val_loss", 0.9));
    // lines are on disk as soon as they are complete, before train end
    assertEquals(3, Files.readAllLines(f).size());
    d.epoch(2, 4, Map.of("accuracy", 0.75), Map.of("val_loss", Double.NaN));
    d.trainEnd();
    List<Map<String, Object>> l = read(f);
    assertEquals(List.of("batch@1/2", "batch@1/4", "epoch@1/4", "batch@2/6", "batch@2/8", "epoch@2/8"), events(l));
    Map<String, Object> b = l.get(0);
    assertEquals(1L, b.get("batch"));
    assertEquals(0.5, b.get("batch_loss"));
    assertEquals(0.5, b.get("loss"));
    Map<String, Object> e1 = l.get(2);
    assertEquals(0.5, e1.get("accuracy"));
    assertEquals(0.9, e1.get("val_loss"));
    assertTrue(e1.get("time_s") instanceof Number);
    assertTrue(!l.get(3).containsKey("val_loss"), "validation values of an earlier epoch stay out of batch lines");
    assertTrue(l.get(5).containsKey("val_loss"));
    assertNull(l.get(5).get("val_loss"), "NaN is written as null");
  }

  @Test
  void resumingFromAMidEpochCheckpointContinuesTheFileExactly() throws IOException {
    Path f = dir.resolve("log.jsonl");
    JsonLinesLogger first = new JsonLinesLogger(f, 1);
    CallbackDriver a = new CallbackDriver(3, 3, first);
    a.trainBegin();
    a.epoch(1, 3, Map.of(), Map.of());
    a.epochBegin(2);
    a.batch(0, 0.5, null);
    Map<String, Object> state = first.stateDict();
    long step = a.ctx.globalStep;
    a.batch(1, 0.5, null);
    a.batch(2, 0.5, null);
    a.epochEnd(Map.of(), Map.of());
    assertEquals(8, Files.readAllLines(f).size());

    JsonLinesLogger second = new JsonLinesLogger(f, 1);
    second.loadStateDict(state);
    CallbackDriver b = new CallbackDriver(3, 3, second);
    b.ctx.globalStep = step;
    b.ctx.epoch = 2;
    b.trainBegin();
    assertEquals(5, Files.readAllLines(f).size(), "lines after the checkpoint are cut off");
    b.batch(1, 0.5, null);
    b.batch(2, 0.5, null);
    b.epochEnd(Map.of(), Map.of());
    b.epoch(3, 3, Map.of(), Map.of());
    b.trainEnd();
    assertEquals(List.of("batch@1/1", "batch@1/2", "batch@1/3", "epoch@1/3", "batch@2/4", "batch@2/5", "batch@2/6",
        "epoch@2/6", "batch@3/7", "batch@3/8", "batch@3/9", "epoch@3/9"), events(read(f)));
  }

  @Test
  void aFileChangedSinceTheCheckpointIsRefused() throws IOException {
    Path f = dir.resolve("log.jsonl");
    JsonLinesLogger first = new JsonLinesLogger(f);
    CallbackDriver a = new CallbackDriver(3, 1, first);
    a.trainBegin();
    a.epoch(1, 1, Map.of(), Map.of());
    a.epoch(2, 1, Map.of(), Map.of());
    Map<String, Object> state = first.stateDict();
    a.trainEnd();
    String text = Files.readString(f);
    Files.writeString(f, text.replace("\"epoch\":1", "\"epoch\":7"));
    JsonLinesLogger second = new JsonLinesLogger(f);
    second.loadStateDict(state);
    IllegalStateException e = assertThrows(IllegalStateException.class, () -> new CallbackDriver(3, 1, second).trainBegin());
    assertTrue(e.getMessage().startsWith("JsonLinesLogger: cannot continue " + f), e.getMessage());
    assertTrue(e.getMessage().contains("changed since the checkpoint"), e.getMessage());

    Files.writeString(f, text.substring(0, 10));
    JsonLinesLogger third = new JsonLinesLogger(f);
    third.loadStateDict(state);
    e = assertThrows(IllegalStateException.class, () -> new CallbackDriver(3, 1, third).trainBegin());
    assertTrue(e.getMessage().contains("holds only 10 bytes"), e.getMessage());
  }

  @Test
  void badArgumentsAreRejected() {
    assertThrows(IllegalArgumentException.class, () -> new JsonLinesLogger(dir.resolve("x"), -1));
    assertThrows(IllegalArgumentException.class, () -> new JsonLinesLogger(dir.resolve("x")).loadStateDict(Map.of("lines", 1L)));
  }
}
