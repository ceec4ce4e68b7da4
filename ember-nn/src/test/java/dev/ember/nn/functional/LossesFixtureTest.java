package dev.ember.nn.functional;

import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.DynamicTest.dynamicTest;

import dev.ember.tensor.DType;
import dev.ember.tensor.Tensor;
import dev.ember.testing.Assertions;
import dev.ember.testing.GradCheck;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import java.util.stream.Stream;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;

/**
 * Every loss against PyTorch 1.13: forward values, gradients for a random upstream gradient, and a
 * float64 central-difference gradcheck, case by case from losses/loss_fixtures.txt (written by
 * make_loss_fixtures.py beside it; the format is described there).
 */
class LossesFixtureTest {
  private static final String RESOURCE = "/dev/ember/nn/functional/losses/loss_fixtures.txt";
  private static final List<Fixture> CASES = load();

  /** One case: the loss name, its scalar parameters, and tensors by role (inputs, out, upstream, grad.*). */
  record Fixture(String id, String fn, Map<String, String> params, Map<String, Tensor> tensors) {
    Reduction reduction() {
      return Reduction.valueOf(params.get("reduction").toUpperCase());
    }

    double d(String key, double dflt) {
      String v = params.get(key);
      return v == null ? dflt : Double.parseDouble(v);
    }

    double d(String key) {
      String v = params.get(key);
      assertNotNull(v, id + ": missing parameter " + key);
      return Double.parseDouble(v);
    }

    int i(String key, int dflt) {
      String v = params.get(key);
      return v == null ? dflt : Integer.parseInt(v);
    }

    boolean b(String key) {
      return Boolean.parseBoolean(params.get(key));
    }

    List<String> diff() {
      String v = params.get("diff");
      return v == null ? List.of() : List.of(v.split(","));
    }

    /** The loss arguments (every tensor that is not an expected value), fresh copies. */
    Map<String, Tensor> args() {
      Map<String, Tensor> m = new LinkedHashMap<>();
      tensors.forEach((k, v) -> {
        if (!k.equals("out") && !k.equals("upstream") && !k.startsWith("grad.")) m.put(k, v.clone());
      });
      return m;
    }

    @Override
    public String toString() {
      return id;
    }
  }

  /** Calls the loss a case names with its parameters (the full overloads). */
  static Tensor call(Fixture c, Map<String, Tensor> t) {
    Reduction r = c.reduction();
    Tensor in = t.get("input");
    Tensor tg = t.get("target");
    return switch (c.fn()) {
      case "mse_loss" -> Losses.mseLoss(in, tg, r);
      case "l1_loss" -> Losses.l1Loss(in, tg, r);
      case "smooth_l1_loss" -> Losses.smoothL1Loss(in, tg, r, c.d("beta"));
      case "huber_loss" -> Losses.huberLoss(in, tg, r, c.d("delta"));
      case "binary_cross_entropy" -> Losses.bceLoss(in, tg, t.get("weight"), r);
      case "binary_cross_entropy_with_logits" -> Losses.bceWithLogits(in, tg, t.get("weight"), r, t.get("pos_weight"));
      case "cross_entropy" -> Losses.crossEntropy(in, tg, t.get("weight"), c.i("ignore", -100), r, c.d("ls", 0));
      case "nll_loss" -> Losses.nllLoss(in, tg, t.get("weight"), c.i("ignore", -100), r);
      case "kl_div" -> Losses.klDiv(in, tg, r, c.b("logtarget"));
      case "cosine_embedding_loss" ->
          Losses.cosineEmbeddingLoss(t.get("input1"), t.get("input2"), tg, c.d("margin"), r);
      case "margin_ranking_loss" -> Losses.marginRankingLoss(t.get("input1"), t.get("input2"), tg, c.d("margin"), r);
      case "hinge_embedding_loss" -> Losses.hingeEmbeddingLoss(in, tg, c.d("margin"), r);
      case "triplet_margin_loss" -> Losses.tripletMarginLoss(t.get("anchor"), t.get("positive"), t.get("negative"),
          c.d("margin"), c.d("p"), c.d("eps"), c.b("swap"), r);
      case "sigmoid_focal_loss" -> Losses.sigmoidFocalLoss(in, tg, c.d("alpha"), c.d("gamma"), r);
      case "focal_loss" -> Losses.focalLoss(in, tg, t.get("alpha"), c.d("gamma"), -100, r);
      case "dice_loss" -> Losses.diceLoss(in, tg, c.d("smooth"), r);
      case "poly_loss" -> Losses.polyLoss(in, tg, c.d("epsilon"), c.d("ls"), -100, r);
      default -> throw new AssertionError(c.id() + ": unknown loss " + c.fn());
    };
  }

