package dev.ember.backend.cpu.vector;

import static java.lang.constant.ConstantDescs.CD_Object;
import static java.lang.constant.ConstantDescs.CD_double;
import static java.lang.constant.ConstantDescs.CD_float;
import static java.lang.constant.ConstantDescs.CD_int;
import static java.lang.constant.ConstantDescs.CD_void;
import static java.lang.constant.ConstantDescs.INIT_NAME;

import dev.ember.backend.BinaryOp;
import dev.ember.backend.ElementwiseProgram;
import dev.ember.backend.UnaryOp;
import dev.ember.backend.cpu.FusedKernel;
import dev.ember.backend.cpu.ScalarKernels;
import java.lang.classfile.ClassFile;
import java.lang.classfile.CodeBuilder;
import java.lang.classfile.Label;
import java.lang.classfile.TypeKind;
import java.lang.constant.ClassDesc;
import java.lang.constant.MethodTypeDesc;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorSpecies;

/**
 * Generates one class per distinct {@link ElementwiseProgram} (programs that differ only in their constants share
 * it) with the JDK's class-file API, defined as a hidden class in this package: its {@link FusedKernel#block}
 * runs the program over a block as Vector API loops.
 *
 * <p>The steps are cut into stages. A run of register steps (the binary ops, neg, abs, relu, leaky_relu, square,
 * sqrt, reciprocal, and the exp family: exp, sigmoid, silu, gelu_tanh) is one loop: each iteration loads the
 * stage's inputs once ({@code FloatVector.fromArray} of the preferred species), computes the whole run on registers
 * with the operations eager's vector kernels use ({@code lanewise(ADD)}, relu's compare-and-blend, {@code 1 / v},
 * {@link VMath#expForm}'s body operation for operation), and stores only what a later stage or the output reads; a
 * scalar loop does the tail after {@code loopBound(len)} with eager's scalar functions ({@code +},
 * {@code Math.max}, {@code (float) Math.sqrt}, {@link ScalarKernels#apply} in double for the exp family). Any other
 * unary step (tanh, gelu, log, ...) is a call to {@link VectorKernels#unary} over the block, the loop eager runs,
 * between scratch blocks that stay in L1. Every element therefore goes through eager's functions and gets eager's
 * bits.
 */
final class FusedCodegen {
  private FusedCodegen() {}

  /** The species of the generated loops (read by them as a constant). */
  static final VectorSpecies<Float> S = FloatVector.SPECIES_PREFERRED;
  private static final int L = S.length();
  /** Unary ops computed on registers in a stage loop (see the class comment); the others are calls. */
  static final Set<UnaryOp> REGISTER_UNARY = Set.copyOf(EnumSet.of(UnaryOp.NEG, UnaryOp.ABS, UnaryOp.RELU,
      UnaryOp.SQUARE, UnaryOp.SQRT, UnaryOp.RECIPROCAL, UnaryOp.LEAKY_RELU, UnaryOp.EXP, UnaryOp.SIGMOID, UnaryOp.SILU,
      UnaryOp.GELU_TANH));
  private static final ConcurrentHashMap<ElementwiseProgram, FusedKernel> CACHE = new ConcurrentHashMap<>();

