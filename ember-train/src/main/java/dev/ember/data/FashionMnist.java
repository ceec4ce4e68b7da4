package dev.ember.data;

import dev.ember.tensor.Tensor;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.security.DigestOutputStream;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

/**
 * Zalando's Fashion-MNIST (https://github.com/zalandoresearch/fashion-mnist): 28x28 grey images
 * of 10 kinds of clothing, 60,000 for training and 10,000 for testing, in four IDX files.
 *
 * <p>{@link #locate} finds a folder holding the four files (each raw or {@code .gz}). A folder the
 * caller names is used as is or rejected ({@link #problem} says why), never replaced by another.
 * Without one it searches, in order, {@code $EMBER_DATA} (and its {@code fashion-mnist} subfolder),
 * the user cache ({@code $XDG_CACHE_HOME/ember/fashion-mnist}, default
 * {@code ~/.cache/ember/fashion-mnist}), and the Debian package's folder
 * {@code /usr/share/datasets/fashion-mnist} ({@code apt-get install dataset-fashion-mnist}). When none
 * has them, the {@code .gz} files are downloaded from the data set's official location into the user
 * cache, each written to a temporary file, checked against its SHA-256 and only then renamed into
 * place; a failed download leaves no folder it created behind ({@link DownloadFailedException}).
 *
 * <p>{@link #load} reads a folder into train and test {@link TensorDataset}s: images F32
 * {@code [N, 1, 28, 28]} in [0, 1], labels I64 {@code [N]} in 0..9.
 */
public final class FashionMnist {
  private FashionMnist() {}

  /** The four files, without the optional {@code .gz}. */
  public static final List<String> FILES = List.of("train-images-idx3-ubyte", "train-labels-idx1-ubyte",
      "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte");

  /** The class names, by label. */
  public static final List<String> CLASSES = List.of("T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal",
      "Shirt", "Sneaker", "Bag", "Ankle boot");

  /** Where the upstream project publishes the {@code .gz} files. */
  public static final URI DEFAULT_BASE_URL = URI.create("http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/");

  /** The Debian package's folder ({@code apt-get install dataset-fashion-mnist}). */
  public static final Path DEBIAN_DIR = Path.of("/usr/share/datasets/fashion-mnist");

  /**
   * SHA-256 of the upstream {@code .gz} files. Computed with {@code sha256sum} from the files of the
   * Debian package dataset-fashion-mnist in /usr/share/datasets/fashion-mnist, which ships the
   * upstream files unchanged.
   */
  public static final Map<String, String> SHA256 = Map.of(
      "train-images-idx3-ubyte.gz", "b0564c3eedabfbf835052cff8503ea422014ce006caf5b757f851416ee8300c7",
      "train-labels-idx1-ubyte.gz", "0ae29f65d86684f32d1b9c85147786c547b9c6aebcaf235f0400a0cce308b056",
      "t10k-images-idx3-ubyte.gz", "cc1d090a38ace84dfa1aa66e3ada7c336ef481a96936906477e6dd344da56eaa",
      "t10k-labels-idx1-ubyte.gz", "8d3605d196f4be44669e46906da9733c8131fef761fdbfec72c424d5222f1a05");

  /** Largest download accepted per file (the largest upstream file is about 26 MB). */
  static final long MAX_DOWNLOAD_BYTES = 64L << 20;

  private static final String FORMAT = "fashion-mnist";

  /** Train and test sets. */
  public record Split(TensorDataset train, TensorDataset test) {}

  /**
   * The data set is not on this machine and downloading it failed: {@link #host()} is where from,
   * {@link #reason()} says why in a few words ("connection refused", "HTTP 404", ...).
   */
  public static final class DownloadFailedException extends DatasetUnavailableException {
    private final String host;
    private final String reason;

    DownloadFailedException(String host, String reason, String message, Throwable cause) {
      super(message, cause);
      this.host = host;
      this.reason = reason;
    }

    /** The host (and port, if the URL names one) of the download URL. */
    public String host() {
      return host;
    }

    /** Why the download failed, in a few words. */
    public String reason() {
      return reason;
    }
  }