  /** The short overloads, for the cases generated with PyTorch's (or the reference's) defaults. */
  private static final Map<String, Function<Map<String, Tensor>, Tensor>> DEFAULTS = Map.ofEntries(
      Map.entry("mse_mean", t -> Losses.mseLoss(t.get("input"), t.get("target"))),
      Map.entry("l1_mean", t -> Losses.l1Loss(t.get("input"), t.get("target"))),
      Map.entry("smooth_l1_default", t -> Losses.smoothL1Loss(t.get("input"), t.get("target"))),
      Map.entry("smooth_l1_beta05_none",
          t -> Losses.smoothL1Loss(t.get("input"), t.get("target"), Reduction.NONE, 0.5)),
      Map.entry("huber_default", t -> Losses.huberLoss(t.get("input"), t.get("target"))),
      Map.entry("bce_mean", t -> Losses.bceLoss(t.get("input"), t.get("target"))),
      Map.entry("bce_sum", t -> Losses.bceLoss(t.get("input"), t.get("target"), Reduction.SUM)),
      Map.entry("bce_logits_mean", t -> Losses.bceWithLogits(t.get("input"), t.get("target"))),
      Map.entry("bce_logits_none", t -> Losses.bceWithLogits(t.get("input"), t.get("target"), Reduction.NONE)),
      Map.entry("ce_mean", t -> Losses.crossEntropy(t.get("input"), t.get("target"))),
      Map.entry("ce_none", t -> Losses.crossEntropy(t.get("input"), t.get("target"), Reduction.NONE)),
      Map.entry("ce_ignore_mean", t -> Losses.crossEntropy(t.get("input"), t.get("target"))),
      Map.entry("ce_prob_mean", t -> Losses.crossEntropy(t.get("input"), t.get("target"))),
      Map.entry("nll_mean", t -> Losses.nllLoss(t.get("input"), t.get("target"))),
      Map.entry("nll_sum", t -> Losses.nllLoss(t.get("input"), t.get("target"), Reduction.SUM)),
      Map.entry("kl_mean", t -> Losses.klDiv(t.get("input"), t.get("target"))),
      Map.entry("kl_batchmean", t -> Losses.klDiv(t.get("input"), t.get("target"), Reduction.BATCHMEAN)),
      Map.entry("cosine_mean", t -> Losses.cosineEmbeddingLoss(t.get("input1"), t.get("input2"), t.get("target"))),
      Map.entry("ranking_mean", t -> Losses.marginRankingLoss(t.get("input1"), t.get("input2"), t.get("target"))),
      Map.entry("hinge_mean", t -> Losses.hingeEmbeddingLoss(t.get("input"), t.get("target"))),
      Map.entry("triplet_default",
          t -> Losses.tripletMarginLoss(t.get("anchor"), t.get("positive"), t.get("negative"))),
      Map.entry("sfocal_default", t -> Losses.sigmoidFocalLoss(t.get("input"), t.get("target"))),
      Map.entry("focal_default", t -> Losses.focalLoss(t.get("input"), t.get("target"))),
      Map.entry("focal_gamma0_is_ce", t -> Losses.focalLoss(t.get("input"), t.get("target"), 0.0)),
      Map.entry("dice_default", t -> Losses.diceLoss(t.get("input"), t.get("target"))),
      Map.entry("poly_default", t -> Losses.polyLoss(t.get("input"), t.get("target"))));

  private static double atol(Tensor expected) {
    return expected.dtype() == DType.F32 ? 1e-5 : 1e-10;
  }

  private static double rtol(Tensor expected) {
    return expected.dtype() == DType.F32 ? 1e-5 : 1e-9;
  }

  @Test
  void fixtureFileCoversEveryLoss() {
    List<String> fns = CASES.stream().map(Fixture::fn).distinct().toList();
    assertTrue(fns.size() == 17, "losses in the fixture: " + fns);
    assertTrue(CASES.size() > 100, "cases: " + CASES.size());
  }

  @TestFactory
  Stream<DynamicTest> forwardMatchesPyTorch() {
    return CASES.stream().map(c -> dynamicTest(c.id(), () -> {
      Tensor expected = c.tensors().get("out");
      Tensor out = call(c, c.args());
      Assertions.assertClose(expected, out, atol(expected), rtol(expected), c.id());
      assertTrue(out.dtype() == expected.dtype(), c.id() + ": dtype " + out.dtype() + ", expected " + expected.dtype());
    }));
  }