  private static final ClassDesc CD_FV = ClassDesc.of("jdk.incubator.vector.FloatVector");
  private static final ClassDesc CD_VECTOR = ClassDesc.of("jdk.incubator.vector.Vector");
  private static final ClassDesc CD_MASK = ClassDesc.of("jdk.incubator.vector.VectorMask");
  private static final ClassDesc CD_SPECIES = ClassDesc.of("jdk.incubator.vector.VectorSpecies");
  private static final ClassDesc CD_OPS = ClassDesc.of("jdk.incubator.vector.VectorOperators");
  private static final ClassDesc CD_OPS_UNARY = CD_OPS.nested("Unary");
  private static final ClassDesc CD_OPS_BINARY = CD_OPS.nested("Binary");
  private static final ClassDesc CD_OPS_COMPARISON = CD_OPS.nested("Comparison");
  private static final ClassDesc CD_OPS_ASSOCIATIVE = CD_OPS.nested("Associative");
  private static final ClassDesc CD_UNARY_OP = ClassDesc.of(UnaryOp.class.getName());
  private static final ClassDesc CD_KERNEL = ClassDesc.of(FusedKernel.class.getName());
  private static final ClassDesc CD_SELF = ClassDesc.of(FusedCodegen.class.getName());
  private static final ClassDesc CD_KERNELS = ClassDesc.of(VectorKernels.class.getName());
  private static final ClassDesc CD_MATH = ClassDesc.of("java.lang.Math");
  private static final ClassDesc CD_FLOATS = CD_float.arrayType();
  private static final ClassDesc CD_INTV = ClassDesc.of("jdk.incubator.vector.IntVector");
  private static final ClassDesc CD_OPS_CONVERSION = CD_OPS.nested("Conversion");
  private static final ClassDesc CD_SCALAR = ClassDesc.of(ScalarKernels.class.getName());
  /** VMath.expForm's polynomial for exp on [-ln2/2, ln2/2], highest degree first (the bitwise tests guard the copy). */
  private static final float[] EXP_POLY = {1.9875691500e-4f, 1.3981999507e-3f, 8.3334519073e-3f, 4.1665795894e-2f,
      1.6666665459e-1f, 5.0000001201e-1f};

  /** The generated kernel of {@code program}, made on first use and cached by the program's structure. */
  static FusedKernel kernel(ElementwiseProgram program) {
    return CACHE.computeIfAbsent(program.structure(), FusedCodegen::generate);
  }

  private static FusedKernel generate(ElementwiseProgram p) {
    byte[] bytes = bytes(p);
    try {
      MethodHandles.Lookup hidden = MethodHandles.lookup().defineHiddenClass(bytes, true);
      return (FusedKernel) hidden.findConstructor(hidden.lookupClass(), MethodType.methodType(void.class)).invoke();
    } catch (Throwable e) {
      throw new IllegalStateException("FusedCodegen: the class generated for " + p + " did not load", e);
    }
  }

  /** A run of steps [from, to): one vector loop, or (a single step) a call to the eager kernel. */
  record Stage(int from, int to, boolean loop) {}

  /**
   * Most work one register loop takes, in simple steps (an exp, sigmoid, silu or gelu_tanh weighs {@link #EXP_WEIGHT},
   * about thirty vector operations): keeps each generated method far under the sizes where C2 stops compiling it
   * (8000 bytes) or stops inlining the Vector API calls in it (its node budget), either of which would leave the
   * vectors boxed and the loop many times slower.
   */
  static final int MAX_STAGE = 32;
  static final int EXP_WEIGHT = 8;

  private static int weight(ElementwiseProgram.Step step) {
    return step instanceof ElementwiseProgram.UnaryStep u && switch (u.op()) {
      case EXP, SIGMOID, SILU, GELU_TANH -> true;
      default -> false;
    } ? EXP_WEIGHT : 1;
  }

  /** The program's stages, in order: runs of register steps (at most {@link #MAX_STAGE}), and single calls. */
  static List<Stage> stages(ElementwiseProgram p) {
    List<Stage> stages = new ArrayList<>();
    int s = 0;
    int n = p.steps().size();
    while (s < n) {
      if (!Body.onRegisters(p.steps().get(s))) {
        stages.add(new Stage(s, s + 1, false));
        s++;
        continue;
      }
      int t = s;
      int work = 0;
      while (t < n && Body.onRegisters(p.steps().get(t)) && (t == s || work + weight(p.steps().get(t)) <= MAX_STAGE)) {
        work += weight(p.steps().get(t));
        t++;
      }
      stages.add(new Stage(s, t, true));
      s = t;
    }
    return stages;
  }

  private static final MethodTypeDesc BLOCK = MethodTypeDesc.of(CD_void, CD_FLOATS.arrayType(), CD_int.arrayType(),
      CD_FLOATS, CD_int);

