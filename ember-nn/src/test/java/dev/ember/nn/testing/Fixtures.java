package dev.ember.nn.testing;

import dev.ember.tensor.DType;
import dev.ember.tensor.Tensor;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Reads the reference tensors written by the fixture scripts beside the test resources: blocks of
 * {@code tensor <name> <ndim> <dims...>} followed by one line of values, as float64 tensors.
 */
public final class Fixtures {
  private Fixtures() {}

  public static LinkedHashMap<String, Tensor> read(Class<?> owner, String resource) {
    try (InputStream in = owner.getResourceAsStream(resource)) {
      if (in == null) throw new IllegalStateException("fixture not found: " + resource);
      BufferedReader r = new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8));
      LinkedHashMap<String, Tensor> out = new LinkedHashMap<>();
      String header;
      while ((header = r.readLine()) != null) {
        if (header.isBlank()) continue;
        String[] h = header.trim().split(" ");
        if (!h[0].equals("tensor")) throw new IllegalStateException(resource + ": expected 'tensor', got " + header);
        int nd = Integer.parseInt(h[2]);
        int[] shape = new int[nd];
        long n = 1;
        for (int i = 0; i < nd; i++) n *= shape[i] = Integer.parseInt(h[3 + i]);
        String line = r.readLine();
        String[] vs = line == null || line.isBlank() ? new String[0] : line.trim().split(" ");
        if (vs.length != n) throw new IllegalStateException(resource + ": " + h[1] + " has " + vs.length + " values, shape needs " + n);
        double[] v = new double[vs.length];
        for (int i = 0; i < v.length; i++) v[i] = Double.parseDouble(vs[i]);
        // a 0-d entry (a scalar buffer such as num_batches_tracked) stays 0-d
        out.put(h[1], nd == 0 ? Tensor.scalar(v[0], DType.F64) : Tensor.of(v, shape));
      }
      return out;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** The entries whose names start with {@code prefix + "."}, with the prefix removed. */
  public static LinkedHashMap<String, Tensor> under(Map<String, Tensor> all, String prefix) {
    LinkedHashMap<String, Tensor> out = new LinkedHashMap<>();
    for (var e : all.entrySet()) {
      if (e.getKey().startsWith(prefix + ".")) out.put(e.getKey().substring(prefix.length() + 1), e.getValue());
    }
    return out;
  }
}
