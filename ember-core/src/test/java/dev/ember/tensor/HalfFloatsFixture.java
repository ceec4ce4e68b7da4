package dev.ember.tensor;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.zip.GZIPInputStream;

/**
 * PyTorch's conversions, read from {@code halffloats/fixture.bin.gz} (format: the header of
 * {@code make_fixture.py} beside it). Loaded once and shared by the tests.
 */
public final class HalfFloatsFixture {
  /** One 16-bit type: decode[i] = float32 bits of pattern i; encoded[k] = the 16 bits of inputs[k]. */
  public record Section(String name, int[] decode, int[] inputs, short[] encoded) {
    /** The inputs as floats. */
    public float[] inputFloats() {
      float[] f = new float[inputs.length];
      for (int k = 0; k < f.length; k++) f[k] = Float.intBitsToFloat(inputs[k]);
      return f;
    }
  }

  public static final Section BF16;
  public static final Section F16;

  static {
    try (InputStream raw = HalfFloatsFixture.class.getResourceAsStream("/dev/ember/tensor/halffloats/fixture.bin.gz")) {
      if (raw == null) throw new IllegalStateException("halffloats/fixture.bin.gz is not on the test class path");
      ByteBuffer b = ByteBuffer.wrap(new GZIPInputStream(raw).readAllBytes()).order(ByteOrder.LITTLE_ENDIAN);
      if (b.getInt() != 0x46484D45) throw new IllegalStateException("fixture: bad magic (want EMHF)");
      if (b.getInt() != 1 || b.getInt() != 2) throw new IllegalStateException("fixture: want version 1, 2 sections");
      BF16 = section(b, "BF16");
      F16 = section(b, "F16 ");
      if (b.hasRemaining()) throw new IllegalStateException("fixture: " + b.remaining() + " trailing bytes");
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private HalfFloatsFixture() {}

  private static Section section(ByteBuffer b, String name) {
    byte[] tag = new byte[4];
    b.get(tag);
    if (!new String(tag, java.nio.charset.StandardCharsets.US_ASCII).equals(name)) {
      throw new IllegalStateException("fixture: want section " + name);
    }
    int[] decode = new int[b.getInt()];
    for (int i = 0; i < decode.length; i++) decode[i] = b.getInt();
    int ne = b.getInt();
    int[] inputs = new int[ne];
    for (int i = 0; i < ne; i++) inputs[i] = b.getInt();
    short[] encoded = new short[ne];
    for (int i = 0; i < ne; i++) encoded[i] = b.getShort();
    return new Section(name.strip(), decode, inputs, encoded);
  }
}