  /**
   * Where {@link #locate(Path, Sources)} looks and downloads from: the environment (for
   * {@code EMBER_DATA} and {@code XDG_CACHE_HOME}), the user's home, the system folder, the base
   * URL and the expected SHA-256 of each {@code .gz} file. Tests point these at temporary folders
   * and a local server.
   */
  public record Sources(Map<String, String> env, Path home, Path systemDir, URI baseUrl, Map<String, String> sha256) {
    public Sources {
      Objects.requireNonNull(env, "Sources: env is null");
      Objects.requireNonNull(home, "Sources: home is null");
      Objects.requireNonNull(systemDir, "Sources: systemDir is null");
      Objects.requireNonNull(baseUrl, "Sources: baseUrl is null");
      Objects.requireNonNull(sha256, "Sources: sha256 is null");
      for (String f : FILES) {
        if (!sha256.containsKey(f + ".gz")) throw new IllegalArgumentException("Sources: no SHA-256 for " + f + ".gz");
      }
      env = Map.copyOf(env);
      sha256 = Map.copyOf(sha256);
    }

    /** This process's environment and home, the Debian folder, the upstream URL and hashes. */
    public static Sources defaults() {
      return new Sources(System.getenv(), Path.of(System.getProperty("user.home")), DEBIAN_DIR, DEFAULT_BASE_URL, SHA256);
    }

    /** The user cache folder: {@code $XDG_CACHE_HOME/ember/fashion-mnist}, default {@code ~/.cache/ember/fashion-mnist}. */
    public Path cacheDir() {
      String xdg = env.get("XDG_CACHE_HOME");
      Path base = xdg != null && !xdg.isBlank() && Path.of(xdg).isAbsolute() ? Path.of(xdg) : home.resolve(".cache");
      return base.resolve("ember").resolve("fashion-mnist");
    }

    /**
     * The folders {@link #locate(Path, Sources)} searches when no folder is given, in order, after
     * {@code dataOption} if it is not null.
     */
    public List<Path> candidates(Path dataOption) {
      List<Path> out = new ArrayList<>();
      if (dataOption != null) out.add(dataOption);
      String data = env.get("EMBER_DATA");
      if (data != null && !data.isBlank()) {
        out.add(Path.of(data));
        out.add(Path.of(data).resolve("fashion-mnist"));
      }
      out.add(cacheDir());
      out.add(systemDir);
      return out;
    }
  }

  /** {@link #locate(Path, Sources)} with {@link Sources#defaults()}. */
  public static Path locate(Path dataOption) throws IOException {
    return locate(dataOption, Sources.defaults());
  }

  /**
   * {@code dataOption} if it is given and holds the four files; without it, the first folder of
   * {@link Sources#candidates} holding them, or, if none does, {@link Sources#cacheDir()} after
   * downloading the missing {@code .gz} files into it.
   *
   * @param dataOption a folder the user named (may be null): used as is, never replaced by another
   * @throws DatasetUnavailableException when {@code dataOption} lacks the files (the message says
   *     what, see {@link #problem}), or a {@link DownloadFailedException} when nothing is found and
   *     the download fails, saying what to install or put where
   */
  public static Path locate(Path dataOption, Sources sources) throws IOException {
    if (dataOption != null) {
      String problem = problem(dataOption);
      if (problem != null) throw new DatasetUnavailableException("fashion-mnist: " + dataOption + ": " + problem, null);
      return dataOption;
    }
    List<String> searched = new ArrayList<>();
    for (Path dir : sources.candidates(null)) {
      String problem = problem(dir);
      if (problem == null) return dir;
      searched.add(dir + " (" + problem + ")");
    }
    Path cache = sources.cacheDir();
    try {
      download(cache, sources);
    } catch (IOException | RuntimeException e) {
      String host = sources.baseUrl().getAuthority();
      String reason = reason(e);
      throw new DownloadFailedException(host, reason, "fashion-mnist: could not download Fashion-MNIST from " + host + ": "
          + reason + " (" + sources.baseUrl() + ").\n  searched: " + String.join("; ", searched)
          + "\n  hint: install the Debian package (apt-get install dataset-fashion-mnist), or put "
          + String.join(", ", FILES.stream().map(f -> f + ".gz").toList()) + " (raw or .gz) in " + cache
          + " or in a folder named by the environment variable EMBER_DATA, or pass that folder", e);
    }
    List<String> still = missing(cache);
    if (!still.isEmpty()) throw new IllegalStateException("fashion-mnist: download finished but " + cache + " lacks " + still);
    return cache;
  }

  /**
   * Why {@code dir} cannot serve as the data folder ({@code no such folder}, {@code not a folder},
   * {@code no train-images-idx3-ubyte(.gz) there}), or null when it holds all four files.
   */
  public static String problem(Path dir) {
    if (!Files.exists(dir)) return "no such folder";
    if (!Files.isDirectory(dir)) return "not a folder";
    List<String> lacking = lacking(dir, "(.gz)");
    return lacking.isEmpty() ? null : "no " + String.join(", ", lacking) + " there";
  }

