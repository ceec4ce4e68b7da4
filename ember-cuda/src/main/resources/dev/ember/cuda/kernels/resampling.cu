// CudaResampling's kernels: nearest and bilinear interpolation and padding over contiguous planes, one thread per
// output element for the forward passes and one per input element for the backward passes. A backward pass is a
// gather: the host inverts the index tables (for each input row, the output rows that read it, in ascending order;
// the same for columns), so each input element adds its output gradients itself, in the CPU kernels' order, with
// no atomics: the CPU's bits. Compiled with --fmad=false, so every product and sum is rounded as Java rounds it.
// No headers (NVRTC); ResamplingHostTest compiles the same text with g++.
#define RS_LOOP(i, n) for (long long i = blockIdx.x * (long long) blockDim.x + threadIdx.x; i < (n); i += (long long) blockDim.x * gridDim.x)

// out[p, oy, ox] = x[p, mapH[oy], mapW[ox]], or the element whose bits are `value` where either map is -1: nearest
// forward (maps never -1) and pad forward, any element of the size of T, copied bit for bit.
template <typename T> __device__ void rs_gather(const T* x, T* out, const int* mapH, const int* mapW, long long value,
    int h, int w, int oh, int ow, long long total) {
  T fill = (T) value;
  RS_LOOP(t, total) {
    int ox = (int) (t % ow);
    int oy = (int) ((t / ow) % oh);
    long long p = t / ((long long) ow * oh);
    int sy = mapH[oy], sx = mapW[ox];
    out[t] = sy < 0 || sx < 0 ? fill : x[p * h * (long long) w + (long long) sy * w + sx];
  }
}

// dx[p, r, c] += g[p, oy, ox] over the output positions (oy, ox) that read (r, c), oy ascending then ox: nearest
// backward and pad backward. rowStart[r] .. rowStart[r + 1] index rows, the output rows that read input row r;
// colStart/cols the same for columns.
template <typename T> __device__ void rs_sum(const T* g, T* dx, const int* rowStart, const int* rows,
    const int* colStart, const int* cols, int h, int w, int oh, int ow, long long total) {
  RS_LOOP(t, total) {
    int c = (int) (t % w);
    int r = (int) ((t / w) % h);
    long long p = t / ((long long) w * h);
    const T* gp = g + p * oh * (long long) ow;
    T acc = dx[t];
    for (int a = rowStart[r]; a < rowStart[r + 1]; a++) {
      const T* gr = gp + (long long) rows[a] * ow;
      for (int b = colStart[c]; b < colStart[c + 1]; b++) acc += gr[cols[b]];
    }
    dx[t] = acc;
  }
}

// tab: i0h[oh], i1h[oh], i0w[ow], i1w[ow]; wt: l0h[oh], l1h[oh], l0w[ow], l1w[ow] (weights rounded to T as the CPU
// rounds them). y = (x00 w0 + x01 w1) a + (x10 w0 + x11 w1) b, CpuResampling's order.
template <typename T> __device__ void rs_bilinear_fwd(const T* x, T* y, const int* tab, const double* wt, int ih,
    int iw, int oh, int ow, long long total) {
  const int *i0h = tab, *i1h = tab + oh, *i0w = tab + 2 * oh, *i1w = tab + 2 * oh + ow;
  const double *l0h = wt, *l1h = wt + oh, *l0w = wt + 2 * oh, *l1w = wt + 2 * oh + ow;
  RS_LOOP(t, total) {
    int o = (int) (t % ow);
    int r = (int) ((t / ow) % oh);
    long long p = t / ((long long) ow * oh);
    const T* xb = x + p * ih * (long long) iw;
    const T* r0 = xb + (long long) i0h[r] * iw;
    const T* r1 = xb + (long long) i1h[r] * iw;
    T a = (T) l0h[r], b = (T) l1h[r], w0 = (T) l0w[o], w1 = (T) l1w[o];
    int c0 = i0w[o], c1 = i1w[o];
    T t0 = r0[c0] * w0 + r0[c1] * w1;
    T t1 = r1[c0] * w0 + r1[c1] * w1;
    y[t] = t0 * a + t1 * b;
  }
}

