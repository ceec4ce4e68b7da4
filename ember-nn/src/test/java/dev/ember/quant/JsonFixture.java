package dev.ember.quant;

import dev.ember.nn.io.Json;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;

/** The quantization tests' torch fixtures: a JSON resource beside the test class, and its number lists. */
public final class JsonFixture {
  private JsonFixture() {}

  /** The JSON object in resource {@code name} of {@code owner}'s package (NaN and infinities as literals). */
  @SuppressWarnings("unchecked")
  public static Map<String, Object> load(Class<?> owner, String name) throws IOException, Json.SyntaxError {
    try (InputStream in = owner.getResourceAsStream(name)) {
      if (in == null) throw new IOException("no resource " + name + " beside " + owner.getName());
      return (Map<String, Object>) Json.parsePlain(new String(in.readAllBytes(), StandardCharsets.UTF_8),
          Json.NonFinite.LITERALS);
    }
  }

  /** A JSON list of numbers as floats. */
  public static float[] floats(Object o) {
    List<?> l = (List<?>) o;
    float[] f = new float[l.size()];
    for (int i = 0; i < f.length; i++) f[i] = (float) ((Number) l.get(i)).doubleValue();
    return f;
  }
}
