package dev.ember.cuda.kernels;

import dev.ember.backend.RecurrentKernels;
import dev.ember.backend.View;
import dev.ember.cuda.lib.KernelArgs;
import dev.ember.cuda.runtime.KernelCache;
import dev.ember.tensor.DType;

/**
 * The LSTM cell's element loops on the GPU, one thread per (row, hidden unit), computing in double as the CPU's
 * loops do (and, without contraction into fused multiply-adds, with their bits).
 */
public final class CudaRecurrent implements RecurrentKernels {
  static final String SOURCE = """
      #define GRID_LOOP(i, n) for (long long i = blockIdx.x * (long long) blockDim.x + threadIdx.x; i < (n); i += (long long) blockDim.x * gridDim.x)
      template <typename T> __device__ void cell_state(const T* act, const T* c, T* out, long long n, long long hs) {
        GRID_LOOP(e, n * hs) {
          long long r = e / hs, j = e - r * hs, g0 = r * 4 * hs;
          out[n * hs + e] = (T) ((double) act[g0 + hs + j] * (double) c[e] + (double) act[g0 + j] * (double) act[g0 + 2 * hs + j]);
        }
      }
      template <typename T> __device__ void cell_hidden(const T* act, const T* t, T* out, long long n, long long hs) {
        GRID_LOOP(e, n * hs) {
          long long r = e / hs, j = e - r * hs;
          out[e] = (T) ((double) act[r * 4 * hs + 3 * hs + j] * (double) t[e]);
        }
      }
      template <typename T> __device__ void cell_backward(const T* act, const T* tanhC, const T* g, const T* cPrev,
          T* dGates, T* dc, long long n, long long hs) {
        long long nh = n * hs;
        GRID_LOOP(e, nh) {
          long long r = e / hs, j = e - r * hs, g0 = r * 4 * hs;
          double i = act[g0 + j], f = act[g0 + hs + j], gt = act[g0 + 2 * hs + j], o = act[g0 + 3 * hs + j];
          double t = tanhC[e], dh = g[e];
          double dcNew = (double) g[nh + e] + dh * o * (1 - t * t);
          dGates[g0 + j] = (T) (dcNew * gt * i * (1 - i));
          dGates[g0 + hs + j] = (T) (dcNew * (double) cPrev[e] * f * (1 - f));
          dGates[g0 + 2 * hs + j] = (T) (dcNew * i * (1 - gt * gt));
          dGates[g0 + 3 * hs + j] = (T) (dh * t * o * (1 - o));
          dc[e] = (T) (dcNew * f);
        }
      }
      #define BOTH(T, S) \\
      extern "C" __global__ void cell_state_##S(const T* a, const T* c, T* o, long long n, long long hs) { cell_state<T>(a, c, o, n, hs); } \\
      extern "C" __global__ void cell_hidden_##S(const T* a, const T* t, T* o, long long n, long long hs) { cell_hidden<T>(a, t, o, n, hs); } \\
      extern "C" __global__ void cell_backward_##S(const T* a, const T* t, const T* g, const T* cp, T* dg, T* dc, long long n, long long hs) { cell_backward<T>(a, t, g, cp, dg, dc, n, hs); }
      BOTH(float, f32)
      BOTH(double, f64)
      """;

  private final KernelCache cache;

  public CudaRecurrent(KernelCache cache) {
    this.cache = cache;
  }

  private long fn(String name, DType t) {
    return cache.function("recurrent", SOURCE, name + (t == DType.F32 ? "_f32" : "_f64"));
  }

  @Override
  public void lstmCellState(View act, View c, View out) {
    long n = act.shapeRef()[0];
    long hs = act.shapeRef()[1] / 4;
    cache.launch1d(fn("cell_state", act.dtype()), n * hs, KernelArgs.begin().ptr(KernelArgs.address(act))
        .ptr(KernelArgs.address(c)).ptr(KernelArgs.address(out)).i64(n).i64(hs));
  }

  @Override
  public void lstmCellHidden(View act, View tanhC, View out) {
    long n = act.shapeRef()[0];
    long hs = act.shapeRef()[1] / 4;
    cache.launch1d(fn("cell_hidden", act.dtype()), n * hs, KernelArgs.begin().ptr(KernelArgs.address(act))
        .ptr(KernelArgs.address(tanhC)).ptr(KernelArgs.address(out)).i64(n).i64(hs));
  }

  @Override
  public void lstmCellBackward(View act, View tanhC, View g, View cPrev, View dGates, View dc) {
    long n = act.shapeRef()[0];
    long hs = act.shapeRef()[1] / 4;
    cache.launch1d(fn("cell_backward", act.dtype()), n * hs, KernelArgs.begin().ptr(KernelArgs.address(act))
        .ptr(KernelArgs.address(tanhC)).ptr(KernelArgs.address(g)).ptr(KernelArgs.address(cPrev))
        .ptr(KernelArgs.address(dGates)).ptr(KernelArgs.address(dc)).i64(n).i64(hs));
  }
}