  /**
   * The class: {@code block} calls, in order, one static method per register stage ({@code stage0},
   * {@code stage1}, ...) and the eager kernel for each other step.
   */
  static byte[] bytes(ElementwiseProgram p) {
    ClassDesc name = ClassDesc.of(FusedCodegen.class.getPackageName() + ".GeneratedFusedKernel");
    List<Stage> stages = stages(p);
    return ClassFile.of().build(name, cb -> {
      cb.withFlags(ClassFile.ACC_FINAL | ClassFile.ACC_SUPER);
      cb.withInterfaceSymbols(CD_KERNEL);
      cb.withMethodBody(INIT_NAME, MethodTypeDesc.of(CD_void), ClassFile.ACC_PUBLIC,
          code -> code.aload(0).invokespecial(CD_Object, INIT_NAME, MethodTypeDesc.of(CD_void)).return_());
      for (int k = 0; k < stages.size(); k++) {
        Stage st = stages.get(k);
        if (!st.loop()) continue;
        cb.withMethodBody("stage" + k, BLOCK, ClassFile.ACC_PRIVATE | ClassFile.ACC_STATIC, code -> {
          new Body(p, code, 0).loop(st);
          code.return_();
        });
      }
      cb.withMethodBody("block", BLOCK, ClassFile.ACC_PUBLIC, code -> {
        Body body = new Body(p, code, 1);
        for (int k = 0; k < stages.size(); k++) {
          Stage st = stages.get(k);
          if (st.loop()) {
            code.aload(1).aload(2).aload(3).iload(4).invokestatic(name, "stage" + k, BLOCK);
          } else {
            body.call(st.from());
          }
        }
        code.return_();
      });
    });
  }

  /** The code of a stage (or the calls of the block method): arr, off, consts and len are locals base..base+3. */
  private static final class Body {
    private final int arrSlot;
    private final int offSlot;
    private final int constsSlot;
    private final int lenSlot;
    private final ElementwiseProgram p;
    private final CodeBuilder code;
    private final int inputs;
    /** Per value, the last step that reads it (-1: none). */
    private final int[] lastRead;

    Body(ElementwiseProgram p, CodeBuilder code, int base) {
      this.p = p;
      this.code = code;
      arrSlot = base;
      offSlot = base + 1;
      constsSlot = base + 2;
      lenSlot = base + 3;
      this.inputs = p.inputs().size();
      lastRead = new int[p.valueCount()];
      java.util.Arrays.fill(lastRead, -1);
      for (int s = 0; s < p.steps().size(); s++) for (int v : reads(p.steps().get(s))) lastRead[v] = s;
    }

    private static int[] reads(ElementwiseProgram.Step step) {
      return switch (step) {
        case ElementwiseProgram.UnaryStep u -> new int[] {u.x()};
        case ElementwiseProgram.BinaryStep b -> new int[] {b.a(), b.b()};
      };
    }

    static boolean onRegisters(ElementwiseProgram.Step step) {
      return !(step instanceof ElementwiseProgram.UnaryStep u) || REGISTER_UNARY.contains(u.op());
    }

    /** arr[v] and off[v] onto the stack. */
    private void arrayAndOffset(int v) {
      code.aload(arrSlot).loadConstant(v).aaload().aload(offSlot).loadConstant(v).iaload();
    }

    /** VectorKernels.unary(op, (float) param, arr[x], off[x], arr[r], off[r], len). */
    private void call(int step) {
      ElementwiseProgram.UnaryStep u = (ElementwiseProgram.UnaryStep) p.steps().get(step);
      code.getstatic(CD_UNARY_OP, u.op().name(), CD_UNARY_OP).loadConstant((float) u.param());
      arrayAndOffset(u.x());
      arrayAndOffset(inputs + step);
      code.iload(lenSlot).invokestatic(CD_KERNELS, "unary", MethodTypeDesc.of(CD_void, CD_UNARY_OP, CD_float, CD_FLOATS,
          CD_int, CD_FLOATS, CD_int, CD_int));
    }

