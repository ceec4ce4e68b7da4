package dev.ember.nn.io;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.tensor.Tensor;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Saving goes through a temporary file in the same folder and a rename: all or nothing. */
class SafeTensorsAtomicWriteTest {
  @TempDir Path dir;

  private List<String> listing() throws IOException {
    try (Stream<Path> s = Files.list(dir)) {
      return s.map(p -> p.getFileName().toString()).sorted().toList();
    }
  }

  @Test
  void saveLeavesOnlyTheTargetBehind() throws IOException {
    Path f = dir.resolve("model.safetensors");
    SafeTensors.save(Map.of("w", Tensor.ones(3, 3)), f);
    assertEquals(List.of("model.safetensors"), listing());
    SafeTensors.save(Map.of("w", Tensor.zeros(2)), f); // replacing an existing file
    assertEquals(List.of("model.safetensors"), listing());
    assertArrayEquals(new int[] {2}, SafeTensors.load(f).get("w").shape());
  }

  @Test
  void aSaveRejectedUpFrontLeavesTheOldFileIntact() throws IOException {
    Path f = dir.resolve("model.safetensors");
    SafeTensors.save(Map.of("w", Tensor.ones(3)), f);
    byte[] before = Files.readAllBytes(f);
    assertThrows(IllegalArgumentException.class,
        () -> SafeTensors.save(Map.of("__metadata__", Tensor.ones(1)), f));
    assertThrows(IllegalArgumentException.class, () -> SafeTensors.save(Map.of("w\uDC00", Tensor.ones(1)), f));
    assertArrayEquals(before, Files.readAllBytes(f));
    assertEquals(List.of("model.safetensors"), listing());
  }

  @Test
  void aWriteThatFailsHalfwayLeavesTheOldFileIntactAndNoTemporaryFile() throws IOException {
    Path f = dir.resolve("model.safetensors");
    SafeTensors.save(Map.of("w", Tensor.ones(3)), f);
    byte[] before = Files.readAllBytes(f);
    IOException e = assertThrows(IOException.class, () -> AtomicFiles.write(f, ch -> {
      ch.write(ByteBuffer.wrap(new byte[4096])); // half a file already written to the temporary
      throw new IOException("disk full (simulated)");
    }));
    assertEquals("disk full (simulated)", e.getMessage());
    assertArrayEquals(before, Files.readAllBytes(f));
    assertEquals(List.of("model.safetensors"), listing());

    assertThrows(IllegalStateException.class, () -> AtomicFiles.write(f, ch -> {
      ch.write(ByteBuffer.wrap(new byte[10]));
      throw new IllegalStateException("bug in a writer");
    }));
    assertArrayEquals(before, Files.readAllBytes(f));
    assertEquals(List.of("model.safetensors"), listing());
  }

  @Test
  void theTemporaryFileLivesBesideTheTargetUntilTheRename() throws IOException {
    Path f = dir.resolve("model.safetensors");
    String[] seen = new String[1];
    AtomicFiles.write(f, ch -> {
      seen[0] = String.join(",", listing());
      ch.write(ByteBuffer.wrap(new byte[] {1, 2, 3}));
    });
    // during the write only the hidden temporary existed, in the same folder
    assertTrue(seen[0].matches("\\.model\\.safetensors\\.[0-9a-f]+\\.tmp"), seen[0]);
    assertArrayEquals(new byte[] {1, 2, 3}, Files.readAllBytes(f));
    assertEquals(List.of("model.safetensors"), listing());
  }
}