  /**
   * A download failure in a few words: the network's own words where the JDK gives them
   * ({@code ConnectException}'s message is often null, its cause says "Connection refused").
   */
  static String reason(Throwable e) {
    String deepest = null;
    boolean connect = false;
    for (Throwable t = e; t != null; t = t.getCause()) {
      if (t instanceof java.net.UnknownHostException) return "unknown host " + t.getMessage() + " (no network or no DNS?)";
      if (t instanceof java.net.http.HttpConnectTimeoutException) return "connection timed out";
      if (t instanceof java.net.http.HttpTimeoutException) return "no answer in time";
      if (t instanceof DataFormatException) return t.getMessage();
      connect |= t instanceof java.net.ConnectException;
      if (t.getMessage() != null && !t.getMessage().isBlank()) deepest = t.getMessage();
    }
    if (deepest == null) return connect ? "connection refused" : e.getClass().getSimpleName();
    boolean capitalised = deepest.length() > 1 && Character.isLowerCase(deepest.charAt(1)); // "Connection refused", not "HTTP 404"
    return capitalised ? Character.toLowerCase(deepest.charAt(0)) + deepest.substring(1) : deepest;
  }

  /** The files of {@link #FILES} that {@code dir} lacks in both raw and .gz form. */
  static List<String> missing(Path dir) {
    return lacking(dir, "[.gz]");
  }

  /** The files of {@link #FILES} that {@code dir} lacks in both raw and .gz form, each followed by {@code suffix}. */
  private static List<String> lacking(Path dir, String suffix) {
    List<String> out = new ArrayList<>();
    for (String f : FILES) if (find(dir, f) == null) out.add(f + suffix);
    return out;
  }

  /** {@code dir/name} if it is a file, else {@code dir/name.gz} if that is, else null. */
  private static Path find(Path dir, String name) {
    Path raw = dir.resolve(name);
    if (Files.isRegularFile(raw)) return raw;
    Path gz = dir.resolve(name + ".gz");
    return Files.isRegularFile(gz) ? gz : null;
  }

