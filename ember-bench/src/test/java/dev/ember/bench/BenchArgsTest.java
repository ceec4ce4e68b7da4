package dev.ember.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.junit.jupiter.api.Test;

class BenchArgsTest {
  @Test
  void positiveIntRejectsWordsZeroAndNegatives() {
    assertEquals(3, BenchArgs.positiveInt("FuseBench", "--rounds", "3"));
    for (String bad : new String[] {"abc", "0", "-2", "1.5", ""}) {
      var e = assertThrows(BenchArgs.BadOption.class, () -> BenchArgs.positiveInt("FuseBench", "--rounds", bad));
      assertEquals("FuseBench: --rounds must be a positive integer, got '" + bad + "'", e.getMessage());
    }
  }

  @Test
  void positiveRejectsNonFiniteAndNonPositive() {
    assertEquals(0.5, BenchArgs.positive("GemmAB", "--seconds", "0.5"));
    for (String bad : new String[] {"x", "0", "-1", "NaN", "Infinity"}) {
      var e = assertThrows(BenchArgs.BadOption.class, () -> BenchArgs.positive("GemmAB", "--seconds", bad));
      assertEquals("GemmAB: --seconds must be a number > 0, got '" + bad + "'", e.getMessage());
    }
  }

  @Test
  void valueNamesTheOptionThatLacksOne() {
    String[] args = {"--rounds", "3", "--reps"};
    assertEquals("3", BenchArgs.value("FusedChainBench", args, 0));
    var e = assertThrows(BenchArgs.BadOption.class, () -> BenchArgs.value("FusedChainBench", args, 2));
    assertEquals("FusedChainBench: --reps needs a value", e.getMessage());
  }

  @Test
  void otherExceptionsFromTheBodyPassThrough() {
    var e = assertThrows(IllegalStateException.class,
        () -> BenchArgs.main(new String[0], a -> { throw new IllegalStateException("bench bug"); }));
    assertEquals("bench bug", e.getMessage());
  }
}
