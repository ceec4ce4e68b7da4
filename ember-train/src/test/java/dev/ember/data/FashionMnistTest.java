package dev.ember.data;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.sun.net.httpserver.HttpServer;
import dev.ember.tensor.DType;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class FashionMnistTest {
  @TempDir Path tmp;
  private HttpServer server;

  @AfterEach
  void stop() {
    if (server != null) server.stop(0);
  }

  /** Small stand-ins for the four upstream .gz files: 12 training and 5 test images. */
  static Map<String, byte[]> smallFiles() {
    return Map.of("train-images-idx3-ubyte.gz", IdxFiles.gzip(IdxFiles.images(12)),
        "train-labels-idx1-ubyte.gz", IdxFiles.gzip(IdxFiles.labels(12)),
        "t10k-images-idx3-ubyte.gz", IdxFiles.gzip(IdxFiles.images(5)),
        "t10k-labels-idx1-ubyte.gz", IdxFiles.gzip(IdxFiles.labels(5)));
  }

  static Map<String, String> hashes(Map<String, byte[]> files) throws Exception {
    Map<String, String> out = new HashMap<>();
    for (var e : files.entrySet()) {
      out.put(e.getKey(), HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(e.getValue())));
    }
    return out;
  }

  /** Serves {@code files} on 127.0.0.1 under /fm/; counts requests. */
  URI serve(Map<String, byte[]> files, AtomicInteger requests) throws IOException {
    server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
    server.createContext("/fm/", ex -> {
      requests.incrementAndGet();
      byte[] body = files.get(ex.getRequestURI().getPath().substring("/fm/".length()));
      if (body == null) {
        ex.sendResponseHeaders(404, -1);
      } else {
        ex.sendResponseHeaders(200, body.length);
        try (OutputStream out = ex.getResponseBody()) {
          out.write(body);
        }
      }
      ex.close();
    });
    server.start();
    return URI.create("http://127.0.0.1:" + server.getAddress().getPort() + "/fm/");
  }

  static void fill(Path dir, boolean gz) throws IOException {
    Files.createDirectories(dir);
    for (String f : FashionMnist.FILES) Files.write(dir.resolve(gz ? f + ".gz" : f), new byte[] {1});
  }

  FashionMnist.Sources sources(Map<String, String> env, URI base, Map<String, String> sha) {
    return new FashionMnist.Sources(env, tmp.resolve("home"), tmp.resolve("system"), base, sha);
  }

  @Test
  void searchesGivenDirThenEmberDataThenCacheThenSystem() throws Exception {
    URI nowhere = URI.create("http://127.0.0.1:9/");
    Path given = tmp.resolve("given"), data = tmp.resolve("data"), xdg = tmp.resolve("xdg");
    Path cache = tmp.resolve("home/.cache/ember/fashion-mnist"), system = tmp.resolve("system");
    fill(system, true);
    var plain = sources(Map.of(), nowhere, FashionMnist.SHA256);
    assertEquals(system, FashionMnist.locate(null, plain));
    fill(cache, false);
    assertEquals(cache, FashionMnist.locate(null, plain));
    fill(data.resolve("fashion-mnist"), true);
    var withData = sources(Map.of("EMBER_DATA", data.toString()), nowhere, FashionMnist.SHA256);
    assertEquals(data.resolve("fashion-mnist"), FashionMnist.locate(null, withData));
    fill(data, true);
    assertEquals(data, FashionMnist.locate(null, withData));
    fill(given, true);
    assertEquals(given, FashionMnist.locate(given, withData));

    var withXdg = sources(Map.of("XDG_CACHE_HOME", xdg.toString()), nowhere, FashionMnist.SHA256);
    assertEquals(xdg.resolve("ember/fashion-mnist"), withXdg.cacheDir());
    assertEquals(system, FashionMnist.locate(null, withXdg));
    Files.delete(cache.resolve("t10k-labels-idx1-ubyte"));
    assertEquals(List.of("t10k-labels-idx1-ubyte[.gz]"), FashionMnist.missing(cache));
  }

  @Test
  void downloadsMissingFilesVerifiedIntoTheCache() throws Exception {
    Map<String, byte[]> files = smallFiles();
    AtomicInteger requests = new AtomicInteger();
    var src = sources(Map.of(), serve(files, requests), hashes(files));
    Path cache = FashionMnist.locate(null, src);
    assertEquals(src.cacheDir(), cache);
    assertEquals(4, requests.get());
    for (var e : files.entrySet()) assertArrayEquals(e.getValue(), Files.readAllBytes(cache.resolve(e.getKey())));
    try (Stream<Path> s = Files.list(cache)) {
      assertEquals(4, s.count(), "no temporary files left");
    }
    assertEquals(cache, FashionMnist.locate(null, src));
    assertEquals(4, requests.get(), "found in the cache the second time");

    FashionMnist.Split split = FashionMnist.load(cache);
    assertEquals(12, split.train().size());
    assertEquals(5, split.test().size());
    assertArrayEquals(new int[] {12, 1, 28, 28}, split.train().inputs().shape());
    assertEquals(DType.I64, split.test().targets().dtype());
    assertEquals(((4 * 7 + 30) % 256) / 255f, (float) split.test().inputs().getDouble(4, 0, 1, 2), 0f);
    assertArrayEquals(new long[] {0, 1, 2, 3, 4}, split.test().targets().toLongArray());
  }

  @Test
  void aKilledDownloadsPartFileIsRemovedByTheNextDownloadButAFreshOneIsNot() throws Exception {
    Map<String, byte[]> files = smallFiles();
    var src = sources(Map.of(), serve(files, new AtomicInteger()), hashes(files));
    Path cache = src.cacheDir();
    Files.createDirectories(cache);
    Path stale = Files.write(cache.resolve(".train-images-idx3-ubyte.gz.8123456.part"), new byte[100]);
    Files.setLastModifiedTime(stale, java.nio.file.attribute.FileTime.fromMillis(
        System.currentTimeMillis() - FashionMnist.STALE_PART.toMillis() - 60_000));
    Path inProgress = Files.write(cache.resolve(".t10k-images-idx3-ubyte.gz.9123456.part"), new byte[100]);
    Path unrelated = Files.write(cache.resolve("notes.part"), new byte[1]);
    Files.setLastModifiedTime(unrelated, Files.getLastModifiedTime(stale));
    assertEquals(cache, FashionMnist.locate(null, src));
    assertFalse(Files.exists(stale), "a .part file untouched for 10 minutes is a killed download's");
    assertTrue(Files.exists(inProgress), "another process may be writing a fresh one");
    assertTrue(Files.exists(unrelated), "only the download's own temporary files are removed");
  }

  @Test
  void aCorruptDownloadIsDeletedAndReported() throws Exception {
    Map<String, byte[]> files = new HashMap<>(smallFiles());
    Map<String, String> sha = hashes(files);
    files.put("t10k-images-idx3-ubyte.gz", IdxFiles.gzip(IdxFiles.images(6)));
    var src = sources(Map.of(), serve(files, new AtomicInteger()), sha);
    var e = assertThrows(DatasetUnavailableException.class, () -> FashionMnist.locate(null, src));
    var cause = assertInstanceOf(DataFormatException.class, e.getCause());
    assertTrue(cause.getMessage().contains("with SHA-256 "), cause.getMessage());
    assertTrue(cause.getMessage().endsWith(", expected " + sha.get("t10k-images-idx3-ubyte.gz") + " (corrupt or changed download)"),
        cause.getMessage());
    assertFalse(Files.exists(src.cacheDir().resolve("t10k-images-idx3-ubyte.gz")));
    try (Stream<Path> s = Files.list(src.cacheDir())) {
      assertTrue(s.noneMatch(p -> p.getFileName().toString().endsWith(".part")), "temporary file removed");
    }
  }

  @Test
  void aFolderTheCallerNamesIsUsedOrRejectedNeverReplaced() throws Exception {
    Path system = tmp.resolve("system"), given = tmp.resolve("given");
    fill(system, true); // a complete folder further down the search order must not stand in
    var src = sources(Map.of(), URI.create("http://127.0.0.1:9/"), FashionMnist.SHA256);
    var e = assertThrows(DatasetUnavailableException.class, () -> FashionMnist.locate(given, src));
    assertEquals("fashion-mnist: " + given + ": no such folder", e.getMessage());
    Files.createDirectories(given);
    Files.write(given.resolve("train-labels-idx1-ubyte.gz"), new byte[] {1});
    Files.write(given.resolve("t10k-images-idx3-ubyte"), new byte[] {1});
    assertEquals("no train-images-idx3-ubyte(.gz), t10k-labels-idx1-ubyte(.gz) there", FashionMnist.problem(given));
    e = assertThrows(DatasetUnavailableException.class, () -> FashionMnist.locate(given, src));
    assertEquals("fashion-mnist: " + given + ": no train-images-idx3-ubyte(.gz), t10k-labels-idx1-ubyte(.gz) there", e.getMessage());
    Path file = Files.writeString(tmp.resolve("notes.txt"), "x");
    assertEquals("not a folder", FashionMnist.problem(file));
    fill(given, false);
    assertEquals(null, FashionMnist.problem(given));
    assertEquals(given, FashionMnist.locate(given, src));
  }

  @Test
  void offlineFailureSaysWhatToInstallOrWhereToPutFilesAndLeavesNoFolder() throws Exception {
    int port;
    try (ServerSocket s = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
      port = s.getLocalPort(); // closed again: nothing listens there
    }
    var src = sources(Map.of(), URI.create("http://127.0.0.1:" + port + "/"), FashionMnist.SHA256);
    var e = assertThrows(FashionMnist.DownloadFailedException.class, () -> FashionMnist.locate(null, src));
    assertEquals("127.0.0.1:" + port, e.host());
    assertEquals("connection refused", e.reason());
    String m = e.getMessage();
    assertTrue(m.startsWith("fashion-mnist: could not download Fashion-MNIST from 127.0.0.1:" + port + ": connection refused ("), m);
    assertTrue(m.contains("searched: " + src.cacheDir() + " (no such folder); "), m);
    assertFalse(Files.exists(tmp.resolve("home")), "the folders made for the download are removed again");
    assertTrue(m.contains("apt-get install dataset-fashion-mnist"), m);
    assertTrue(m.contains("train-images-idx3-ubyte.gz, train-labels-idx1-ubyte.gz, t10k-images-idx3-ubyte.gz, "
        + "t10k-labels-idx1-ubyte.gz (raw or .gz) in " + src.cacheDir()), m);
    assertTrue(m.contains("EMBER_DATA"), m);

    var notFound = sources(Map.of(), serve(Map.of(), new AtomicInteger()), FashionMnist.SHA256);
    var e404 = assertThrows(FashionMnist.DownloadFailedException.class, () -> FashionMnist.locate(null, notFound));
    assertTrue(e404.reason().startsWith("HTTP 404 for http://127.0.0.1:"), e404.reason());
    assertTrue(e404.getMessage().contains("HTTP 404"), e404.getMessage());
  }

  @Test
  void loadRejectsLabelsOutsideTheClasses() throws Exception {
    Path dir = Files.createDirectories(tmp.resolve("bad"));
    Files.write(dir.resolve("train-images-idx3-ubyte"), IdxFiles.images(3));
    Files.write(dir.resolve("train-labels-idx1-ubyte"), IdxFiles.idx(new int[] {3}, new byte[] {1, 10, 2}));
    Files.write(dir.resolve("t10k-images-idx3-ubyte"), IdxFiles.images(2));
    Files.write(dir.resolve("t10k-labels-idx1-ubyte"), IdxFiles.labels(3));
    var e = assertThrows(DataFormatException.class, () -> FashionMnist.load(dir));
    assertEquals("fashion-mnist: " + dir.resolve("train-labels-idx1-ubyte") + ": at byte 9: label 1 is 10, not a class in 0..9",
        e.getMessage());
    Files.write(dir.resolve("train-labels-idx1-ubyte"), IdxFiles.labels(3));
    e = assertThrows(DataFormatException.class, () -> FashionMnist.load(dir));
    assertEquals("fashion-mnist: " + dir.resolve("t10k-labels-idx1-ubyte") + ": at byte 4: holds 3 labels but "
        + "t10k-images-idx3-ubyte holds 2 images", e.getMessage());
  }

  /** The sum of the original byte values of pixels scaled by 1/255. */
  private static long sum255(float[] px) {
    long s = 0;
    for (float v : px) s += Math.round(v * 255);
    return s;
  }

  @Test
  void readsTheDebianPackageFiles() throws Exception {
    assumeTrue(Files.isDirectory(FashionMnist.DEBIAN_DIR) && FashionMnist.missing(FashionMnist.DEBIAN_DIR).isEmpty(),
        "dataset-fashion-mnist is not installed");
    FashionMnist.load(FashionMnist.DEBIAN_DIR); // once to warm up the JIT
    long t0 = System.nanoTime();
    FashionMnist.Split split = FashionMnist.load(FashionMnist.DEBIAN_DIR);
    long ms = (System.nanoTime() - t0) / 1_000_000;
    System.out.println("FashionMnistTest: loaded the Debian files in " + ms + " ms");
    assertEquals(60000, split.train().size());
    assertEquals(10000, split.test().size());
    assertArrayEquals(new int[] {60000, 1, 28, 28}, split.train().inputs().shape());
    long[] hist = new long[10];
    for (long y : split.train().targets().toLongArray()) hist[(int) y]++;
    assertArrayEquals(new long[] {6000, 6000, 6000, 6000, 6000, 6000, 6000, 6000, 6000, 6000}, hist);
    long[] testHist = new long[10];
    for (long y : split.test().targets().toLongArray()) testHist[(int) y]++;
    assertArrayEquals(new long[] {1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000}, testHist);
    // reference values from numpy over the same .gz files (gzip + np.frombuffer, offset 16 / 8):
    // the first labels, the raw pixel sum of train image 0 and of each whole split, pixels of a row
    assertArrayEquals(new long[] {9, 0, 0, 3, 0, 2, 7, 2, 5, 5}, split.train().targets().slice(0, 0, 10, 1).toLongArray());
    assertArrayEquals(new long[] {9, 2, 1, 1, 6, 1, 4, 6, 5, 7}, split.test().targets().slice(0, 0, 10, 1).toLongArray());
    assertEquals(76247, sum255(split.train().inputs().select(0, 0).toFloatArray()));
    assertEquals(3431114169L, sum255(split.train().inputs().toFloatArray()));
    assertEquals(573469082L, sum255(split.test().inputs().toFloatArray()));
    assertArrayEquals(new float[] {0, 0, 0, 193 / 255f, 228 / 255f, 218 / 255f},
        split.train().inputs().select(0, 0).select(0, 0).select(0, 10).slice(0, 10, 16, 1).toFloatArray());
    float[] px = split.train().inputs().toFloatArray();
    float min = 1, max = 0;
    for (float v : px) {
      min = Math.min(min, v);
      max = Math.max(max, v);
    }
    assertEquals(0f, min);
    assertEquals(1f, max);
  }
}