    private void loop(Stage st) {
      int values = p.valueCount();
      // what the stage reads from outside it, and which of its registers a later step (or the output) reads
      boolean[] external = new boolean[values];
      boolean[] stored = new boolean[values];
      for (int s = st.from(); s < st.to(); s++) {
        for (int v : reads(p.steps().get(s))) if (v < inputs + st.from()) external[v] = true;
      }
      for (int s = st.from(); s < st.to(); s++) {
        int r = inputs + s;
        stored[r] = r == values - 1 || lastRead[r] >= st.to();
      }
      int[] array = new int[values];
      int[] offset = new int[values];
      int[] vec = new int[values];
      int[] scalar = new int[values];
      for (int v = 0; v < values; v++) {
        boolean constant = v < inputs && p.kind(v) == ElementwiseProgram.Kind.CONSTANT;
        if (!external[v] && !stored[v]) continue;
        vec[v] = code.allocateLocal(TypeKind.REFERENCE);
        scalar[v] = code.allocateLocal(TypeKind.FLOAT);
        if (constant) { // hoisted: the float and its broadcast
          code.aload(constsSlot).loadConstant(v).faload().fstore(scalar[v]);
          code.getstatic(CD_SELF, "S", CD_SPECIES).fload(scalar[v])
              .invokestatic(CD_FV, "broadcast", MethodTypeDesc.of(CD_FV, CD_SPECIES, CD_float)).astore(vec[v]);
        } else {
          array[v] = code.allocateLocal(TypeKind.REFERENCE);
          offset[v] = code.allocateLocal(TypeKind.INT);
          code.aload(arrSlot).loadConstant(v).aaload().astore(array[v]);
          code.aload(offSlot).loadConstant(v).iaload().istore(offset[v]);
        }
      }
      for (int s = st.from(); s < st.to(); s++) {
        int r = inputs + s;
        if (vec[r] == 0) {
          vec[r] = code.allocateLocal(TypeKind.REFERENCE);
          scalar[r] = code.allocateLocal(TypeKind.FLOAT);
        }
      }
      int zero = code.allocateLocal(TypeKind.REFERENCE);
      int one = code.allocateLocal(TypeKind.REFERENCE);
      code.getstatic(CD_SELF, "S", CD_SPECIES).invokestatic(CD_FV, "zero", MethodTypeDesc.of(CD_FV, CD_SPECIES))
          .astore(zero);
      code.getstatic(CD_SELF, "S", CD_SPECIES).fconst_1()
          .invokestatic(CD_FV, "broadcast", MethodTypeDesc.of(CD_FV, CD_SPECIES, CD_float)).astore(one);
      int bound = code.allocateLocal(TypeKind.INT);
      int i = code.allocateLocal(TypeKind.INT);
      code.iload(lenSlot).loadConstant(-L).iand().istore(bound); // loopBound(len): L is a power of two
      code.iconst_0().istore(i);

      // vector body
      Label head = code.newLabel();
      Label tail = code.newLabel();
      code.labelBinding(head);
      code.iload(i).iload(bound).if_icmpge(tail);
      for (int v = 0; v < values; v++) {
        if (!external[v] || (v < inputs && p.kind(v) == ElementwiseProgram.Kind.CONSTANT)) continue;
        code.getstatic(CD_SELF, "S", CD_SPECIES).aload(array[v]).iload(offset[v]).iload(i).iadd()
            .invokestatic(CD_FV, "fromArray", MethodTypeDesc.of(CD_FV, CD_SPECIES, CD_FLOATS, CD_int))
            .astore(vec[v]);
      }
      for (int s = st.from(); s < st.to(); s++) {
        vectorStep(p.steps().get(s), vec, zero, one);
        code.astore(vec[inputs + s]);
      }
      for (int v = 0; v < values; v++) {
        if (!stored[v]) continue;
        code.aload(vec[v]).aload(array[v]).iload(offset[v]).iload(i).iadd()
            .invokevirtual(CD_FV, "intoArray", MethodTypeDesc.of(CD_void, CD_FLOATS, CD_int));
      }
      code.iinc(i, L).goto_(head);

      // scalar tail: i == bound here
      code.labelBinding(tail);
      Label tailHead = code.newLabel();
      Label done = code.newLabel();
      code.labelBinding(tailHead);
      code.iload(i).iload(lenSlot).if_icmpge(done);
      for (int v = 0; v < values; v++) {
        if (!external[v] || (v < inputs && p.kind(v) == ElementwiseProgram.Kind.CONSTANT)) continue;
        code.aload(array[v]).iload(offset[v]).iload(i).iadd().faload().fstore(scalar[v]);
      }
      for (int s = st.from(); s < st.to(); s++) {
        scalarStep(p.steps().get(s), scalar);
        code.fstore(scalar[inputs + s]);
      }
      for (int v = 0; v < values; v++) {
        if (!stored[v]) continue;
        code.aload(array[v]).iload(offset[v]).iload(i).iadd().fload(scalar[v]).fastore();
      }
      code.iinc(i, 1).goto_(tailHead);
      code.labelBinding(done);
    }

