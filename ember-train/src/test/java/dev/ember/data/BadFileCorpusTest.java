package dev.ember.data;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

class BadFileCorpusTest {
  static Stream<Arguments> cases() throws IOException {
    List<Arguments> out = new ArrayList<>();
    for (Path f : BadFiles.corpus(BadFiles.dir())) {
      for (BadFiles.Case c : BadFiles.readers(f)) out.add(Arguments.of(f.getFileName().toString(), c.reader(), c));
    }
    return out.stream();
  }

  @ParameterizedTest(name = "{1}({0})")
  @MethodSource("cases")
  void everyReaderRejectsEveryBadFileWithATypedError(String name, String reader, BadFiles.Case c) {
    Path f = BadFiles.dir().resolve(name);
    Throwable t = null;
    try {
      c.fn().read(f);
    } catch (Throwable e) {
      t = e;
    }
    if (t == null) fail(reader + " accepted " + name);
    if (!BadFiles.typed(t)) throw new AssertionError(reader + " rejected " + name + " with an untyped " + t, t);
    assertTrue(t.getMessage().contains(name), "the message names the file: " + t.getMessage());
    if (t instanceof DataFormatException d) assertEquals(f, d.file());
  }

  @Test
  void corpusCoversEveryKind() throws IOException {
    List<String> names = BadFiles.corpus(BadFiles.dir()).stream().map(p -> p.getFileName().toString()).toList();
    for (String must : List.of("idx_truncated_data.idx", "idx_wrong_magic.idx", "idx_dims_2e31_x_2e31.idx",
        "idx_gz_corrupt_deflate.idx.gz", "idx_zeros_short.idx.gz", "csv_ragged_rows.csv", "csv_missing_value.csv",
        "csv_bad_number.csv", "npy_bad_header_dict.npy", "npy_shape_2e31_x_2e31.npy")) {
      assertTrue(names.contains(must), "corpus has " + must);
    }
  }

  @Test
  void aSmallHeapChildJvmRejectsTheWholeCorpusWithoutRunningOutOfMemory() throws Exception {
    String java = ProcessHandle.current().info().command().orElseThrow(() -> new AssertionError("no java command"));
    List<String> cmd = List.of(java, "-Xmx32m", "-XX:+ExitOnOutOfMemoryError", "--add-modules", "jdk.incubator.vector",
        "-cp", System.getProperty("java.class.path"), BadCorpusMain.class.getName(), BadFiles.dir().toString());
    Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
    byte[] out = p.getInputStream().readAllBytes();
    assertTrue(p.waitFor(10, TimeUnit.MINUTES), "child finished");
    String text = new String(out, StandardCharsets.UTF_8);
    assertEquals(0, p.exitValue(), "child JVM output:\n" + text);
    int files = BadFiles.corpus(BadFiles.dir()).size();
    assertTrue(text.contains(" reads of " + files + " files rejected"), text);
  }
}