// The gradient of rs_bilinear_fwd as a gather. rows[rowStart[r] .. rowStart[r + 1]) are 2 h + k for the output rows
// h whose corner k (0: i0h, 1: i1h) is input row r, ascending (both corners of one h are adjacent); cols the same
// for columns. CpuResampling adds, for h ascending, w ascending, then corners (k_h, k_w) in the order (0,0), (0,1),
// (1,0), (1,1), (a w0) v, (a w1) v, (b w0) v, (b w1) v: the loops below visit them in that order.
template <typename T> __device__ void rs_bilinear_bwd(const T* g, T* dx, const int* rowStart, const int* rows,
    const int* colStart, const int* cols, const double* wt, int ih, int iw, int oh, int ow, long long total) {
  const double *l0h = wt, *l1h = wt + oh, *l0w = wt + 2 * oh, *l1w = wt + 2 * oh + ow;
  RS_LOOP(t, total) {
    int c = (int) (t % iw);
    int r = (int) ((t / iw) % ih);
    long long p = t / ((long long) iw * ih);
    const T* gp = g + p * oh * (long long) ow;
    T acc = dx[t];
    int ra = rowStart[r], rEnd = rowStart[r + 1];
    while (ra < rEnd) {
      int h = rows[ra] >> 1;
      int rb = ra + 1;
      while (rb < rEnd && (rows[rb] >> 1) == h) rb++;
      int ca = colStart[c], cEnd = colStart[c + 1];
      while (ca < cEnd) {
        int w = cols[ca] >> 1;
        int cb = ca + 1;
        while (cb < cEnd && (cols[cb] >> 1) == w) cb++;
        T v = gp[(long long) h * ow + w];
        for (int i = ra; i < rb; i++) {
          T wh = (T) ((rows[i] & 1) ? l1h[h] : l0h[h]);
          for (int j = ca; j < cb; j++) {
            T ww = (T) ((cols[j] & 1) ? l1w[w] : l0w[w]);
            acc += wh * ww * v;
          }
        }
        ca = cb;
      }
      ra = rb;
    }
    dx[t] = acc;
  }
}

#define RS_GATHER(T, S)                                                                                             \
  extern "C" __global__ void rs_gather_##S(const T* x, T* out, const int* mapH, const int* mapW, long long value,   \
      int h, int w, int oh, int ow, long long total) { rs_gather<T>(x, out, mapH, mapW, value, h, w, oh, ow, total); }
RS_GATHER(unsigned char, b1)
RS_GATHER(unsigned short, b2)
RS_GATHER(unsigned int, b4)
RS_GATHER(unsigned long long, b8)

#define RS_FLOATING(T, S)                                                                                           \
  extern "C" __global__ void rs_sum_##S(const T* g, T* dx, const int* rowStart, const int* rows,                    \
      const int* colStart, const int* cols, int h, int w, int oh, int ow, long long total) {                        \
    rs_sum<T>(g, dx, rowStart, rows, colStart, cols, h, w, oh, ow, total);                                          \
  }                                                                                                                 \
  extern "C" __global__ void rs_bilinear_fwd_##S(const T* x, T* y, const int* tab, const double* wt, int ih, int iw, \
      int oh, int ow, long long total) { rs_bilinear_fwd<T>(x, y, tab, wt, ih, iw, oh, ow, total); }               \
  extern "C" __global__ void rs_bilinear_bwd_##S(const T* g, T* dx, const int* rowStart, const int* rows,           \
      const int* colStart, const int* cols, const double* wt, int ih, int iw, int oh, int ow, long long total) {    \
    rs_bilinear_bwd<T>(g, dx, rowStart, rows, colStart, cols, wt, ih, iw, oh, ow, total);                           \
  }
RS_FLOATING(float, f32)
RS_FLOATING(double, f64)
