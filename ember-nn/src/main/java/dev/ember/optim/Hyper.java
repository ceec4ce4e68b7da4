package dev.ember.optim;

import java.util.List;

/**
 * An optimizer option (a hyperparameter): its name, the check its value must pass and a typed read from a
 * {@link ParamGroup}. The options several optimizers share ({@link #LR}, {@link #BETAS}, {@link #EPS},
 * {@link #WEIGHT_DECAY}, {@link #MOMENTUM}, {@link #MAXIMIZE}) are declared here once; an optimizer declares
 * its own next to its update and lists all of them with its defaults ({@link Num#is}, {@link Flag#is},
 * {@link Pair#is}). The base class then fills, checks and checkpoints them; the update reads them typed:
 * <pre>{@code
 * static final Hyper.Flag AMSGRAD = Hyper.flag("amsgrad");
 * List<Hyper.Default> options = List.of(Hyper.LR.is(1e-3), Hyper.BETAS.is(0.9, 0.999), AMSGRAD.is(false));
 * double lr = Hyper.LR.of(group);
 * }</pre>
 * The values live in the group's options under the option's name, as in PyTorch's {@code param_groups}.
 */
public abstract sealed class Hyper permits Hyper.Num, Hyper.Flag, Hyper.Pair {
  /** The learning rate, >= 0. */
  public static final Num LR = nonNegative("lr");
  /** The coefficients of the running averages, each in [0, 1). */
  public static final Pair BETAS = betas("betas");
  /** The term added to a denominator for numerical stability, >= 0. */
  public static final Num EPS = nonNegative("eps");
  /** The weight decay (L2 penalty or decoupled decay), >= 0. */
  public static final Num WEIGHT_DECAY = nonNegative("weight_decay");
  /** The momentum factor, >= 0. */
  public static final Num MOMENTUM = nonNegative("momentum");
  /** Whether to maximize the objective instead of minimizing it. */
  public static final Flag MAXIMIZE = flag("maximize");

  private final String name;

  private Hyper(String name) {
    this.name = name;
  }

  /** The option's name, its key in the parameter groups ({@code "weight_decay"}). */
  public final String name() {
    return name;
  }

  /** Fails, with a message starting with {@code optimizer}'s name, unless {@code g}'s value passes the check. */
  abstract void check(String optimizer, ParamGroup g);

  /** A number option with no range check. */
  public static Num number(String name) {
    return new Num(name, Range.ANY);
  }

  /** A number option that must be >= 0. */
  public static Num nonNegative(String name) {
    return new Num(name, Range.NON_NEGATIVE);
  }

  /** A number option that must be > 0. */
  public static Num positive(String name) {
    return new Num(name, Range.POSITIVE);
  }

  /** A number option that must lie in [0, 1]. */
  public static Num unitInterval(String name) {
    return new Num(name, Range.UNIT_INTERVAL);
  }

  /** A boolean option. */
  public static Flag flag(String name) {
    return new Flag(name);
  }

  /** A pair option whose two numbers (beta1, beta2) must each lie in [0, 1). */
  public static Pair betas(String name) {
    return new Pair(name);
  }

  /** An option with one optimizer's default value. */
  public record Default(Hyper hyper, Object value) {}

  /** The values a number option accepts. */
  private enum Range { ANY, NON_NEGATIVE, POSITIVE, UNIT_INTERVAL }

  /** A number option ({@code Double} in the groups). */
  public static final class Num extends Hyper {
    private final Range range;

    private Num(String name, Range range) {
      super(name);
      this.range = range;
    }

    /** This option with default {@code value}. */
    public Default is(double value) {
      return new Default(this, value);
    }

    /** The group's value. */
    public double of(ParamGroup g) {
      return g.getDouble(name());
    }

    @Override
    void check(String optimizer, ParamGroup g) {
      double v = number(optimizer, g, name());
      switch (range) {
        case ANY -> { }
        case NON_NEGATIVE -> {
          if (!(v >= 0)) throw new IllegalArgumentException(optimizer + ": " + name() + " must be >= 0, got " + fmt(v));
        }
        case POSITIVE -> {
          if (!(v > 0)) throw new IllegalArgumentException(optimizer + ": " + name() + " must be > 0, got " + fmt(v));
        }
        case UNIT_INTERVAL -> requireInRange(optimizer, v, name(), 0, 1, true);
      }
    }
  }

  /** A boolean option. */
  public static final class Flag extends Hyper {
    private Flag(String name) {
      super(name);
    }

    /** This option with default {@code value}. */
    public Default is(boolean value) {
      return new Default(this, value);
    }

    /** The group's value. */
    public boolean of(ParamGroup g) {
      return g.getBoolean(name());
    }

    @Override
    void check(String optimizer, ParamGroup g) {
      if (!(g.get(name()) instanceof Boolean)) {
        throw new IllegalArgumentException(optimizer + ": " + name() + " must be a boolean, got "
            + ParamGroup.show(g.get(name())));
      }
    }
  }

  /** A pair of numbers ({@code double[2]} in the groups), each in [0, 1). */
  public static final class Pair extends Hyper {
    private Pair(String name) {
      super(name);
    }

    /** This option with default {@code (first, second)}. */
    public Default is(double first, double second) {
      return new Default(this, new double[] {first, second});
    }

    /** The group's first number (beta1). */
    public double first(ParamGroup g) {
      return g.pair(name(), 0);
    }

    /** The group's second number (beta2). */
    public double second(ParamGroup g) {
      return g.pair(name(), 1);
    }

    @Override
    void check(String optimizer, ParamGroup g) {
      Object v = g.get(name());
      if (!(v instanceof double[] b) || b.length != 2) {
        throw new IllegalArgumentException(optimizer + ": " + name() + " must be a pair of numbers, got "
            + ParamGroup.show(v));
      }
      requireInRange(optimizer, b[0], "beta1", 0, 1, false);
      requireInRange(optimizer, b[1], "beta2", 0, 1, false);
    }
  }

  /** Checks every option of {@code options} on {@code g}, in order. */
  static void checkAll(String optimizer, List<Hyper> options, ParamGroup g) {
    for (Hyper h : options) h.check(optimizer, g);
  }

  /** Option {@code key} of {@code g} as a number, or a message naming it. */
  static double number(String optimizer, ParamGroup g, String key) {
    Object v = g.get(key);
    if (v instanceof Double d) return d;
    throw new IllegalArgumentException(optimizer + ": " + key + " must be a number, got " + ParamGroup.show(v));
  }

  /** Fails unless {@code v} lies in [lo, hi) ({@code hiClosed} makes it [lo, hi]). */
  static void requireInRange(String optimizer, double v, String label, double lo, double hi, boolean hiClosed) {
    boolean ok = v >= lo && (hiClosed ? v <= hi : v < hi);
    if (!ok) {
      throw new IllegalArgumentException(optimizer + ": " + label + " must be in [" + bound(lo) + ", " + bound(hi)
          + (hiClosed ? "]" : ")") + ", got " + fmt(v));
    }
  }

  /** A range bound as written in a message: whole numbers without a fraction ([0, 1)). */
  static String bound(double v) {
    return v == Math.rint(v) && Math.abs(v) < 1e15 ? Long.toString((long) v) : Double.toString(v);
  }

  /** Formats a value like Python's repr of a float for whole numbers too (1.0, not 1). */
  static String fmt(double v) {
    return Double.toString(v);
  }
}
