import dev.ember.autograd.Grad;
import dev.ember.nn.functional.Attention;
import dev.ember.tensor.Generator;
import dev.ember.tensor.MemoryScope;
import dev.ember.tensor.Tensor;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.Arrays;

/**
 * The nn category's attention rows (B=1, H=8, D=64, Ember's default path) timed in thread CPU time on one thread
 * (-Dember.threads=1): on a host loaded by other jobs, wall time measures the queue for the cores, CPU time much
 * less so (args: rounds [cpu|wall] [fwd,fwd+bwd]). Prints "fwd T ms" and "fwd+bwd T ms" lines, the median of the rounds (each round the mean of a batch
 * of calls). Mirrored by attention_cpu_time.py for torch; see run.sh.
 */
public class AttentionCpuTime {
  public static void main(String[] a) {
    int rounds = Integer.parseInt(a[0]);
    boolean wall = a.length > 1 && a[1].equals("wall"); // wall time instead (for a second thread's work)
    String[] kinds = a.length > 2 ? a[2].split(",") : new String[] {"fwd", "fwd+bwd"};
    ThreadMXBean mx = ManagementFactory.getThreadMXBean();
    for (String kind : kinds) {
      int[] ts = kind.equals("fwd") ? new int[] {128, 256, 512, 1024, 2048, 4096} : new int[] {128, 256, 512, 1024};
      for (int t : ts) {
        boolean bwd = kind.equals("fwd+bwd");
        Generator g = new Generator(t);
        Tensor[] x = new Tensor[3];
        for (int i = 0; i < 3; i++) x[i] = MemoryScope.escape(Tensor.randn(g, 1, 8, t, 64)).requiresGrad(bwd);
        Tensor up = Tensor.ones(1, 8, t, 64);
        int iters = Math.max(2, (int) (4e8 / ((double) t * t * 64 * 8 * 4 * (bwd ? 3 : 1))));
        double[] ms = new double[rounds];
        for (int r = -2; r < rounds; r++) { // two warm-up rounds
          long t0 = wall ? System.nanoTime() : mx.getCurrentThreadCpuTime();
          for (int i = 0; i < iters; i++) {
            try (MemoryScope call = MemoryScope.open()) {
              if (bwd) {
                for (Tensor p : x) {
                  Tensor old = p.grad();
                  p.setGrad(null);
                  MemoryScope.recycle(old);
                }
                Attention.scaledDotProductAttention(x[0], x[1], x[2]).backward(up);
              } else {
                try (Grad off = Grad.off()) {
                  Attention.scaledDotProductAttention(x[0], x[1], x[2]);
                }
              }
            }
          }
          if (r >= 0) ms[r] = ((wall ? System.nanoTime() : mx.getCurrentThreadCpuTime()) - t0) / 1e6 / iters;
        }
        Arrays.sort(ms);
        System.out.printf("%s %d %.4f%n", kind, t, ms[rounds / 2]);
      }
    }
  }
}
