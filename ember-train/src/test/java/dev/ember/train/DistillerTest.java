package dev.ember.train;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.autograd.Grad;
import dev.ember.nn.Dropout;
import dev.ember.nn.Linear;
import dev.ember.nn.Module;
import dev.ember.nn.ReLU;
import dev.ember.nn.Sequential;
import dev.ember.nn.functional.F;
import dev.ember.nn.functional.Losses;
import dev.ember.nn.loss.DistillationLoss;
import dev.ember.optim.Adam;
import dev.ember.optim.SGD;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Distiller inside Trainer on the 3-blob data: the teacher is never recorded, switched to training or stepped; the
 * student learns from it; hint distillation trains its projection and its term falls; the loss is the sum it
 * documents; misuse is named.
 */
class DistillerTest {
  private final Tensor[] train = Fixtures.blobs(1, 200);
  private final Tensor[] val = Fixtures.blobs(2, 90);

  /** A trained 4-16-3 teacher with a dropout layer (which must stay in eval mode while distilling). */
  private Module teacher() {
    Generator g = new Generator(11);
    Module t = new Sequential(new Linear(4, 16, true, g), new ReLU(), new Dropout(0.5, g), new Linear(16, 3, true, g));
    Trainer.builder().maxEpochs(6).build()
        .fit(t, F::crossEntropy, new Adam(t.parameters(), 0.01), Fixtures.source(train, 16, 3), null);
    return t;
  }

  private static Module student(long seed) {
    Generator g = new Generator(seed);
    return new Sequential(new Linear(4, 8, true, g), new ReLU(), new Linear(8, 3, true, g));
  }

  private static List<Tensor> copies(Module m) {
    List<Tensor> out = new ArrayList<>();
    for (Tensor p : m.parameters()) out.add(p.detach().cloneContiguous());
    return out;
  }

  private double accuracy(Module m) {
    return Trainer.evaluate(m, null, Fixtures.source(val, 90, 0), List.of(new TrainerTest.Acc())).get("accuracy");
  }

  @Test
  void teacherIsFrozenAndUnrecordedWhileTheStudentLearns() {
    Module teacher = teacher();
    List<Tensor> before = copies(teacher);
    Module student = student(5);
    double studentBefore = accuracy(student);
    int[] calls = {0};
    List<String> problems = new ArrayList<>();
    teacher.registerForwardHook((m, in, out) -> {
      calls[0]++;
      if (Grad.enabled()) problems.add("tape on");
      if (out.requiresGrad()) problems.add("output requires grad");
      for (Module c : m.modules()) if (c.isTraining()) problems.add(c.name() + " in training mode");
    });
    Distiller d = Distiller.builder(teacher, student).loss(new DistillationLoss(3.0, 0.7)).build();
    // the optimizer, the state dict and checkpoints see the student only
    assertEquals(student.parameters().size(), d.parameters().size());
    assertTrue(d.stateDict().keySet().stream().allMatch(k -> k.startsWith("student.")), d.stateDict().keySet().toString());
    History h = Trainer.builder().maxEpochs(5).metrics(new TrainerTest.Acc()).callbacks(d.termLogger()).build()
        .fit(d, d::loss, new SGD(d.parameters(), 0.1), Fixtures.source(train, 20, 7), Fixtures.source(val, 45, 0));
    assertEquals(List.of(), problems);
    assertEquals(5 * 10 + 5 * 2, calls[0], "one teacher forward per training and validation batch");
    List<Tensor> after = teacher.parameters();
    for (int i = 0; i < before.size(); i++) {
      assertArrayEquals(before.get(i).toFloatArray(), after.get(i).toFloatArray(), "teacher parameter " + i);
      assertNull(after.get(i).grad(), "teacher parameter " + i + " has a gradient");
    }
    double[] loss = h.values("loss");
    assertTrue(loss[4] < 0.6 * loss[0], "distillation loss should fall: " + Arrays.toString(loss));
    assertArrayEquals(loss, h.values("distill_loss"), 1e-9, "without hints the term is the loss");
    double studentAfter = accuracy(student);
    assertTrue(studentAfter > 0.85 && studentAfter > studentBefore + 0.2,
        "student accuracy " + studentBefore + " -> " + studentAfter);
    assertTrue(h.last("val_accuracy") > 0.85);
    assertFalse(teacher.isTraining());
  }

