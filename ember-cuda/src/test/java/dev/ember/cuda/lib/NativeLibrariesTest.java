package dev.ember.cuda.lib;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class NativeLibrariesTest {
  @TempDir Path tmp;

  private Path dir(String name) throws IOException {
    return Files.createDirectories(tmp.resolve(name));
  }

  @Test
  void searchesTheOverrideThenCudaHomeThenLdLibraryPathInThatOrder() throws IOException {
    Path override = dir("override");
    Path home = dir("cuda");
    Path lib64 = Files.createDirectories(home.resolve("lib64"));
    Path ld = dir("ld");
    List<Path> path = NativeLibraries.searchPath(Map.of("EMBER_CUDA_LIBRARY_PATH", override.toString(),
        "CUDA_HOME", home.toString(), "LD_LIBRARY_PATH", ld + ":" + tmp.resolve("missing")), null, tmp);
    assertEquals(List.of(override, lib64, ld), path.subList(0, 3));
    assertFalse(path.contains(tmp.resolve("missing")), "folders that do not exist are left out");
  }

  @Test
  void theSystemPropertyComesFirst() throws IOException {
    Path prop = dir("prop");
    Path env = dir("env");
    List<Path> path = NativeLibraries.searchPath(Map.of("EMBER_CUDA_LIBRARY_PATH", env.toString()),
        prop.toString(), tmp);
    assertEquals(List.of(prop, env), path.subList(0, 2));
  }

  @Test
  void findsPythonWheelsNvidiaLibFolders() throws IOException {
    Path venv = dir("venv");
    Path lib = Files.createDirectories(venv.resolve("lib/python3.12/site-packages/nvidia/cu13/lib"));
    List<Path> path = NativeLibraries.searchPath(Map.of("VIRTUAL_ENV", venv.toString()), null, tmp);
    assertTrue(path.contains(lib), path.toString());
  }

  @Test
  void findTakesTheHighestMajorVersionInTheFirstFolderHoldingOne() throws IOException {
    Path a = dir("a");
    Path b = dir("b");
    Files.createFile(a.resolve("libnvrtc.so.12"));
    Files.createFile(a.resolve("libnvrtc.so.13"));
    Files.createFile(a.resolve("libnvrtc-builtins.so.13.0"));
    Files.createFile(b.resolve("libnvrtc.so.14"));
    NativeLibraries libs = new NativeLibraries(List.of(a, b));
    assertEquals(a.resolve("libnvrtc.so.13"), libs.find("nvrtc").orElseThrow());
    Files.createFile(b.resolve("libcublasLt.so"));
    assertEquals(b.resolve("libcublasLt.so"), libs.find("cublasLt").orElseThrow());
    assertTrue(libs.find("cudnn").isEmpty());
  }

  @Test
  void aMissingLibrarySaysWhatAndWhereItLooked() throws IOException {
    Path a = dir("a");
    NativeLibraries libs = new NativeLibraries(List.of(a));
    CudaUnavailableException e = assertThrows(CudaUnavailableException.class,
        () -> libs.load("nvrtc-does-not-exist", null, "NVRTC"));
    assertTrue(e.getMessage().contains("libnvrtc-does-not-exist.so"), e.getMessage());
    assertTrue(e.getMessage().contains(a.toString()), e.getMessage());
    assertTrue(e.getMessage().contains("EMBER_CUDA_LIBRARY_PATH"), e.getMessage());
  }
}
