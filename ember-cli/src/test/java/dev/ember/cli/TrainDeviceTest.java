package dev.ember.cli;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.data.FashionLike;
import dev.ember.tensor.Device;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Random;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code ember train --device} on the test class path's fake device (fake:0 and fake:1, computing with the CPU
 * kernels): the run is the CPU run to the byte, its start line and report name the device, and a device that is
 * not there is one clear line.
 */
class TrainDeviceTest {
  @TempDir static Path data;

  @BeforeAll
  static void writeData() throws IOException {
    Random rnd = new Random(1);
    FashionLike.write(data, "train", 300, rnd);
    FashionLike.write(data, "t10k", 100, rnd);
  }

  private static TrainCommandTest.Result train(Path out, String... more) {
    String[] base = {"train", "--data", data.toString(), "--model", "mlp", "--epochs", "1", "--batch-size", "32",
        "--out", out.toString(), "--quiet"};
    String[] args = java.util.Arrays.copyOf(base, base.length + more.length);
    System.arraycopy(more, 0, args, base.length, more.length);
    return TrainCommandTest.call(null, args);
  }

  @Test
  void aRunOnTheFakeDeviceIsTheCpuRunToTheByte(@TempDir Path tmp) throws IOException {
    TrainCommandTest.Result cpu = train(tmp.resolve("cpu"));
    assertEquals(0, cpu.code(), cpu.toString());
    TrainCommandTest.Result fake = train(tmp.resolve("fake"), "--device", "fake:0");
    assertEquals(0, fake.code(), fake.toString());
    assertTrue(fake.out().lines().findFirst().orElseThrow().contains(", seed 0, fake:0 -> "), fake.out());
    String[] a = cpu.out().split("\n");
    String[] b = fake.out().split("\n");
    assertEquals(a[a.length - 1], b[b.length - 1], "test accuracy");
    assertArrayEquals(Files.readAllBytes(tmp.resolve("cpu/model.safetensors")),
        Files.readAllBytes(tmp.resolve("fake/model.safetensors")));
    assertTrue(Files.readString(tmp.resolve("fake/report.html")).contains("fake:0 (" + Device.parse("fake:0").backend()
        .description() + ")"), "the report names the device and what computes behind it");
  }

  @Test
  void onADeviceBatchesGoAheadThroughNonBlockingCopiesUnlessNoPinMemory(@TempDir Path tmp) throws IOException {
    long before = dev.ember.testing.FakeDevice.nonBlockingCopies(dev.ember.testing.FakeDevice.DEVICE);
    TrainCommandTest.Result pinned = train(tmp.resolve("pinned"), "--device", "fake:0");
    assertEquals(0, pinned.code(), pinned.toString());
    long copies = dev.ember.testing.FakeDevice.nonBlockingCopies(dev.ember.testing.FakeDevice.DEVICE) - before;
    assertTrue(copies >= 2 * (300 / 32), "the training batches (input and target) went non-blocking: " + copies);
    long mid = dev.ember.testing.FakeDevice.nonBlockingCopies(dev.ember.testing.FakeDevice.DEVICE);
    TrainCommandTest.Result plain = train(tmp.resolve("plain"), "--device", "fake:0", "--no-pin-memory");
    assertEquals(0, plain.code(), plain.toString());
    assertEquals(mid, dev.ember.testing.FakeDevice.nonBlockingCopies(dev.ember.testing.FakeDevice.DEVICE),
        "--no-pin-memory copies each batch as its step starts");
    assertArrayEquals(Files.readAllBytes(tmp.resolve("plain/model.safetensors")),
        Files.readAllBytes(tmp.resolve("pinned/model.safetensors")));
  }

  @Test
  void aDeviceThatIsNotThereIsOneClearLine(@TempDir Path tmp) {
    // ember-cuda is on the CLI's class path; where no driver is found (CI, this machine) its reason is the message's
    TrainCommandTest.Result cuda = train(tmp.resolve("a"), "--device", "cuda");
    org.junit.jupiter.api.Assumptions.assumeTrue(Device.count("cuda") == 0, "this machine has a CUDA device");
    assertEquals(2, cuda.code());
    assertTrue(cuda.err().startsWith("ember train: device cuda:0 requested but no cuda device was found: cuda:0 is not"
        + " available: "), cuda.err());
    assertEquals(1, cuda.err().lines().count(), cuda.err());
    IllegalArgumentException none = org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class,
        () -> TrainCommand.requireAvailable(Device.of("tpu", 0)));
    assertEquals("device tpu:0 requested but no backend serves device type 'tpu' (device types here: cpu, cuda, fake)",
        none.getMessage());
    TrainCommandTest.Result seven = train(tmp.resolve("b"), "--device", "fake:7");
    assertEquals(2, seven.code());
    assertEquals("ember train: device fake:7 requested but only 2 fake devices found (fake:0..fake:1)\n", seven.err());
    TrainCommandTest.Result bad = train(tmp.resolve("c"), "--device", "gpu!");
    assertEquals(2, bad.code());
    assertEquals("ember train: --device must be cpu, cuda or cuda:N, got 'gpu!'\n", bad.err());
    assertTrue(Files.notExists(tmp.resolve("a")), "no run folder for a run that cannot start");
  }

  @Test
  void versionListsTheDevices() {
    TrainCommandTest.Result r = TrainCommandTest.call(null, "--version");
    assertEquals(0, r.code(), r.toString());
    org.junit.jupiter.api.Assumptions.assumeTrue(Device.count("cuda") == 0, "this machine has a CUDA device");
    assertTrue(r.out().contains("\ndevices: cpu, cuda (no device found), fake:0, fake:1\n"), r.out());
  }
}
