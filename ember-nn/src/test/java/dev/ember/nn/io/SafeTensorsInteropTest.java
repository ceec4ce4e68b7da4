package dev.ember.nn.io;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.ember.tensor.DType;
import dev.ember.tensor.Tensor;
import java.io.IOException;
import java.io.InputStream;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Files in the layout PyTorch's {@code safetensors.torch.save_file} writes: interop.safetensors and
 * its expected values interop.txt come from make_fixtures.py (beside them), which builds the
 * tensors with torch 1.13 and lays them out as the reference writer does (see the script for why
 * it is not the reference package itself). Covers every supported dtype, a scalar, an empty
 * [0, 3] tensor, NaN/inf/-0/subnormal bit patterns, integer extremes and metadata.
 */
class SafeTensorsInteropTest {
  @TempDir Path dir;

  private static Path fixture(String name) throws URISyntaxException {
    return Path.of(SafeTensorsInteropTest.class.getResource(name).toURI());
  }

  private record Expected(String name, DType dtype, int[] shape, String[] elements) {}

  private static List<Expected> expected() throws IOException {
    List<Expected> out = new ArrayList<>();
    try (InputStream in = SafeTensorsInteropTest.class.getResourceAsStream("interop.txt")) {
      for (String line : new String(in.readAllBytes(), StandardCharsets.UTF_8).split("\n")) {
        if (line.isEmpty() || line.startsWith("#")) continue;
        String[] f = line.split(" ", -1);
        int[] shape = f[2].isEmpty() ? new int[0] : Arrays.stream(f[2].split(",")).mapToInt(Integer::parseInt).toArray();
        String[] elements = Arrays.copyOfRange(f, 3, f.length);
        if (elements.length == 1 && elements[0].isEmpty()) elements = new String[0];
        out.add(new Expected(f[0], DType.valueOf(f[1]), shape, elements));
      }
    }
    return out;
  }

  @Test
  void loadsTheFileWrittenInPyTorchsLayoutWithExactValues() throws Exception {
    SafeTensorsFile file = SafeTensors.read(fixture("interop.safetensors"));
    assertEquals(Map.of("format", "pt"), file.metadata());
    List<Expected> expected = expected();
    assertEquals(expected.stream().map(Expected::name).toList(), List.copyOf(file.tensors().keySet()),
        "tensors come back in file order");
    for (Expected e : expected) {
      Tensor t = file.tensors().get(e.name());
      assertEquals(e.dtype(), t.dtype(), e.name());
      assertArrayEquals(e.shape(), t.shape(), e.name());
      assertEquals(e.elements().length, t.numel(), e.name());
      for (int i = 0; i < e.elements().length; i++) {
        String want = e.elements()[i];
        String got = switch (t.dtype()) {
          case F32 -> Integer.toHexString(Float.floatToRawIntBits(t.storage().floats()[i]));
          case F64 -> Long.toHexString(Double.doubleToRawLongBits(t.storage().doubles()[i]));
          case I64 -> Long.toString(t.storage().longs()[i]);
          case I32 -> Integer.toString(t.storage().ints()[i]);
          case BOOL -> Integer.toString(t.storage().bools()[i]);
          case I8 -> Integer.toString(t.storage().int8s()[i]);
          case BF16, F16 -> Integer.toHexString(t.storage().halves()[i] & 0xFFFF);
        };
        assertEquals(want, got, e.name() + " element " + i);
      }
    }
    assertEquals(7.25, file.tensors().get("scalar").item());
    assertArrayEquals(new int[] {0, 3}, file.tensors().get("empty").shape());
  }

  @Test
  void writingTheSameTensorsReproducesTheFileByteForByte() throws Exception {
    LinkedHashMap<String, Tensor> loaded = SafeTensors.load(fixture("interop.safetensors"));
    // hand them over in reverse order: the writer's own sort must restore the reference order
    List<String> names = new ArrayList<>(loaded.keySet());
    java.util.Collections.reverse(names);
    Map<String, Tensor> shuffled = new LinkedHashMap<>();
    for (String n : names) shuffled.put(n, loaded.get(n));
    Path out = dir.resolve("ember.safetensors");
    SafeTensors.save(shuffled, Map.of("format", "pt"), out);
    assertArrayEquals(Files.readAllBytes(fixture("interop.safetensors")), Files.readAllBytes(out));
  }
}