  private static void download(Path cache, Sources sources) throws IOException {
    List<Path> created = new ArrayList<>(); // the folders made here, deepest first: removed again on failure
    for (Path p = cache.toAbsolutePath(); p != null && !Files.exists(p); p = p.getParent()) created.add(p);
    Files.createDirectories(cache);
    removeStalePartFiles(cache);
    try (HttpClient client = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(20))
        .followRedirects(HttpClient.Redirect.NORMAL).build()) {
      for (String f : FILES) {
        if (find(cache, f) != null) continue;
        String name = f + ".gz";
        fetch(client, sources.baseUrl().resolve(name), cache.resolve(name), sources.sha256().get(name));
      }
    } catch (IOException | RuntimeException e) {
      for (Path p : created) {
        try {
          Files.deleteIfExists(p);
        } catch (IOException notEmpty) {
          break; // it holds something now (another process's download): keep it and its parents
        }
      }
      throw e;
    }
  }

  /** A download writes its {@code .part} file continuously; one untouched this long was left by a killed process. */
  static final Duration STALE_PART = Duration.ofMinutes(10);

  /** Deletes the {@code .FILE.gz.*.part} files of downloads that were killed (untouched for {@link #STALE_PART}). */
  static void removeStalePartFiles(Path cache) throws IOException {
    long cutoff = System.currentTimeMillis() - STALE_PART.toMillis();
    try (var files = Files.newDirectoryStream(cache, ".*.gz.*.part")) {
      for (Path f : files) {
        if (Files.isRegularFile(f) && Files.getLastModifiedTime(f).toMillis() < cutoff) Files.deleteIfExists(f);
      }
    }
  }

  /** Downloads {@code url} to {@code target} through a temporary file, renamed only when the SHA-256 matches. */
  static void fetch(HttpClient client, URI url, Path target, String sha256) throws IOException {
    System.err.println("fashion-mnist: downloading " + url + " to " + target);
    Path tmp = Files.createTempFile(target.getParent(), "." + target.getFileName() + ".", ".part");
    try {
      HttpResponse<InputStream> resp;
      try {
        resp = client.send(HttpRequest.newBuilder(url).timeout(Duration.ofMinutes(5)).GET().build(),
            HttpResponse.BodyHandlers.ofInputStream());
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IOException("interrupted while downloading " + url, e);
      }
      MessageDigest md = sha256();
      long n;
      try (InputStream in = resp.body(); OutputStream out = new DigestOutputStream(Files.newOutputStream(tmp), md)) {
        if (resp.statusCode() != 200) throw new IOException("HTTP " + resp.statusCode() + " for " + url);
        n = copyCapped(in, out, url);
      }
      String got = HexFormat.of().formatHex(md.digest());
      if (!got.equalsIgnoreCase(sha256)) {
        throw DataFormatException.at(FORMAT, target, -1, "downloaded " + n + " bytes from " + url + " with SHA-256 " + got
            + ", expected " + sha256 + " (corrupt or changed download)");
      }
      Files.move(tmp, target, StandardCopyOption.ATOMIC_MOVE);
    } finally {
      Files.deleteIfExists(tmp);
    }
  }

  private static long copyCapped(InputStream in, OutputStream out, URI url) throws IOException {
    byte[] buf = new byte[1 << 16];
    long n = 0;
    for (int r; (r = in.read(buf)) >= 0; ) {
      n += r;
      if (n > MAX_DOWNLOAD_BYTES) throw new IOException(url + " sent more than " + MAX_DOWNLOAD_BYTES + " bytes");
      out.write(buf, 0, r);
    }
    return n;
  }

  private static MessageDigest sha256() {
    try {
      return MessageDigest.getInstance("SHA-256");
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("SHA-256 is missing from this JDK", e);
    }
  }

  /** {@link #load(Path)} of {@link #locate(Path)}: finds (or downloads) the data, then reads it. */
  public static Split load() throws IOException {
    return load(locate(null));
  }

  /**
   * Reads the four files of {@code dir} (raw or .gz; the training images are decoded on a second
   * thread while the rest is read): images must be {@code [N, 28, 28]}, labels {@code [N]} in 0..9.
   */
  public static Split load(Path dir) throws IOException {
    Map<String, Path> files = new LinkedHashMap<>();
    for (String f : FILES) {
      Path p = find(dir, f);
      if (p == null) {
        throw new DatasetUnavailableException("fashion-mnist: " + dir + " has no " + f + " (raw or .gz); it needs "
            + String.join(", ", FILES) + "; hint: FashionMnist.locate finds or downloads them", null);
      }
      files.put(f, p);
    }
    try (ExecutorService pool = Executors.newSingleThreadExecutor(r -> {
      Thread t = new Thread(r, "ember-fashion-mnist-reader");
      t.setDaemon(true);
      return t;
    })) {
      Future<Tensor> trainImages = pool.submit(() -> images(files.get(FILES.get(0))));
      Tensor trainLabels = labels(files.get(FILES.get(1)));
      Tensor testImages = images(files.get(FILES.get(2)));
      Tensor testLabels = labels(files.get(FILES.get(3)));
      Tensor train = join(trainImages);
      checkCount(files.get(FILES.get(0)), train, files.get(FILES.get(1)), trainLabels);
      checkCount(files.get(FILES.get(2)), testImages, files.get(FILES.get(3)), testLabels);
      return new Split(new TensorDataset(train, trainLabels), new TensorDataset(testImages, testLabels));
    }
  }

  private static Tensor images(Path file) throws IOException {
    Tensor t = Idx.readImages(file);
    if (t.size(2) != 28 || t.size(3) != 28) {
      throw DataFormatException.at(FORMAT, file, 8, "expected images [N, 28, 28], got dims [" + t.size(0) + ", " + t.size(2)
          + ", " + t.size(3) + "]");
    }
    return t;
  }

  private static Tensor labels(Path file) throws IOException {
    IdxArray a = Idx.read(file);
    Tensor t = a.toLabels();
    long[] y = t.toLongArray();
    for (int i = 0; i < y.length; i++) {
      if (y[i] >= CLASSES.size()) {
        throw DataFormatException.at(FORMAT, file, 8 + i, "label " + i + " is " + y[i] + ", not a class in 0..9");
      }
    }
    return t;
  }

  private static void checkCount(Path imageFile, Tensor images, Path labelFile, Tensor labels) throws DataFormatException {
    if (images.size(0) != labels.size(0)) {
      throw DataFormatException.at(FORMAT, labelFile, 4, "holds " + labels.size(0) + " labels but " + imageFile.getFileName()
          + " holds " + images.size(0) + " images");
    }
  }

  private static Tensor join(Future<Tensor> f) throws IOException {
    try {
      return f.get();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IOException("fashion-mnist: interrupted while reading", e);
    } catch (ExecutionException e) {
      Throwable c = e.getCause();
      if (c instanceof IOException io) throw io;
      if (c instanceof RuntimeException r) throw r;
      if (c instanceof Error err) throw err;
      throw new UncheckedIOException(new IOException(c));
    }
  }
}
