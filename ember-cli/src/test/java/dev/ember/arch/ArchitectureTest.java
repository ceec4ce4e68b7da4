package dev.ember.arch;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.backend.cpu.Parallel;
import dev.ember.tensor.Tensor;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.lang.classfile.ClassFile;
import java.lang.classfile.ClassModel;
import java.lang.classfile.constantpool.ClassEntry;
import java.lang.classfile.constantpool.MemberRefEntry;
import java.lang.classfile.constantpool.PoolEntry;
import java.lang.classfile.constantpool.Utf8Entry;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Enumeration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The rules of the backend boundary (issue #34, item 3), checked on the main class files of every module with the
 * JDK's {@code java.lang.classfile} API (ember-cli's test class path holds all of them): a class's references are
 * the classes and members its constant pool names, and the classes named in its descriptors and signatures.
 * Each rule reports every violation as {@code class -> referenced class or member}.
 */
class ArchitectureTest {
  /** The modules' main classes, by module, each class with what it references. */
  private static final Map<String, List<ClassRefs>> MODULES = load();

  /**
   * Classes that keep a reference across the boundary on purpose. StepPhases' {@code --floor} times a
   * read-modify-write pass on the CPU backend's own pool with the Vector API: the memory floor of an optimizer step,
   * which no SPI call measures.
   */
  private static final Set<String> ALLOWED = Set.of("dev.ember.bench.StepPhases");

  private static final String CPU = "dev.ember.backend.cpu.";
  private static final String VECTOR = "jdk.incubator.vector.";
  private static final Set<String> RAW_ARRAYS = Set.of("floats", "doubles", "longs", "ints", "bools", "array");
  private static final List<String> ABOVE_CORE = List.of("dev.ember.nn.", "dev.ember.optim.", "dev.ember.train.",
      "dev.ember.data.", "dev.ember.metrics.", "dev.ember.cli.", "dev.ember.bench.");

  // ------------------------------------------------------------------ the rules

  /** No class outside dev.ember.backend.cpu.. references it: everything else goes through the Backend SPI. */
  static List<String> backendCpuOnlyFromItself(Map<String, List<ClassRefs>> modules) {
    List<String> out = new ArrayList<>();
    for (List<ClassRefs> classes : modules.values()) {
      for (ClassRefs c : classes) {
        if (!c.name.startsWith(CPU)) out.addAll(c.referencesTo(CPU));
      }
    }
    return out;
  }

  /** jdk.incubator.vector is referenced only in dev.ember.backend.cpu.vector. */
  static List<String> vectorApiOnlyInBackendCpuVector(Map<String, List<ClassRefs>> modules) {
    List<String> out = new ArrayList<>();
    for (List<ClassRefs> classes : modules.values()) {
      for (ClassRefs c : classes) {
        if (!c.name.startsWith(CPU + "vector.")) out.addAll(c.referencesTo(VECTOR));
      }
    }
    return out;
  }

  /** ember-nn, ember-train and ember-cli read no raw storage array: tensor ops, or core's TensorData for I/O. */
  static List<String> noRawStorageArraysAboveCore(Map<String, List<ClassRefs>> modules) {
    List<String> out = new ArrayList<>();
    for (String module : List.of("ember-nn", "ember-train", "ember-cli")) {
      for (ClassRefs c : modules.getOrDefault(module, List.of())) {
        for (String m : c.members) {
          int dot = m.lastIndexOf('.');
          if (m.substring(0, dot).equals("dev.ember.tensor.Storage") && RAW_ARRAYS.contains(m.substring(dot + 1))) {
            out.add(c.name + " -> " + m);
          }
        }
      }
    }
    return out;
  }

  /** ember-core references none of the modules above it. */
  static List<String> coreStandsAlone(Map<String, List<ClassRefs>> modules) {
    List<String> out = new ArrayList<>();
    for (ClassRefs c : modules.getOrDefault("ember-core", List.of())) {
      for (String prefix : ABOVE_CORE) out.addAll(c.referencesTo(prefix));
    }
    return out;
  }