    /** Leaves the step's vector on the stack, as eager's vector kernel computes it. */
    private void vectorStep(ElementwiseProgram.Step step, int[] vec, int zero, int one) {
      switch (step) {
        case ElementwiseProgram.BinaryStep b -> {
          String op = binaryOperator(b.op());
          code.aload(vec[b.a()]).getstatic(CD_OPS, op, operatorType(op)).aload(vec[b.b()])
              .invokevirtual(CD_FV, "lanewise", MethodTypeDesc.of(CD_FV, CD_OPS_BINARY, CD_VECTOR));
        }
        case ElementwiseProgram.UnaryStep u -> {
          int x = vec[u.x()];
          switch (u.op()) {
            case NEG, ABS, SQRT -> code.aload(x).getstatic(CD_OPS, u.op().name(), CD_OPS_UNARY)
                .invokevirtual(CD_FV, "lanewise", MethodTypeDesc.of(CD_FV, CD_OPS_UNARY));
            case SQUARE -> code.aload(x).getstatic(CD_OPS, "MUL", CD_OPS_ASSOCIATIVE).aload(x)
                .invokevirtual(CD_FV, "lanewise", MethodTypeDesc.of(CD_FV, CD_OPS_BINARY, CD_VECTOR));
            case RECIPROCAL -> code.aload(one).getstatic(CD_OPS, "DIV", CD_OPS_BINARY).aload(x)
                .invokevirtual(CD_FV, "lanewise", MethodTypeDesc.of(CD_FV, CD_OPS_BINARY, CD_VECTOR));
            case RELU -> code.aload(x).aload(zero).aload(x).getstatic(CD_OPS, "LE", CD_OPS_COMPARISON).fconst_0()
                .invokevirtual(CD_FV, "compare", MethodTypeDesc.of(CD_MASK, CD_OPS_COMPARISON, CD_float))
                .invokevirtual(CD_FV, "blend", MethodTypeDesc.of(CD_FV, CD_VECTOR, CD_MASK));
            case LEAKY_RELU -> code.aload(x).loadConstant((float) u.param())
                .invokevirtual(CD_FV, "mul", MethodTypeDesc.of(CD_FV, CD_float)).aload(x).aload(x)
                .getstatic(CD_OPS, "GT", CD_OPS_COMPARISON).fconst_0()
                .invokevirtual(CD_FV, "compare", MethodTypeDesc.of(CD_MASK, CD_OPS_COMPARISON, CD_float))
                .invokevirtual(CD_FV, "blend", MethodTypeDesc.of(CD_FV, CD_VECTOR, CD_MASK));
            case EXP -> expForm(x, VMath.EXP, one);
            case SIGMOID -> expForm(x, VMath.SIGMOID, one);
            case SILU -> expForm(x, VMath.SILU, one);
            case GELU_TANH -> expForm(x, VMath.GELU_TANH, one);
            default -> throw new IllegalStateException("not a register op: " + u.op());
          }
        }
      }
    }

    private int ref() {
      return code.allocateLocal(TypeKind.REFERENCE);
    }

    private void fv(String method, ClassDesc... params) {
      code.invokevirtual(CD_FV, method, MethodTypeDesc.of(CD_FV, params));
    }

    private void broadcast(float c) {
      code.getstatic(CD_SELF, "S", CD_SPECIES).loadConstant(c)
          .invokestatic(CD_FV, "broadcast", MethodTypeDesc.of(CD_FV, CD_SPECIES, CD_float));
    }

    /** xc.blend(c, xc.compare(op, c)) into xc. */
    private void clamp(int xc, String op, float c) {
      code.aload(xc).loadConstant(c).aload(xc).getstatic(CD_OPS, op, CD_OPS_COMPARISON).loadConstant(c)
          .invokevirtual(CD_FV, "compare", MethodTypeDesc.of(CD_MASK, CD_OPS_COMPARISON, CD_float));
      fv("blend", CD_float, CD_MASK);
      code.astore(xc);
    }

