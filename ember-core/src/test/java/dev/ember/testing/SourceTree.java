package dev.ember.testing;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;

/** The repository's source tree, for tests that check a rule over every module's main code. */
public final class SourceTree {
  private SourceTree() {}

  /** The repository root: the nearest directory above the working directory holding ember-core/ and a pom.xml. */
  public static Path root() {
    for (Path p = Path.of("").toAbsolutePath(); p != null; p = p.getParent()) {
      if (Files.isDirectory(p.resolve("ember-core/src/main/java")) && Files.isRegularFile(p.resolve("pom.xml"))) return p;
    }
    throw new IllegalStateException("no repository root (with ember-core/src/main/java) above " + Path.of("").toAbsolutePath());
  }

  /** Every .java file under each module's {@code src/main/java} below root (modules, then files, in sorted order). */
  public static List<Path> mainSources(Path root) throws IOException {
    List<Path> sources = new ArrayList<>();
    try (Stream<Path> modules = Files.list(root)) {
      for (Path dir : modules.map(m -> m.resolve("src/main/java")).filter(Files::isDirectory).sorted().toList()) {
        try (Stream<Path> files = Files.walk(dir)) {
          files.filter(f -> f.toString().endsWith(".java")).sorted().forEach(sources::add);
        } catch (UncheckedIOException e) {
          throw e.getCause();
        }
      }
    }
    return sources;
  }
}
