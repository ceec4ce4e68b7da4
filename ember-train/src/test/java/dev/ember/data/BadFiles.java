package dev.ember.data;

import dev.ember.nn.io.Npy;
import dev.ember.nn.io.NpyException;
import java.io.IOException;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;

/** The bad-file corpus under src/test/resources/data/bad and the readers each file is fed to. */
final class BadFiles {
  private BadFiles() {}

  /** A reader applied to a file; must throw a typed error for every corpus file of its kind. */
  interface Reader {
    void read(Path file) throws Exception;
  }

  record Case(String reader, Reader fn) {}

  static Path dir() {
    try {
      return Path.of(BadFiles.class.getResource("/data/bad").toURI());
    } catch (URISyntaxException e) {
      throw new IllegalStateException(e);
    }
  }

  /** The corpus files (not the script that made them), sorted by name. */
  static List<Path> corpus(Path dir) throws IOException {
    try (Stream<Path> s = Files.list(dir)) {
      return s.filter(p -> !p.getFileName().toString().endsWith(".py")).sorted().toList();
    }
  }

  /** The readers for a corpus file, chosen by its name. */
  static List<Case> readers(Path file) {
    String name = file.getFileName().toString();
    List<Case> out = new ArrayList<>();
    if (name.endsWith(".idx") || name.endsWith(".idx.gz")) {
      out.add(new Case("Idx.read", Idx::read));
      out.add(new Case("Idx.readImages", Idx::readImages));
    } else if (name.endsWith(".csv")) {
      out.add(new Case("Csv.read", f -> Csv.read(f, Csv.Options.defaults())));
      out.add(new Case("Csv.stream", f -> {
        try {
          for (Sample s : Csv.stream(f, Csv.Options.defaults())) s.input().numel();
        } catch (java.io.UncheckedIOException e) {
          throw e.getCause();
        }
      }));
    } else if (name.endsWith(".npy")) {
      out.add(new Case("Npy.load", Npy::load));
      out.add(new Case("NpyData.load", f -> NpyData.load(f, f)));
      out.add(new Case("MappedNpyDataset.open", f -> MappedNpyDataset.open(f, f).close()));
    } else {
      throw new IllegalStateException("no reader for corpus file " + name);
    }
    return out;
  }

  /** Whether {@code t} is the typed error a reader must throw for a bad file. */
  static boolean typed(Throwable t) {
    return t instanceof DataFormatException || t instanceof NpyException;
  }
}
