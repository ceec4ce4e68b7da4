package dev.ember.train;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.train.callbacks.ProgressBar;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class ProgressBarTest {
  /** A clock the test moves by hand. */
  static final class FakeClock {
    long nanos = 1_000_000_000L;

    long now() {
      return nanos;
    }
  }

  private final ByteArrayOutputStream bytes = new ByteArrayOutputStream();
  private final PrintStream out = new PrintStream(bytes, true, StandardCharsets.UTF_8);
  private final FakeClock clock = new FakeClock();

  private String text() {
    return bytes.toString(StandardCharsets.UTF_8);
  }

  @Test
  void onATerminalOneLineIsRedrawnInPlaceAndThrottled() {
    ProgressBar bar = new ProgressBar(out, true, 30, 10, clock::now);
    CallbackDriver d = new CallbackDriver(10, 20, bar);
    d.trainBegin();
    d.epochBegin(1);
    d.ctx.epoch = 1;
    // 20 batches of 4 samples, 50 ms each: a redraw at most every 100 ms
    for (int i = 0; i < 20; i++) {
      clock.nanos += 50_000_000L;
      d.batch(i, 0.5 - i * 0.01, null);
    }
    String during = text();
    assertFalse(during.contains("\n"), "no line break before the epoch ends");
    String[] frames = during.split("\r", -1);
    assertEquals("", frames[0]);
    // batches 1, 3, 5, ..., 19 (100 ms apart) and the last one: 11 draws
    assertEquals(11, frames.length - 1, Arrays.toString(frames));
    String first = frames[1].strip();
    assertTrue(first.startsWith("epoch 1/10 [=>" + " ".repeat(28) + "] 1/20  80 samples/s  ETA 0:01  loss 0.5000"), first);
    String mid = frames[5].strip();
    assertTrue(mid.startsWith("epoch 1/10 [=============>" + " ".repeat(16) + "] 9/20  80 samples/s  ETA 0:01  loss 0.4200"), mid);
    assertTrue(frames[11].strip().startsWith("epoch 1/10 [" + "=".repeat(30) + "] 20/20"), frames[11]);

    clock.nanos += 1_000_000_000L;
    d.epochEnd(Map.of("accuracy", 0.8512, "epoch_time_s", 2.0), CallbackDriver.ordered("val_loss", 0.45, "val_accuracy", 0.84));
    String all = text();
    assertTrue(all.endsWith("\n"), "the epoch's line is closed");
    String last = all.substring(all.lastIndexOf('\r') + 1).strip();
    assertEquals("epoch 1/10 20/20  2.0s  40 samples/s  loss 0.3100  lr 0.0100  acc 0.8512  val_loss 0.4500  val_acc 0.8400", last);
    d.trainEnd();
  }

  @Test
  void aShorterRedrawCoversTheRestOfTheLongerLineWithSpaces() {
    ProgressBar bar = new ProgressBar(out, true, 30, 10, clock::now);
    CallbackDriver d = new CallbackDriver(10, 2, bar);
    d.trainBegin();
    d.epochBegin(1);
    clock.nanos += 10_000_000L;
    d.batch(0, 123456.0, null);
    int longer = text().length() - 1;
    clock.nanos += 200_000_000L;
    d.ctx.logs.put("loss", 0.5);
    for (var c : d.callbacks) c.onBatchEnd(d.ctx, d.batch, 0.5);
    String t = text();
    String second = t.substring(t.lastIndexOf('\r') + 1);
    assertEquals(longer, second.length(), "padded to the previous frame's length: '" + second + "'");
    assertTrue(second.endsWith(" "));
  }

  @Test
  void valuesOfThePreviousEpochAreNotShownAsRunning() {
    ProgressBar bar = new ProgressBar(out, true, 30, 10, clock::now);
    CallbackDriver d = new CallbackDriver(2, 2, bar);
    d.trainBegin();
    d.epoch(1, 2, Map.of("accuracy", 0.5), Map.of());
    bytes.reset();
    d.epochBegin(2);
    clock.nanos += 10_000_000L;
    d.batch(0, 0.25, null);
    String frame = text().strip();
    assertTrue(frame.endsWith("loss 0.2500"), frame);
    assertFalse(frame.contains("acc"), frame);
  }

  @Test
  void withoutATerminalPlainLinesEveryTenPercentAndAtEpochEnd() {
    ProgressBar bar = new ProgressBar(out, false, 0, 25, clock::now);
    CallbackDriver d = new CallbackDriver(3, 8, bar);
    d.trainBegin();
    d.epochBegin(1);
    for (int i = 0; i < 8; i++) {
      clock.nanos += 250_000_000L;
      d.batch(i, 1.0, null);
    }
    d.epochEnd(Map.of("accuracy", 0.5), CallbackDriver.ordered("val_loss", 1.5, "val_accuracy", 0.25));
    d.trainEnd();
    String t = text();
    assertFalse(t.contains("\r"));
    List<String> lines = t.lines().toList();
    assertEquals(List.of(
        "epoch 1/3 2/8 (25%)  16 samples/s  ETA 0:02  loss 1.0000",
        "epoch 1/3 4/8 (50%)  16 samples/s  ETA 0:01  loss 1.0000",
        "epoch 1/3 6/8 (75%)  16 samples/s  ETA 0:01  loss 1.0000",
        "epoch 1/3 8/8  2.0s  16 samples/s  loss 1.0000  lr 0.0100  acc 0.5000  val_loss 1.5000  val_acc 0.2500"), lines);
  }

  @Test
  void withoutATerminalPlainLinesEveryNSeconds() {
    ProgressBar bar = new ProgressBar(out, false, 1.0, 0, clock::now);
    CallbackDriver d = new CallbackDriver(1, 10, bar);
    d.trainBegin();
    d.epochBegin(1);
    for (int i = 0; i < 10; i++) {
      clock.nanos += 300_000_000L;
      d.batch(i, 1.0, null);
    }
    // 0.3 s per batch: lines after batches 4 (1.2 s) and 8 (2.4 s), then the epoch line
    List<String> lines = text().lines().toList();
    assertEquals(2, lines.size(), lines.toString());
    assertTrue(lines.get(0).startsWith("epoch 1/1 4/10 (40%)"), lines.get(0));
    assertTrue(lines.get(1).startsWith("epoch 1/1 8/10 (80%)"), lines.get(1));
  }

  @Test
  void withoutATerminalByDefaultOneLinePerEpochPlusOneEvery30Seconds() {
    ProgressBar bar = new ProgressBar(out, false, clock::now);
    CallbackDriver d = new CallbackDriver(2, 100, bar);
    d.trainBegin();
    // epoch 1: 100 fast batches (10 ms each): only its epoch line
    d.epochBegin(1);
    for (int i = 0; i < 100; i++) {
      clock.nanos += 10_000_000L;
      d.batch(i, 1.0, null);
    }
    d.epochEnd(Map.of(), Map.of());
    assertEquals(1, text().lines().count(), text());
    // epoch 2: 100 batches of 0.7 s (70 s): lines at 30 s and 60 s, then the epoch line
    d.epochBegin(2);
    for (int i = 0; i < 100; i++) {
      clock.nanos += 700_000_000L;
      d.batch(i, 1.0, null);
    }
    d.epochEnd(Map.of(), Map.of());
    d.trainEnd();
    List<String> lines = text().lines().toList();
    assertEquals(4, lines.size(), lines.toString());
    assertTrue(lines.get(0).startsWith("epoch 1/2 100/100  1.0s"), lines.get(0));
    assertTrue(lines.get(1).startsWith("epoch 2/2 43/100 (43%)"), lines.get(1)); // 43 x 0.7 s = 30.1 s
    assertTrue(lines.get(2).startsWith("epoch 2/2 86/100 (86%)"), lines.get(2));
    assertTrue(lines.get(3).startsWith("epoch 2/2 100/100  70.0s"), lines.get(3));
  }

  @Test
  void autoPicksPlainLinesWhenNotOnATerminal() {
    // the test JVM's output goes to a file or pipe, not a terminal
    assertEquals(System.console() != null && System.console().isTerminal(), ProgressBar.auto().interactive());
  }
}
