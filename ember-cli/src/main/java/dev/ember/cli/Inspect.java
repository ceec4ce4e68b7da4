package dev.ember.cli;

import dev.ember.nn.io.Npy;
import dev.ember.nn.io.NpyException;
import dev.ember.nn.io.Npz;
import dev.ember.nn.io.SafeTensors;
import dev.ember.nn.io.SafeTensorsException;
import dev.ember.nn.io.SafeTensorsFile;
import dev.ember.tensor.Storage;
import dev.ember.tensor.Tensor;
import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;
import java.nio.file.AccessDeniedException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * {@code ember inspect FILE}: each tensor's name, dtype, shape, element count and statistics (min,
 * max, mean, std, NaN and Inf counts), and a safetensors file's metadata. The format comes from
 * the file's first bytes ({@code \x93NUMPY} for .npy, a zip signature for .npz), else from the
 * extension; a file that is neither is tried as safetensors, which has no magic. A bad, missing or
 * unreadable file prints one line, {@code ember inspect: FILE: problem}, and exits 2.
 */
final class Inspect {
  private Inspect() {}

  /** A tensor file format the command reads: the readers of later formats (IDX) join this list. */
  enum Format {
    NPY, NPZ, SAFETENSORS;

    static Format detect(Path file) throws IOException {
      byte[] head = new byte[6];
      int n;
      try (InputStream in = Files.newInputStream(file)) {
        n = in.readNBytes(head, 0, head.length);
      }
      if (n == 6 && (head[0] & 0xff) == 0x93 && head[1] == 'N' && head[2] == 'U' && head[3] == 'M' && head[4] == 'P'
          && head[5] == 'Y') {
        return NPY;
      }
      if (n >= 4 && head[0] == 'P' && head[1] == 'K' && (head[2] == 3 || head[2] == 5)) return NPZ;
      String name = file.getFileName().toString().toLowerCase(Locale.ROOT);
      if (name.endsWith(".npy")) return NPY;
      if (name.endsWith(".npz")) return NPZ;
      return SAFETENSORS;
    }
  }

  static int run(String[] args, PrintStream out, PrintStream err) {
    if (args.length == 0) {
      err.println("usage: ./ember inspect FILE    (safetensors, .npy or .npz)");
      return 2;
    }
    if (args[0].startsWith("-") && args[0].length() > 1) {
      err.println("ember inspect: unknown option " + args[0] + " (see ./ember inspect --help)");
      return 2;
    }
    if (args.length > 1) {
      err.println("ember inspect: unexpected argument '" + args[1] + "'; inspect reads one file (see ./ember inspect --help)");
      return 2;
    }
    Path file = Path.of(args[0]);
    boolean guessed = false;
    try {
      if (!Files.isRegularFile(file)) {
        err.println("ember inspect: " + file + ": " + (Files.exists(file) ? "not a regular file" : "no such file"));
        return 2;
      }
      Format format = Format.detect(file);
      guessed = format == Format.SAFETENSORS && !file.toString().toLowerCase(Locale.ROOT).endsWith(".safetensors");
      Map<String, Tensor> tensors;
      Map<String, String> metadata = Map.of();
      switch (format) {
        case NPY -> {
          tensors = new LinkedHashMap<>();
          tensors.put(file.getFileName().toString().replaceFirst("\\.npy$", ""), Npy.load(file));
        }
        case NPZ -> tensors = Npz.load(file);
        case SAFETENSORS -> {
          SafeTensorsFile st = SafeTensors.read(file);
          tensors = st.tensors();
          metadata = st.metadata();
        }
        default -> throw new IllegalStateException(format.toString());
      }
      print(out, file, format, tensors, metadata);
      return 0;
    } catch (NoSuchFileException e) {
      err.println("ember inspect: " + file + ": no such file");
    } catch (AccessDeniedException e) {
      err.println("ember inspect: " + file + ": permission denied");
    } catch (IOException e) {
      // the readers' messages already name the format and the file; keep just the problem
      String m = e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage();
      String prefix = file + ": ";
      int at = m.indexOf(prefix);
      String problem = at >= 0 ? m.substring(at + prefix.length()) : m;
      if (exceedsHeap(e)) {
        // a valid file refused from its header because its tensors need more heap than there is: the problem says how much
        err.println("ember inspect: " + file + ": its tensors do not fit in this JVM's heap: " + problem
            + "; raise it with EMBER_JAVA_OPTS=-Xmx...");
      } else {
        err.println("ember inspect: " + file + ": "
            + (guessed ? "not a safetensors, .npy or .npz file (read as safetensors: " + problem + ")" : problem));
      }
    } catch (OutOfMemoryError e) {
      // the readers refuse files that cannot fit from their headers, so this is a real shortage met later
      long size = file.toFile().length();
      err.println("ember inspect: " + file + ": ran out of heap memory (max "
          + Runtime.getRuntime().maxMemory() / (1 << 20) + " MiB) while reading or summarizing its tensors, which need at"
          + " least " + size + " bytes (the file's size" + (size > 0 ? ", " + (size + (1 << 20) - 1) / (1 << 20) + " MiB" : "")
          + "); raise it with EMBER_JAVA_OPTS=-Xmx...");
    }
    return 2;
  }