  @Test
  void hintProjectionIsTrainedAndItsTermFalls() {
    Module teacher = teacher();
    Module student = student(6);
    Distiller d = Distiller.builder(teacher, student).loss(new DistillationLoss(2.0, 0.5))
        .hint("1", "1", 8, 16, 0.5).generator(new Generator(9)).build();
    assertEquals(List.of("student.0.weight", "student.0.bias", "student.2.weight", "student.2.bias",
        "hints.0.weight", "hints.0.bias"), List.copyOf(d.namedParameters().keySet()));
    Tensor projBefore = d.projection(0).param("weight").detach().cloneContiguous();
    History h = Trainer.builder().maxEpochs(6).callbacks(d.termLogger()).build()
        .fit(d, d::loss, new Adam(d.parameters(), 0.01), Fixtures.source(train, 20, 8), null);
    double[] hint = h.values("hint0_loss");
    assertEquals(6, hint.length);
    assertTrue(hint[5] < 0.5 * hint[0], "hint term should fall: " + Arrays.toString(hint));
    float[] a = projBefore.toFloatArray();
    float[] b = d.projection(0).param("weight").toFloatArray();
    double moved = 0;
    for (int i = 0; i < a.length; i++) moved += Math.abs(a[i] - b[i]);
    assertTrue(moved / a.length > 1e-3, "the projection should have been trained, mean |change| " + moved / a.length);
    // the loss is the distillation loss plus weight * mse(projection(student hidden), teacher hidden)
    Tensor x = val[0];
    Tensor y = val[1];
    Tensor out = d.forward(x);
    Tensor got = d.loss(out, y);
    Tensor teacherHidden;
    Tensor teacherOut;
    teacher.eval();
    try (Grad ignored = Grad.off()) {
      teacherHidden = ((Sequential) teacher).get(1).forward(((Sequential) teacher).get(0).forward(x));
      teacherOut = teacher.forward(x);
    }
    Tensor studentHidden = ((Sequential) student).get(1).forward(((Sequential) student).get(0).forward(x));
    double want = new DistillationLoss(2.0, 0.5).forward(out, teacherOut, y).item()
        + 0.5 * Losses.mseLoss(d.projection(0).forward(studentHidden), teacherHidden).item();
    assertEquals(want, got.item(), 1e-5);
    assertEquals(Map.of("distill_loss", d.lastTerms().get("distill_loss"), "hint0_loss", d.lastTerms().get("hint0_loss")),
        d.lastTerms());
    // closing removes the hooks from both models' layers
    assertEquals(1, ((Sequential) student).get(1).forwardHookCount());
    d.close();
    assertEquals(0, ((Sequential) student).get(1).forwardHookCount());
    assertEquals(0, ((Sequential) teacher).get(1).forwardHookCount());
  }

  @Test
  void misuseIsNamed() {
    Module teacher = student(1);
    Module student = student(2);
    String unknown = assertThrows(IllegalArgumentException.class,
        () -> Distiller.builder(teacher, student).hint("1", "7", 8, 8, 1).build()).getMessage();
    assertEquals("Distiller: the teacher has no layer '7' (its layers: [0, 1, 2])", unknown);
    assertEquals(0, ((Sequential) student).get(1).forwardHookCount(), "no hook left behind by a failed build");
    Distiller wrongWidth = Distiller.builder(teacher, student).hint("1", "1", 8, 5, 1).build();
    Tensor x = val[0];
    Tensor out = wrongWidth.forward(x);
    assertEquals("Distiller: hint 0's teacher layer '1' gives 8 features per sample (output [90, 8]), the hint was"
        + " declared with 5", assertThrows(IllegalArgumentException.class, () -> wrongWidth.loss(out, val[1])).getMessage());
    wrongWidth.close();
    Distiller d = Distiller.builder(teacher, student).build();
    assertTrue(assertThrows(IllegalStateException.class, () -> d.loss(student.forward(x), val[1])).getMessage()
        .startsWith("Distiller.loss: the output given is not the one of this distiller's latest forward"));
    assertThrows(IllegalArgumentException.class, () -> Distiller.builder(teacher, teacher));
    assertThrows(IllegalArgumentException.class, () -> Distiller.builder(teacher, student).hint("1", "1", 0, 8, 1));
    assertThrows(IllegalArgumentException.class, () -> Distiller.builder(teacher, student).hint("1", "1", 8, 8, -1));
  }
}
