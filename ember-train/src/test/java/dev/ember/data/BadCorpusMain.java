package dev.ember.data;

import java.nio.file.Path;
import java.util.List;

/**
 * Feeds every file of the bad-file corpus to its readers and exits 0 only if each reader rejected
 * each file with a typed error. Run in a child JVM with a small heap by BadFileCorpusTest, so that
 * a reader allocating what a file claims (instead of what it proves) fails the test.
 */
public final class BadCorpusMain {
  private BadCorpusMain() {}

  public static void main(String[] args) throws Exception {
    Path dir = Path.of(args[0]);
    List<Path> files = BadFiles.corpus(dir);
    int checks = 0, failures = 0;
    for (Path f : files) {
      for (BadFiles.Case c : BadFiles.readers(f)) {
        checks++;
        try {
          c.fn().read(f);
          failures++;
          System.out.println("ACCEPTED " + c.reader() + " " + f.getFileName());
        } catch (Throwable t) {
          if (BadFiles.typed(t)) {
            System.out.println("rejected " + c.reader() + " " + f.getFileName() + ": " + t.getMessage());
          } else {
            failures++;
            System.out.println("UNTYPED " + c.reader() + " " + f.getFileName() + ": " + t);
          }
        }
      }
    }
    System.out.println(failures == 0 && checks > 0 ? "all " + checks + " reads of " + files.size() + " files rejected"
        : failures + " of " + checks + " reads not rejected with a typed error");
    System.exit(failures == 0 && checks > 0 ? 0 : 1);
  }
}