  @TestFactory
  Stream<DynamicTest> defaultOverloadsMatchPyTorchDefaults() {
    return CASES.stream().filter(c -> DEFAULTS.containsKey(c.id())).map(c -> dynamicTest(c.id(), () -> {
      Tensor expected = c.tensors().get("out");
      Tensor out = DEFAULTS.get(c.id()).apply(c.args());
      Assertions.assertClose(expected, out, atol(expected), rtol(expected), c.id());
    }));
  }

  @TestFactory
  Stream<DynamicTest> backwardMatchesPyTorch() {
    return CASES.stream().filter(c -> c.tensors().containsKey("upstream")).map(c -> dynamicTest(c.id(), () -> {
      Map<String, Tensor> args = c.args();
      List<String> withGrad = new ArrayList<>();
      c.tensors().keySet().stream().filter(k -> k.startsWith("grad.")).forEach(k -> withGrad.add(k.substring(5)));
      for (String k : withGrad) args.get(k).requiresGrad(true);
      call(c, args).backward(c.tensors().get("upstream"));
      for (String k : withGrad) {
        Tensor expected = c.tensors().get("grad." + k);
        Tensor grad = args.get(k).grad();
        assertNotNull(grad, c.id() + ": no gradient reached " + k);
        Assertions.assertClose(expected, grad, atol(expected), rtol(expected), c.id() + " d/d" + k);
      }
    }));
  }

  @TestFactory
  Stream<DynamicTest> backwardMatchesCentralDifferences() {
    return CASES.stream().filter(c -> !c.diff().isEmpty()).map(c -> dynamicTest(c.id(), () -> {
      Map<String, Tensor> args = c.args();
      List<String> names = new ArrayList<>(args.keySet());
      List<Tensor> inputs = new ArrayList<>();
      for (String k : names) {
        Tensor t = args.get(k);
        if (t.dtype().isFloatingPoint()) t = t.to(DType.F64);
        if (c.diff().contains(k)) t.requiresGrad(true);
        inputs.add(t);
      }
      GradCheck.check(c.id(), xs -> {
        Map<String, Tensor> m = new LinkedHashMap<>();
        for (int i = 0; i < names.size(); i++) m.put(names.get(i), xs.get(i));
        return call(c, m);
      }, inputs);
    }));
  }

  // ------------------------------------------------------------------ fixture file

  private static List<Fixture> load() {
    try (InputStream s = LossesFixtureTest.class.getResourceAsStream(RESOURCE)) {
      if (s == null) throw new IllegalStateException("missing test resource " + RESOURCE);
      BufferedReader r = new BufferedReader(new InputStreamReader(s, StandardCharsets.UTF_8));
      List<Fixture> out = new ArrayList<>();
      Fixture cur = null;
      String line;
      while ((line = r.readLine()) != null) {
        if (line.isBlank() || line.startsWith("#")) continue;
        String[] f = line.trim().split("\\s+");
        switch (f[0]) {
          case "case" -> {
            Map<String, String> params = new LinkedHashMap<>();
            for (int i = 3; i < f.length; i++) {
              int eq = f[i].indexOf('=');
              params.put(f[i].substring(0, eq), f[i].substring(eq + 1));
            }
            cur = new Fixture(f[1], f[2], params, new LinkedHashMap<>());
          }
          case "t" -> cur.tensors().put(f[1], parseTensor(f));
          case "end" -> out.add(cur);
          default -> throw new IllegalStateException(RESOURCE + ": unexpected line " + line);
        }
      }
      return out;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** {@code t <name> <f32|f64|i64> <shape|-> values...}. */
  private static Tensor parseTensor(String[] f) {
    int[] shape = f[3].equals("-") ? new int[0]
        : Stream.of(f[3].split(",")).mapToInt(Integer::parseInt).toArray();
    int n = f.length - 4;
    Tensor t = switch (f[2]) {
      case "f64" -> {
        double[] v = new double[n];
        for (int i = 0; i < n; i++) v[i] = Double.parseDouble(f[4 + i]);
        yield Tensor.of(v);
      }
      case "f32" -> {
        float[] v = new float[n];
        for (int i = 0; i < n; i++) v[i] = (float) Double.parseDouble(f[4 + i]);
        yield Tensor.of(v);
      }
      case "i64" -> {
        long[] v = new long[n];
        for (int i = 0; i < n; i++) v[i] = Long.parseLong(f[4 + i]);
        yield Tensor.of(v);
      }
      default -> throw new IllegalStateException("unknown dtype " + f[2]);
    };
    return t.reshape(shape);
  }
}