  /** ember-nn references no class of ember-train (nor of cli or bench). */
  static List<String> nnBelowTrain(Map<String, List<ClassRefs>> modules) {
    List<String> out = new ArrayList<>();
    for (ClassRefs c : modules.getOrDefault("ember-nn", List.of())) {
      for (String prefix : List.of("dev.ember.train.", "dev.ember.data.", "dev.ember.metrics.", "dev.ember.cli.",
          "dev.ember.bench.")) {
        out.addAll(c.referencesTo(prefix));
      }
    }
    return out;
  }

  // ------------------------------------------------------------------ the tests

  @Test
  void printsEveryViolationOfEveryRule() {
    Map<String, List<String>> all = new LinkedHashMap<>();
    all.put("backend.cpu referenced from outside it", backendCpuOnlyFromItself(MODULES));
    all.put("jdk.incubator.vector outside backend.cpu.vector", vectorApiOnlyInBackendCpuVector(MODULES));
    all.put("raw storage arrays read in nn/train/cli", noRawStorageArraysAboveCore(MODULES));
    all.put("core references an upper module", coreStandsAlone(MODULES));
    all.put("nn references train", nnBelowTrain(MODULES));
    for (var e : all.entrySet()) {
      System.out.println("architecture: " + e.getKey() + ": " + e.getValue().size() + " violation(s)");
      for (String v : e.getValue()) System.out.println("  " + v);
    }
    for (String module : List.of("ember-core", "ember-nn", "ember-train", "ember-cli", "ember-bench")) {
      assertFalse(MODULES.getOrDefault(module, List.of()).isEmpty(), "no class files found for " + module);
    }
  }

  @Test
  void noClassOutsideBackendCpuReferencesIt() {
    assertNone(backendCpuOnlyFromItself(MODULES));
  }

  @Test
  void theVectorApiStaysInBackendCpuVector() {
    assertNone(vectorApiOnlyInBackendCpuVector(MODULES));
  }

  @Test
  void nnTrainAndCliReadNoRawStorageArrays() {
    assertNone(noRawStorageArraysAboveCore(MODULES));
  }

  @Test
  void coreReferencesNoUpperModule() {
    assertNone(coreStandsAlone(MODULES));
  }

  @Test
  void nnReferencesNoTrainClass() {
    assertNone(nnBelowTrain(MODULES));
  }

  /** The rules fail on a class that breaks them: {@link Violator}, read from this test's class files. */
  @Test
  void theRulesCatchAViolator() {
    ClassRefs v = ClassRefs.of(bytes(Violator.class));
    Map<String, List<ClassRefs>> modules = Map.of("ember-core", List.of(v), "ember-nn", List.of(v));
    String name = Violator.class.getName();
    assertEquals(List.of(name + " -> dev.ember.backend.cpu.Parallel.threads"), backendCpuOnlyFromItself(modules)
        .stream().distinct().toList());
    assertEquals(List.of(name + " -> dev.ember.tensor.Storage.floats"), noRawStorageArraysAboveCore(modules));
    assertTrue(coreStandsAlone(modules).contains(name + " -> dev.ember.train.Trainer"), coreStandsAlone(modules)
        .toString());
    assertTrue(nnBelowTrain(modules).contains(name + " -> dev.ember.train.Trainer"));
    assertEquals(List.of(), vectorApiOnlyInBackendCpuVector(modules));
  }

  /** Breaks the rules on purpose (test code: the rules read main code only). */
  @SuppressWarnings("unused")
  static final class Violator {
    dev.ember.train.Trainer trainer;

    int threads(Tensor t) {
      return Parallel.threads() + t.storage().floats().length;
    }
  }

  private static void assertNone(List<String> violations) {
    assertTrue(violations.isEmpty(), violations.size() + " violation(s):\n  " + String.join("\n  ", violations));
  }

  // ------------------------------------------------------------------ reading class files