  /** Whether a reader refused a valid file because its tensors need more heap than the JVM has. */
  private static boolean exceedsHeap(IOException e) {
    return e instanceof NpyException n && n.exceedsHeap()
        || e instanceof SafeTensorsException s && s.reason() == SafeTensorsException.Reason.EXCEEDS_HEAP;
  }

  private static void print(PrintStream out, Path file, Format format, Map<String, Tensor> tensors,
      Map<String, String> metadata) throws IOException {
    long total = 0;
    for (Tensor t : tensors.values()) total += t.numel();
    out.printf(Locale.ROOT, "%s: %s, %d tensor%s, %d elements, %d bytes%n", file, format.toString().toLowerCase(Locale.ROOT),
        tensors.size(), tensors.size() == 1 ? "" : "s", total, Files.size(file));
    for (Map.Entry<String, String> m : metadata.entrySet()) out.println("  metadata " + m.getKey() + " = " + m.getValue());
    List<String[]> rows = new ArrayList<>();
    rows.add(new String[] {"name", "dtype", "shape", "numel", "min", "max", "mean", "std", "nan", "inf"});
    for (Map.Entry<String, Tensor> e : tensors.entrySet()) {
      Tensor t = e.getValue();
      Stats s = Stats.of(t);
      rows.add(new String[] {e.getKey(), t.dtype().torchName(), java.util.Arrays.toString(t.shape()),
          Long.toString(t.numel()), num(s.min), num(s.max), num(s.mean), num(s.std), Long.toString(s.nan),
          Long.toString(s.inf)});
    }
    int[] width = new int[rows.get(0).length];
    for (String[] r : rows) for (int i = 0; i < r.length; i++) width[i] = Math.max(width[i], r[i].length());
    for (String[] r : rows) {
      StringBuilder sb = new StringBuilder();
      for (int i = 0; i < r.length; i++) {
        boolean left = i < 3;
        String cell = left ? r[i] + " ".repeat(width[i] - r[i].length()) : " ".repeat(width[i] - r[i].length()) + r[i];
        sb.append(i == 0 ? "" : "  ").append(cell);
      }
      out.println(sb.toString().stripTrailing());
    }
  }

  private static String num(double v) {
    if (Double.isNaN(v)) return "-";
    return String.format(Locale.ROOT, "%.6g", v);
  }

  /** Statistics over the finite values (NaN and +-Inf are counted, not averaged), in one pass. */
  record Stats(double min, double max, double mean, double std, long nan, long inf) {
    static Stats of(Tensor t) {
      Tensor c = t.isContiguous() ? t : t.contiguous();
      Storage st = c.storage();
      int off = c.offset();
      long n = 0, nan = 0, inf = 0;
      double min = Double.POSITIVE_INFINITY, max = Double.NEGATIVE_INFINITY, mean = 0, m2 = 0;
      for (long i = 0; i < c.numel(); i++) {
        double v = st.getDouble(off + (int) i);
        if (Double.isNaN(v)) {
          nan++;
        } else if (Double.isInfinite(v)) {
          inf++;
        } else { // Welford: stable for large tensors
          n++;
          double d = v - mean;
          mean += d / n;
          m2 += d * (v - mean);
          min = Math.min(min, v);
          max = Math.max(max, v);
        }
      }
      if (n == 0) return new Stats(Double.NaN, Double.NaN, Double.NaN, Double.NaN, nan, inf);
      return new Stats(min, max, mean, n > 1 ? Math.sqrt(m2 / (n - 1)) : 0, nan, inf);
    }
  }
}