    /** 127 + the int vector on the stack, shifted into a float's exponent: 2^n as a float vector. */
    private void powerOfTwo() {
      code.bipush(127).invokevirtual(CD_INTV, "add", MethodTypeDesc.of(CD_INTV, CD_int))
          .getstatic(CD_OPS, "LSHL", CD_OPS_BINARY).bipush(23)
          .invokevirtual(CD_INTV, "lanewise", MethodTypeDesc.of(CD_INTV, CD_OPS_BINARY, CD_int))
          .invokevirtual(CD_INTV, "reinterpretAsFloats", MethodTypeDesc.of(CD_FV));
    }

    /**
     * VMath.expForm's body on the vector in local v, operation for operation (so each lane gets its bits), its
     * result left on the stack: exp, sigmoid, silu or gelu_tanh.
     */
    private void expForm(int v, int form, int one) {
      int w = v;
      if (form == VMath.GELU_TANH) { // w = v.mul(v).mul(GELU_C).add(GELU_K).mul(v)
        w = ref();
        code.aload(v).aload(v);
        fv("mul", CD_VECTOR);
        code.loadConstant(VMath.GELU_C);
        fv("mul", CD_float);
        code.loadConstant(VMath.GELU_K);
        fv("add", CD_float);
        code.aload(v);
        fv("mul", CD_VECTOR);
        code.astore(w);
      }
      int xc = ref();
      code.aload(form == VMath.EXP ? v : w);
      if (form != VMath.EXP) { // x = w.lanewise(ABS).neg()
        code.getstatic(CD_OPS, "ABS", CD_OPS_UNARY);
        fv("lanewise", CD_OPS_UNARY);
        fv("neg");
      }
      code.astore(xc);
      clamp(xc, "LT", VMath.EXP_CLAMP_LO);
      clamp(xc, "GT", VMath.EXP_CLAMP_HI);
      int nn = ref();
      code.aload(xc).loadConstant(VMath.LOG2E).loadConstant(VMath.ROUND);
      fv("fma", CD_float, CD_float);
      code.loadConstant(VMath.ROUND);
      fv("sub", CD_float);
      code.astore(nn);
      int r = ref();
      code.aload(nn);
      broadcast(-VMath.LN2_HI);
      code.aload(xc);
      fv("fma", CD_VECTOR, CD_VECTOR);
      code.astore(r);
      code.aload(nn);
      broadcast(-VMath.LN2_LO);
      code.aload(r);
      fv("fma", CD_VECTOR, CD_VECTOR);
      code.astore(r);
      int poly = ref();
      code.aload(r).loadConstant(EXP_POLY[0]).loadConstant(EXP_POLY[1]);
      fv("fma", CD_float, CD_float);
      code.astore(poly);
      for (int k = 2; k < EXP_POLY.length; k++) {
        code.aload(poly).aload(r);
        broadcast(EXP_POLY[k]);
        fv("fma", CD_VECTOR, CD_VECTOR);
        code.astore(poly);
      }
      code.aload(poly).aload(r).aload(r); // p.mul(r.mul(r)).add(r).add(1f)
      fv("mul", CD_VECTOR);
      fv("mul", CD_VECTOR);
      code.aload(r);
      fv("add", CD_VECTOR);
      code.fconst_1();
      fv("add", CD_float);
      code.astore(poly);
      int ni = ref();
      int h = ref();
      code.aload(nn).getstatic(CD_OPS, "F2I", CD_OPS_CONVERSION).iconst_0()
          .invokevirtual(CD_FV, "convert", MethodTypeDesc.of(CD_VECTOR, CD_OPS_CONVERSION, CD_int))
          .checkcast(CD_INTV).astore(ni);
      code.aload(ni).getstatic(CD_OPS, "ASHR", CD_OPS_BINARY).iconst_1()
          .invokevirtual(CD_INTV, "lanewise", MethodTypeDesc.of(CD_INTV, CD_OPS_BINARY, CD_int)).astore(h);
      int y = ref();
      code.aload(poly).aload(h);
      powerOfTwo();
      fv("mul", CD_VECTOR);
      code.aload(ni).aload(h).invokevirtual(CD_INTV, "sub", MethodTypeDesc.of(CD_INTV, CD_VECTOR));
      powerOfTwo();
      fv("mul", CD_VECTOR);
      code.astore(y);
      if (form != VMath.EXP) { // q = 1 / (y + 1); y = w < 0 ? y q : q; then v y unless a sigmoid
        int q = ref();
        code.aload(one).aload(y).fconst_1();
        fv("add", CD_float);
        fv("div", CD_VECTOR);
        code.astore(q);
        code.aload(q).aload(y).aload(q);
        fv("mul", CD_VECTOR);
        code.aload(w).getstatic(CD_OPS, "LT", CD_OPS_COMPARISON).fconst_0()
            .invokevirtual(CD_FV, "compare", MethodTypeDesc.of(CD_MASK, CD_OPS_COMPARISON, CD_float));
        fv("blend", CD_VECTOR, CD_MASK);
        code.astore(y);
        if (form != VMath.SIGMOID) {
          code.aload(v).aload(y);
          fv("mul", CD_VECTOR);
          code.astore(y);
        }
      }
      code.aload(y);
    }