  /** One class: its name, the classes it references, and the members (owner.name) it references. */
  record ClassRefs(String name, Set<String> classes, Set<String> members) {
    private static final Pattern DESCRIPTOR_CLASS = Pattern.compile("L([\\w/$]+)[;<]");

    static ClassRefs of(byte[] bytes) {
      ClassModel cm = ClassFile.of().parse(bytes);
      Set<String> classes = new TreeSet<>();
      Set<String> members = new TreeSet<>();
      for (PoolEntry e : cm.constantPool()) {
        switch (e) {
          case ClassEntry c -> {
            String n = c.asInternalName();
            if (n.startsWith("[")) descriptorClasses(n, classes);
            else classes.add(n.replace('/', '.'));
          }
          case MemberRefEntry m -> {
            String owner = m.owner().asInternalName();
            if (!owner.startsWith("[")) members.add(owner.replace('/', '.') + "." + m.name().stringValue());
          }
          case Utf8Entry u -> descriptorClasses(u.stringValue(), classes); // descriptors and signatures
          default -> { }
        }
      }
      String self = cm.thisClass().asInternalName().replace('/', '.');
      classes.remove(self);
      return new ClassRefs(self, classes, members);
    }

    private static void descriptorClasses(String s, Set<String> into) {
      if (s.indexOf(';') < 0) return;
      Matcher m = DESCRIPTOR_CLASS.matcher(s);
      while (m.find()) into.add(m.group(1).replace('/', '.'));
    }

    /** {@code name -> member} for each member of a class under {@code prefix}, else {@code name -> class}. */
    List<String> referencesTo(String prefix) {
      if (ALLOWED.contains(name)) return List.of();
      List<String> out = new ArrayList<>();
      Set<String> owners = new TreeSet<>();
      for (String m : members) {
        String owner = m.substring(0, m.lastIndexOf('.'));
        if (owner.startsWith(prefix)) {
          out.add(name + " -> " + m);
          owners.add(owner);
        }
      }
      for (String c : classes) if (c.startsWith(prefix) && !owners.contains(c)) out.add(name + " -> " + c);
      return out;
    }
  }

  private static Map<String, List<ClassRefs>> load() {
    Map<String, List<ClassRefs>> out = new LinkedHashMap<>();
    out.put("ember-core", classesBeside(Tensor.class));
    out.put("ember-nn", classesBeside(dev.ember.nn.Module.class));
    out.put("ember-train", classesBeside(dev.ember.train.Trainer.class));
    out.put("ember-cli", classesBeside(dev.ember.cli.Main.class));
    out.put("ember-bench", classesBeside(dev.ember.bench.Compare.class));
    return out;
  }

  /** Every class in the directory or jar {@code marker} was loaded from. */
  private static List<ClassRefs> classesBeside(Class<?> marker) {
    List<ClassRefs> out = new ArrayList<>();
    try {
      Path where = Path.of(marker.getProtectionDomain().getCodeSource().getLocation().toURI());
      if (Files.isDirectory(where)) {
        try (Stream<Path> files = Files.walk(where)) {
          for (Path p : files.filter(f -> f.toString().endsWith(".class")).sorted().toList()) {
            if (!p.getFileName().toString().equals("module-info.class")) out.add(ClassRefs.of(Files.readAllBytes(p)));
          }
        }
      } else {
        try (JarFile jar = new JarFile(where.toFile())) {
          for (Enumeration<JarEntry> es = jar.entries(); es.hasMoreElements(); ) {
            JarEntry e = es.nextElement();
            if (!e.getName().endsWith(".class") || e.getName().endsWith("module-info.class")) continue;
            try (InputStream in = jar.getInputStream(e)) {
              out.add(ClassRefs.of(in.readAllBytes()));
            }
          }
        }
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } catch (URISyntaxException e) {
      throw new IllegalStateException(e);
    }
    return out;
  }

  private static byte[] bytes(Class<?> c) {
    String resource = "/" + c.getName().replace('.', '/') + ".class";
    try (InputStream in = c.getResourceAsStream(resource)) {
      return in.readAllBytes();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
