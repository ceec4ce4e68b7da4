package dev.ember.cli;

/**
 * A command's arguments, read one option at a time: {@code --name value} or {@code --name=value},
 * flags without a value. A command switches on {@link #next()} with one {@code case} per option,
 * takes the option's value with {@link #value()} and ends with {@code default -> throw
 * args.unknown()}, so that an unknown option is reported as such whether or not a value follows it,
 * and a word that is no option as a stray argument.
 */
final class Args {
  private final String command;
  private final String[] args;
  private int next;
  private String option;
  private String inlineValue;
  private String taken;

  Args(String command, String[] args) {
    this.command = command;
    this.args = args;
  }

  boolean hasNext() {
    return next < args.length;
  }

  /** The next option's name ({@code --lr} for both {@code --lr 0.1} and {@code --lr=0.1}). */
  String next() {
    String a = args[next++];
    int eq = a.startsWith("--") ? a.indexOf('=') : -1;
    option = eq < 0 ? a : a.substring(0, eq);
    inlineValue = eq < 0 ? null : a.substring(eq + 1);
    taken = null;
    return option;
  }

  /** The current option's value: the text after {@code =}, else the next argument. */
  String value() {
    if (inlineValue != null) {
      taken = inlineValue;
    } else if (next >= args.length || args[next].startsWith("--")) {
      throw new IllegalArgumentException("option " + option + " needs a value (see ./ember " + command + " --help)");
    } else {
      taken = args[next++];
    }
    return taken;
  }

  /** The value the current option took, null for a flag. */
  String taken() {
    return taken;
  }

  /** For a flag: refuses {@code --flag=value}. */
  void noValue() {
    if (inlineValue != null) {
      throw new IllegalArgumentException("option " + option + " takes no value, got '" + inlineValue + "'");
    }
  }

  /** The error for the current argument when no case took it. */
  IllegalArgumentException unknown() {
    String hint = " (see ./ember " + command + " --help)";
    if (option.startsWith("-") && option.length() > 1) {
      return new IllegalArgumentException("unknown option " + option + hint);
    }
    return new IllegalArgumentException("unexpected argument '" + option + "'" + hint);
  }
}