    /** The declared type of a VectorOperators field (ADD, MUL, MAX and MIN are Associative). */
    private static ClassDesc operatorType(String op) {
      return op.equals("SUB") || op.equals("DIV") ? CD_OPS_BINARY : CD_OPS_ASSOCIATIVE;
    }

    private static String binaryOperator(BinaryOp op) {
      return switch (op) {
        case ADD -> "ADD";
        case SUB -> "SUB";
        case MUL -> "MUL";
        case DIV -> "DIV";
        case MAXIMUM -> "MAX";
        case MINIMUM -> "MIN";
        default -> throw new IllegalStateException("not a program op: " + op);
      };
    }

    /** Leaves the step's float on the stack, as eager's scalar kernel computes it. */
    private void scalarStep(ElementwiseProgram.Step step, int[] scalar) {
      switch (step) {
        case ElementwiseProgram.BinaryStep b -> {
          code.fload(scalar[b.a()]).fload(scalar[b.b()]);
          switch (b.op()) {
            case ADD -> code.fadd();
            case SUB -> code.fsub();
            case MUL -> code.fmul();
            case DIV -> code.fdiv();
            case MAXIMUM -> code.invokestatic(CD_MATH, "max", MethodTypeDesc.of(CD_float, CD_float, CD_float));
            case MINIMUM -> code.invokestatic(CD_MATH, "min", MethodTypeDesc.of(CD_float, CD_float, CD_float));
            default -> throw new IllegalStateException("not a program op: " + b.op());
          }
        }
        case ElementwiseProgram.UnaryStep u -> {
          int x = scalar[u.x()];
          switch (u.op()) {
            case NEG -> code.fload(x).fneg();
            case ABS -> code.fload(x).invokestatic(CD_MATH, "abs", MethodTypeDesc.of(CD_float, CD_float));
            case SQRT -> code.fload(x).f2d().invokestatic(CD_MATH, "sqrt", MethodTypeDesc.of(CD_double, CD_double))
                .d2f();
            case SQUARE -> code.fload(x).fload(x).fmul();
            case RECIPROCAL -> code.fconst_1().fload(x).fdiv();
            case RELU -> code.fload(x).fconst_0()
                .invokestatic(CD_MATH, "max", MethodTypeDesc.of(CD_float, CD_float, CD_float));
            case LEAKY_RELU -> { // v > 0 ? v : p * v
              Label negative = code.newLabel();
              Label done = code.newLabel();
              code.fload(x).fconst_0().fcmpl().ifle(negative).fload(x).goto_(done);
              code.labelBinding(negative);
              code.loadConstant((float) u.param()).fload(x).fmul();
              code.labelBinding(done);
            }
            // the scalar kernel's double-precision definition, rounded once: eager's tail
            case EXP, SIGMOID, SILU, GELU_TANH -> code.getstatic(CD_UNARY_OP, u.op().name(), CD_UNARY_OP).fload(x).f2d()
                .loadConstant((double) (float) u.param())
                .invokestatic(CD_SCALAR, "apply", MethodTypeDesc.of(CD_double, CD_UNARY_OP, CD_double, CD_double)).d2f();
            default -> throw new IllegalStateException("not a register op: " + u.op());
          }
        }
      }
    }
  }
}
