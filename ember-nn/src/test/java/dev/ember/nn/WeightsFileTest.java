package dev.ember.nn;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.ember.nn.io.SafeTensors;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A model's state dict through a safetensors file into a differently initialised model. */
class WeightsFileTest {
  @Test
  void stateDictRoundTripsThroughSafetensors(@TempDir Path dir) throws Exception {
    Generator g = new Generator(11);
    Sequential a = new Sequential(new Linear(6, 5, true, g), new Tanh(), new LSTMHead(g));
    Path file = dir.resolve("model.safetensors");
    SafeTensors.save(a.stateDict(), file);
    Sequential b = new Sequential(new Linear(6, 5, true, new Generator(12)), new Tanh(), new LSTMHead(new Generator(13)));
    b.loadStateDict(SafeTensors.load(file));
    Tensor x = Tensor.randn(g, 3, 4, 6);
    assertArrayEquals(a.forward(x).toFloatArray(), b.forward(x).toFloatArray());
    assertEquals(List.of("model.safetensors"), Files.list(dir).map(p -> p.getFileName().toString()).toList());
  }

  /** Linear features into an LSTM over the middle dimension. */
  static final class LSTMHead extends Module {
    LSTMHead(Generator g) {
      registerModule("rnn", new LSTM(5, 3, 1, true, true, 0, false, g));
    }

    @Override
    public Tensor forward(Tensor x) {
      return child("rnn").forward(x);
    }
  }
}
