package dev.ember.nn.io;

import dev.ember.tensor.Check;
import dev.ember.tensor.Tensor;
import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.channels.Channels;
import java.nio.file.Path;
import java.util.Collections;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import java.util.zip.CRC32;
import java.util.zip.CheckedOutputStream;
import java.util.zip.ZipEntry;
import java.util.zip.ZipException;
import java.util.zip.ZipFile;
import java.util.zip.ZipOutputStream;

/**
 * Named tensors in NumPy's {@code .npz} format (numpy.savez / savez_compressed / numpy.load): a zip
 * archive whose members {@code <name>.npy} are {@link Npy} streams, stored or deflated.
 *
 * <p>Reading checks the archive before it inflates anything: every member is a {@code .npy} and
 * appears once, and no member declares more bytes than deflate can produce from its compressed
 * size (at most 1032:1, so a few kilobytes cannot claim gigabytes). Each member's .npy header is
 * then validated against its declared size before the tensor is allocated, and a member that
 * inflates to more or fewer bytes than declared is rejected. Failures throw {@link NpyException}.
 */
public final class Npz {
  private Npz() {}

  /** The best deflate ratio is about 1032:1; a member declaring more is lying about its size. */
  static final long MAX_DEFLATE_RATIO = 1032;

  /** Writes {@code tensors} uncompressed, as numpy.savez. */
  public static void save(Map<String, Tensor> tensors, Path file) throws IOException {
    save(tensors, file, false);
  }

  /** Writes {@code tensors}, deflated when {@code compressed} (numpy.savez_compressed), in map order. */
  public static void save(Map<String, Tensor> tensors, Path file, boolean compressed) throws IOException {
    if (tensors == null) throw Check.fail("npz.save", "tensors is null");
    if (file == null) throw Check.fail("npz.save", "file is null");
    for (Map.Entry<String, Tensor> e : tensors.entrySet()) {
      if (e.getKey() == null || e.getKey().isEmpty()) throw Check.fail("npz.save", "a tensor name is null or empty");
      if (e.getValue() == null) throw Check.fail("npz.save", "tensor '" + e.getKey() + "' is null");
    }
    AtomicFiles.write(file, ch -> {
      ZipOutputStream zip = new ZipOutputStream(new BufferedOutputStream(Channels.newOutputStream(ch), 1 << 16));
      for (Map.Entry<String, Tensor> e : tensors.entrySet()) {
        ZipEntry entry = new ZipEntry(e.getKey() + ".npy");
        if (compressed) {
          entry.setMethod(ZipEntry.DEFLATED);
        } else { // a stored entry needs its size and CRC before its bytes: one pass to count, one to write
          CRC32 crc = new CRC32();
          long size = Npy.write(e.getValue(), new CheckedOutputStream(OutputStream.nullOutputStream(), crc));
          entry.setMethod(ZipEntry.STORED);
          entry.setSize(size);
          entry.setCompressedSize(size);
          entry.setCrc(crc.getValue());
        }
        zip.putNextEntry(entry);
        Npy.write(e.getValue(), zip);
        zip.closeEntry();
      }
      zip.finish();
      zip.flush();
    });
  }

  /** The tensors of {@code file}, by name (the member name without {@code .npy}), in archive order. */
  public static LinkedHashMap<String, Tensor> load(Path file) throws IOException {
    ZipFile zf;
    try {
      zf = new ZipFile(file.toFile());
    } catch (ZipException e) {
      throw NpyException.archive(file, "not a valid zip archive (" + e.getMessage() + ")");
    }
    try (zf) {
      var entries = Collections.list(zf.entries());
      Set<String> seen = new HashSet<>();
      for (ZipEntry e : entries) {
        String name = e.getName();
        if (e.isDirectory() || !name.endsWith(".npy")) {
          throw new NpyException(file, name, "not a .npy member (an npz holds only .npy arrays)");
        }
        if (!seen.add(name)) throw new NpyException(file, name, "appears twice in the archive");
        if (e.getSize() < 0) throw new NpyException(file, name, "the archive does not declare the member's size");
        long packed = e.getCompressedSize();
        if (e.getMethod() == ZipEntry.DEFLATED && e.getSize() > MAX_DEFLATE_RATIO * Math.max(packed, 0) + 1024) {
          throw new NpyException(file, name, "declares " + e.getSize() + " bytes from " + packed
              + " compressed, more than deflate can produce (corrupt, or a zip bomb)");
        }
      }
      LinkedHashMap<String, Tensor> out = new LinkedHashMap<>();
      for (ZipEntry e : entries) {
        String name = e.getName();
        try (InputStream in = new BufferedInputStream(zf.getInputStream(e), 1 << 16)) {
          out.put(name.substring(0, name.length() - 4), Npy.read(in, e.getSize(), file, name));
        } catch (ZipException ze) {
          throw new NpyException(file, name, "corrupt compressed data (" + ze.getMessage() + ")");
        }
      }
      return out;
    }
  }
}
