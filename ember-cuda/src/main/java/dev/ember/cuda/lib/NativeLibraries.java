package dev.ember.cuda.lib;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.SymbolLookup;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * Finds the CUDA libraries of the user's installation. The folders searched, in order:
 * <ol>
 *   <li>{@code EMBER_CUDA_LIBRARY_PATH} (a {@code :}-separated list; system property
 *       {@code ember.cuda.libraryPath} wins over it);
 *   <li>{@code CUDA_HOME}, {@code CUDA_PATH}: their {@code lib64}, {@code lib} and
 *       {@code targets/x86_64-linux/lib};
 *   <li>{@code LD_LIBRARY_PATH};
 *   <li>the usual places: {@code /usr/local/cuda/lib64}, {@code /usr/local/nvidia/lib64},
 *       {@code /usr/lib/x86_64-linux-gnu}, {@code /usr/lib64}, {@code /usr/lib/wsl/lib};
 *   <li>the {@code nvidia/*}{@code /lib} folders of Python installations (PyTorch's pip wheels bring cuBLAS and
 *       NVRTC there): {@code VIRTUAL_ENV}, {@code CONDA_PREFIX}, {@code /opt/*}{@code /.venv},
 *       {@code /usr/local/lib/python3*}, {@code ~/.local/lib/python3*}.
 * </ol>
 * A library is a file named {@code lib<name>.so.<major>} (the highest major found in the first folder that has
 * one) or {@code lib<name>.so}; the driver, {@code libcuda.so.1}, is tried through the system's loader first.
 */
public final class NativeLibraries {
  private final List<Path> folders;

  NativeLibraries(List<Path> folders) {
    this.folders = List.copyOf(folders);
  }

  /** The search path made from this process's environment and system properties. */
  public static NativeLibraries fromEnvironment() {
    return new NativeLibraries(searchPath(System.getenv(), System.getProperty("ember.cuda.libraryPath"),
        Path.of(System.getProperty("user.home", "/root"))));
  }

  /** The folders searched, in order (existing ones only). */
  public List<Path> folders() {
    return folders;
  }

  static List<Path> searchPath(Map<String, String> env, String property, Path home) {
    Set<Path> out = new LinkedHashSet<>();
    addList(out, property);
    addList(out, env.get("EMBER_CUDA_LIBRARY_PATH"));
    for (String var : List.of("CUDA_HOME", "CUDA_PATH")) {
      String root = env.get(var);
      if (root == null || root.isBlank()) continue;
      Path r = Path.of(root);
      out.add(r.resolve("lib64"));
      out.add(r.resolve("lib"));
      out.add(r.resolve("targets/x86_64-linux/lib"));
    }
    addList(out, env.get("LD_LIBRARY_PATH"));
    for (String p : List.of("/usr/local/cuda/lib64", "/usr/local/cuda/targets/x86_64-linux/lib",
        "/usr/local/nvidia/lib64", "/usr/local/nvidia/lib", "/usr/lib/x86_64-linux-gnu", "/usr/lib64",
        "/usr/lib/wsl/lib")) {
      out.add(Path.of(p));
    }
    List<Path> pythonRoots = new ArrayList<>();
    for (String var : List.of("VIRTUAL_ENV", "CONDA_PREFIX")) {
      String v = env.get(var);
      if (v != null && !v.isBlank()) pythonRoots.add(Path.of(v, "lib"));
    }
    for (Path venv : glob(Path.of("/opt"), null)) pythonRoots.add(venv.resolve(".venv/lib"));
    pythonRoots.add(Path.of("/usr/local/lib"));
    pythonRoots.add(Path.of("/usr/lib"));
    pythonRoots.add(home.resolve(".local/lib"));
    for (Path lib : pythonRoots) {
      for (Path py : glob(lib, Pattern.compile("python3.*"))) {
        for (String site : List.of("site-packages", "dist-packages")) {
          Path nvidia = py.resolve(site).resolve("nvidia");
          for (Path pkg : glob(nvidia, null)) {
            out.add(pkg.resolve("lib"));
          }
        }
      }
    }
    List<Path> existing = new ArrayList<>();
    for (Path p : out) {
      if (Files.isDirectory(p)) existing.add(p);
    }
    return existing;
  }

  private static void addList(Set<Path> out, String list) {
    if (list == null) return;
    for (String s : list.split(":")) {
      if (!s.isBlank()) out.add(Path.of(s.trim()));
    }
  }

  /** The subfolders of {@code dir} whose names match {@code pattern} (all when null), sorted by name. */
  private static List<Path> glob(Path dir, Pattern pattern) {
    List<Path> out = new ArrayList<>();
    if (!Files.isDirectory(dir)) return out;
    try (DirectoryStream<Path> ds = Files.newDirectoryStream(dir)) {
      for (Path p : ds) {
        if (Files.isDirectory(p) && (pattern == null || pattern.matcher(p.getFileName().toString()).matches())) {
          out.add(p);
        }
      }
    } catch (IOException | SecurityException e) {
      return out;
    }
    out.sort(Comparator.naturalOrder());
    return out;
  }

  /**
   * The file of library {@code name} ({@code "nvrtc"} for {@code libnvrtc.so.13}) in the first folder holding one:
   * the highest numbered {@code lib<name>.so.<major>}, else {@code lib<name>.so}.
   */
  public Optional<Path> find(String name) {
    Pattern versioned = Pattern.compile(Pattern.quote("lib" + name + ".so.") + "(\\d+)");
    for (Path dir : folders) {
      Path best = null;
      int bestMajor = -1;
      for (Path f : files(dir)) {
        var m = versioned.matcher(f.getFileName().toString());
        if (m.matches()) {
          int major = Integer.parseInt(m.group(1));
          if (major > bestMajor) {
            bestMajor = major;
            best = f;
          }
        }
      }
      if (best != null) return Optional.of(best);
      Path plain = dir.resolve("lib" + name + ".so");
      if (Files.isRegularFile(plain)) return Optional.of(plain);
    }
    return Optional.empty();
  }

  /**
   * Loads the helper libraries beside {@code library} that it opens by name at run time: NVRTC opens
   * {@code libnvrtc-builtins.so.<version>} with the system loader, which does not look in a pip wheel's folder;
   * once loaded here, that name resolves to the library already in the process. Failures are left for the
   * library's own error to report.
   */
  static void preloadSiblings(Path library) {
    String base = library.getFileName().toString().replaceFirst("\\.so.*$", "");
    Pattern builtins = Pattern.compile(Pattern.quote(base + "-builtins.so.") + "[0-9.]+");
    for (Path f : files(library.getParent())) {
      if (builtins.matcher(f.getFileName().toString()).matches()) {
        try {
          SymbolLookup.libraryLookup(f, Arena.global());
        } catch (IllegalArgumentException e) {
          // NVRTC reports a missing builtins library itself, by name
        }
      }
    }
  }

  /**
   * Loads library {@code name} as {@link #load} finds it, after loading its {@code parts} (sibling libraries it opens
   * by name when first needed, as cuDNN 9's {@code libcudnn_ops.so.9}) from the same folder, in the order given:
   * once in the process, a later open by that name resolves to them even where the folder is not on the system
   * loader's path. A part that is absent is left for the library to report when it needs it.
   *
   * @throws CudaUnavailableException naming the library and the folders searched when it is not found, or the file
   *     that could not be loaded
   */
  public SymbolLookup loadWithParts(String name, List<String> parts, String what) {
    Optional<Path> file = find(name);
    if (file.isEmpty()) {
      throw new CudaUnavailableException("CUDA: " + what + " (lib" + name + ".so) was not found. Searched: " + folders
          + ". It is optional (PyTorch's pip wheels bring it: nvidia/cudnn/lib); point EMBER_CUDA_LIBRARY_PATH at"
          + " the folder holding it.");
    }
    Path lib = file.get();
    String suffix = lib.getFileName().toString().substring(("lib" + name).length()); // ".so.9" or ".so"
    for (String part : parts) {
      Path p = lib.resolveSibling("lib" + part + suffix);
      if (!Files.isRegularFile(p)) continue;
      try {
        SymbolLookup.libraryLookup(p, Arena.global());
      } catch (IllegalArgumentException e) {
        throw new CudaUnavailableException("CUDA: cannot load " + p + " (part of " + what + "): " + e.getMessage());
      }
    }
    try {
      return SymbolLookup.libraryLookup(lib, Arena.global());
    } catch (IllegalArgumentException e) {
      throw new CudaUnavailableException("CUDA: cannot load " + lib + " (" + what + "): " + e.getMessage());
    }
  }

  private static List<Path> files(Path dir) {
    List<Path> out = new ArrayList<>();
    try (DirectoryStream<Path> ds = Files.newDirectoryStream(dir, "lib*.so*")) {
      for (Path p : ds) out.add(p);
    } catch (IOException | SecurityException e) {
      return out;
    }
    out.sort(Comparator.naturalOrder());
    return out;
  }

  /**
   * Loads library {@code name}: first by {@code systemName} through the system's loader when given (the driver's
   * {@code libcuda.so.1} is installed with the driver, not the toolkit), then the file {@link #find} finds.
   *
   * @throws CudaUnavailableException naming the library and the folders searched when neither works
   */
  public SymbolLookup load(String name, String systemName, String what) {
    String systemError = null;
    if (systemName != null) {
      try {
        return SymbolLookup.libraryLookup(systemName, Arena.global());
      } catch (IllegalArgumentException e) {
        systemError = e.getMessage();
      }
    }
    Optional<Path> file = find(name);
    if (file.isPresent()) {
      try {
        return SymbolLookup.libraryLookup(file.get(), Arena.global());
      } catch (IllegalArgumentException e) {
        throw new CudaUnavailableException("CUDA: cannot load " + file.get() + " (" + what + "): " + e.getMessage());
      }
    }
    throw new CudaUnavailableException("CUDA: " + what + " (lib" + name + ".so) was not found"
        + (systemName == null ? "" : "; the system loader has no " + systemName
            + (systemError == null ? "" : " (" + systemError + ")"))
        + ". Searched: " + folders + ". Install the NVIDIA driver and CUDA (or `pip install nvidia-cuda-nvrtc"
        + " nvidia-cublas`), or point EMBER_CUDA_LIBRARY_PATH or CUDA_HOME at the folder holding it.");
  }
}
