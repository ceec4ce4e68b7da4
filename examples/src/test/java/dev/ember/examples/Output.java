package dev.ember.examples;

import static org.junit.jupiter.api.Assertions.fail;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** Runs an example's main and returns what it printed; reads {@code key=number} values back from it. */
final class Output {
  private Output() {}

  interface Main {
    void run() throws Exception;
  }

  /** What {@code main} printed on System.out (restored afterwards, also when main throws). */
  static String of(Main main) throws Exception {
    PrintStream saved = System.out;
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    System.setOut(new PrintStream(bytes, true, StandardCharsets.UTF_8));
    try {
      main.run();
    } finally {
      System.setOut(saved);
    }
    String out = bytes.toString(StandardCharsets.UTF_8);
    saved.print(out); // still visible in the test log
    return out;
  }

  /** The number after {@code key=} on the last line that has it. */
  static double value(String out, String key) {
    Matcher m = Pattern.compile("(?m)(?:^|\\s)" + Pattern.quote(key) + "=([-+0-9.eEaNInfity]+)").matcher(out);
    String last = null;
    while (m.find()) last = m.group(1);
    if (last == null) fail("no " + key + "= in the output:\n" + out);
    return Double.parseDouble(last);
  }
}
