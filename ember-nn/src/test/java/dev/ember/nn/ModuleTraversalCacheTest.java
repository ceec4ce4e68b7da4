package dev.ember.nn;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;

import dev.ember.tensor.DType;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The traversals (modules, parameters, buffers) are walked once per change of a module tree's structure and reused:
 * every change below the root, however deep, shows in the next call, and callers get their own copies.
 */
class ModuleTraversalCacheTest {
  static final class Holder extends Module {
    Holder(Module inner) {
      registerModule("inner", inner);
    }

    void addChild(String name, Module m) {
      registerModule(name, m);
    }

    void replaceBuffer(String name, Tensor value) {
      setBuffer(name, value);
    }

    @Override
    public Tensor forward(Tensor x) {
      return child("inner").call(x);
    }
  }

  private static List<String> names(Module m) {
    return List.copyOf(m.namedParameters().keySet());
  }

  @Test
  void aChangeDeepInTheTreeShowsAtTheRoot() {
    Generator g = new Generator(3);
    Sequential seq = new Sequential(new Linear(2, 2, true, g));
    Holder root = new Holder(seq);
    assertEquals(List.of("inner.0.weight", "inner.0.bias"), names(root));
    assertEquals(List.of("inner.0.weight", "inner.0.bias"), names(root)); // the cached walk, same answer

    Linear inner = (Linear) seq.child("0");
    Tensor bias = inner.removeParameter("bias");
    assertEquals(List.of("inner.0.weight"), names(root));
    inner.registerParameter("bias_orig", bias);
    assertEquals(List.of("inner.0.weight", "inner.0.bias_orig"), names(root));

    root.addChild("head", new Linear(2, 1, false, g));
    assertEquals(List.of("inner.0.weight", "inner.0.bias_orig", "head.weight"), names(root));
    assertEquals(List.of("", "inner", "inner.0", "head"), List.copyOf(root.namedModules().keySet()));
    assertEquals(4, root.modules().size());

    Linear swapped = new Linear(2, 2, false, g);
    seq.replaceChild("0", swapped);
    assertEquals(List.of("inner.0.weight", "head.weight"), names(root));
    assertSame(swapped.param("weight"), root.parameters().get(0));
  }

  @Test
  void buffersAndDtypeChangesShow() {
    Holder root = new Holder(new BatchNorm1d(3));
    Tensor mean = root.namedBuffers().get("inner.running_mean");
    assertSame(((Module) root.child("inner")).buffer("running_mean"), mean);

    root.registerBuffer("extra", Tensor.zeros(1));
    assertEquals(List.of("extra", "inner.running_mean", "inner.running_var", "inner.num_batches_tracked"),
        List.copyOf(root.namedBuffers().keySet()));
    Tensor replacement = Tensor.ones(1);
    root.replaceBuffer("extra", replacement);
    assertSame(replacement, root.namedBuffers().get("extra"));
    root.removeBuffer("extra");
    assertEquals(3, root.namedBuffers().size());

    Tensor weight = root.parameters().get(0);
    root.to(DType.F64);
    Tensor after = root.parameters().get(0);
    assertSame(weight, after); // converted in place (its data replaced), as PyTorch's model.to(dtype)
    assertEquals(DType.F64, after.dtype());
    assertEquals(DType.F64, root.namedBuffers().get("inner.running_mean").dtype());
  }

  @Test
  void callersGetTheirOwnCopies() {
    Holder root = new Holder(new Linear(2, 2, true, new Generator(1)));
    root.namedParameters().clear();
    root.parameters().clear();
    root.namedModules().clear();
    root.modules().clear();
    root.namedBuffers().put("x", Tensor.zeros(1));
    assertEquals(2, root.parameters().size());
    assertEquals(List.of("inner.weight", "inner.bias"), names(root));
    assertEquals(2, root.modules().size());
    assertEquals(0, root.namedBuffers().size());
  }
}
