package dev.ember.distributed;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.data.Batch;
import dev.ember.data.BatchConfig;
import dev.ember.data.DataLoader;
import dev.ember.data.Sample;
import dev.ember.data.Subset;
import dev.ember.data.TensorDataset;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import org.junit.jupiter.api.Test;

class DistributedSamplerTest {
  /** Every line of sampler_fixture.txt (torch 1.13's DistributedSampler, made by make_sampler_fixture.py). */
  @Test
  void matchesTorchDistributedSampler() throws IOException {
    int lines = 0;
    try (InputStream in = DistributedSamplerTest.class.getResourceAsStream("sampler_fixture.txt");
        BufferedReader r = new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8))) {
      for (String line; (line = r.readLine()) != null; ) {
        if (line.startsWith("#")) continue;
        String[] parts = line.split(":", -1);
        int[] c = Arrays.stream(parts[0].trim().split(" ")).mapToInt(Integer::parseInt).toArray();
        String tail = parts[1].trim();
        int[] want = tail.isEmpty() ? new int[0] : Arrays.stream(tail.split(" ")).mapToInt(Integer::parseInt).toArray();
        DistributedSampler s = new DistributedSampler(c[0], c[1], c[2], c[3] == 1, c[4], c[5] == 1);
        s.setEpoch(c[6]);
        assertArrayEquals(want, s.indices(), line);
        assertEquals(want.length, s.numSamples(), line);
        lines++;
      }
    }
    assertEquals(105, lines);
  }

  @Test
  void selectSplitsAGivenOrderAsTheSamplerSplitsItsOwn() {
    for (boolean dropLast : new boolean[] {false, true}) {
      for (int rank = 0; rank < 3; rank++) {
        DistributedSampler s = new DistributedSampler(103, 3, rank, true, 5, dropLast);
        s.setEpoch(2);
        assertArrayEquals(s.indices(), s.select(new Generator(5 + 2).permutation(103)), "rank " + rank);
      }
    }
    DistributedSampler s = new DistributedSampler(4, 3, 2, false, 0, false);
    assertArrayEquals(new int[] {12, 11}, s.select(new int[] {10, 11, 12, 13}), "padded by the order's head: 10 11 12 13 10 11");
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> s.select(new int[3]));
    assertEquals("DistributedSampler.select: the order has 3 indices but the sampler was made for 4", e.getMessage());
  }

  @Test
  void theRanksShardsPartitionTheEpochsPermutation() {
    int n = 103;
    int world = 4;
    for (boolean dropLast : new boolean[] {false, true}) {
      int[] seen = new int[n];
      for (int r = 0; r < world; r++) {
        DistributedSampler s = new DistributedSampler(n, world, r, true, 9, dropLast);
        s.setEpoch(3);
        for (int i : s.indices()) seen[i]++;
        assertEquals(dropLast ? 25 : 26, s.numSamples());
      }
      int[] perm = new Generator(9 + 3).permutation(n);
      for (int k = 0; k < n; k++) {
        // without dropLast the head of the order is repeated (1 sample here); with it the tail is dropped (3)
        int expect = dropLast ? (k < 100 ? 1 : 0) : (k < 1 ? 2 : 1);
        assertEquals(expect, seen[perm[k]], "sample at position " + k + " of the permutation, dropLast=" + dropLast);
      }
    }
  }

  @Test
  void eachEpochIsANewPermutationAndTheSameSeedGivesTheSameShard() {
    DistributedSampler a = new DistributedSampler(50, 2, 1, true, 1, false);
    DistributedSampler b = new DistributedSampler(50, 2, 1, true, 1, false);
    int[] e0 = a.indices();
    a.setEpoch(1);
    assertEquals(1, a.epoch());
    assertTrue(!Arrays.equals(e0, a.indices()));
    b.setEpoch(1);
    assertArrayEquals(a.indices(), b.indices());
    assertArrayEquals(e0, b.indices(0));
  }

  @Test
  void aShardFeedsADataLoader() {
    int n = 10;
    float[] x = new float[n];
    long[] y = new long[n];
    for (int i = 0; i < n; i++) {
      x[i] = i;
      y[i] = 100 + i;
    }
    TensorDataset data = new TensorDataset(Tensor.of(x, n, 1), Tensor.of(y, n));
    DistributedSampler s = new DistributedSampler(n, 3, 2, true, 0, false);
    s.setEpoch(5);
    Subset<Sample> shard = s.shard(data);
    assertArrayEquals(s.indices(), shard.indices());
    try (DataLoader loader = new DataLoader(shard, BatchConfig.sequential(2))) {
      float[] got = new float[0];
      for (Batch b : loader) {
        float[] f = b.input().toFloatArray();
        float[] all = Arrays.copyOf(got, got.length + f.length);
        System.arraycopy(f, 0, all, got.length, f.length);
        got = all;
      }
      float[] want = new float[s.numSamples()];
      for (int k = 0; k < want.length; k++) want[k] = s.indices()[k];
      assertArrayEquals(want, got);
    }
  }

  @Test
  void badArgumentsAreNamed() {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> new DistributedSampler(10, 3, 3, true, 0, false));
    assertEquals("DistributedSampler: rank 3 out of range for 3 replicas (valid: 0..2)", e.getMessage());
    e = assertThrows(IllegalArgumentException.class, () -> new DistributedSampler(10, 0, 0, true, 0, false));
    assertEquals("DistributedSampler: numReplicas must be >= 1, got 0", e.getMessage());
    DistributedSampler s = new DistributedSampler(10, 2, 0, true, 0, false);
    e = assertThrows(IllegalArgumentException.class, () -> s.setEpoch(-1));
    assertEquals("DistributedSampler: epoch must be >= 0, got -1", e.getMessage());
    TensorDataset small = new TensorDataset(Tensor.of(new float[3], 3, 1), Tensor.of(new long[3], 3));
    e = assertThrows(IllegalArgumentException.class, () -> s.shard(small));
    assertEquals("DistributedSampler.shard: the data set has 3 items but the sampler was made for 10", e.getMessage());
  }
}
