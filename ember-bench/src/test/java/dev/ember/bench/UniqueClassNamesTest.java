package dev.ember.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.testing.SourceTree;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * No two top-level classes in the main code of any module share a simple name: a user who imports
 * two of Ember's packages must never meet two {@code Json}s or two {@code ReduceLROnPlateau}s.
 * It walks the source tree (every module's {@code src/main/java}) from the repository root ({@link SourceTree}).
 */
class UniqueClassNamesTest {
  static Map<String, List<Path>> duplicates(Path root) throws IOException {
    List<Path> sources = SourceTree.mainSources(root);
    Map<String, List<Path>> byName = sources.stream()
        .filter(f -> !f.getFileName().toString().equals("package-info.java") && !f.getFileName().toString().equals("module-info.java"))
        .collect(Collectors.groupingBy(f -> f.getFileName().toString().replace(".java", ""), TreeMap::new,
            Collectors.mapping(root::relativize, Collectors.toList())));
    byName.values().removeIf(l -> l.size() < 2);
    return byName;
  }

  @Test
  void mainClassNamesAreUnique() throws IOException {
    Path root = SourceTree.root();
    assertEquals(Map.of(), duplicates(root), "top-level classes in main code sharing a simple name");
    // the walk reaches the lowest and the highest module
    assertTrue(Files.isRegularFile(root.resolve("ember-core/src/main/java/dev/ember/tensor/Tensor.java")));
  }

  @Test
  void theWalkWouldCatchADuplicateAndIgnoresPackageInfoAndTests(@TempDir Path tmp) throws IOException {
    for (String f : List.of("a/src/main/java/x/Json.java", "b/src/main/java/y/Json.java", "b/src/main/java/y/package-info.java",
        "a/src/main/java/x/package-info.java", "a/src/test/java/x/Other.java", "b/src/test/java/y/Other.java")) {
      Files.createDirectories(tmp.resolve(f).getParent());
      Files.writeString(tmp.resolve(f), "");
    }
    Map<String, List<Path>> found = duplicates(tmp);
    assertEquals(List.of("Json"), List.copyOf(found.keySet()));
    assertEquals(List.of(Path.of("a/src/main/java/x/Json.java"), Path.of("b/src/main/java/y/Json.java")),
        found.get("Json").stream().sorted().toList());
  }
}
