// The deferred index range check (dev.ember.cuda.kernels.CudaIndexChecks, Backend.checkIndexRange on CUDA): the
// host queues it and goes on; the kernel records the first offending element in a small device slot that the host
// reads at its next synchronizing point. A slot is two 64-bit words, set to all ones before the check:
// err[0] the smallest row-major position whose value is outside [lo, hi) and not `allowed` (all ones: none),
// err[1] that element's value (written by index_check_value, queued right after on the same stream).

#define IC_LOOP(i, n) \
  for (long long i = blockIdx.x * (long long) blockDim.x + threadIdx.x; i < (n); i += (long long) gridDim.x * blockDim.x)

template <typename I>
__device__ void ic_range(const I* __restrict__ idx, EGeo g, long long n, long long lo, long long hi,
    long long allowed, unsigned long long* err) {
  IC_LOOP(e, n) {
    long long v = (long long) idx[eg_at(g, e)];
    if ((v < lo || v >= hi) && v != allowed) atomicMin(err, (unsigned long long) e);
  }
}

// One thread: the value at the recorded position, if any (the position is final: the range kernel has finished).
template <typename I>
__device__ void ic_value(const I* __restrict__ idx, EGeo g, unsigned long long* err) {
  if (blockIdx.x != 0 || threadIdx.x != 0) return;
  unsigned long long p = err[0];
  if (p != ~0ULL) err[1] = (unsigned long long) (long long) idx[eg_at(g, (long long) p)];
}

extern "C" __global__ void index_check_range_i64(const long long* idx, EGeo g, long long n, long long lo,
    long long hi, long long allowed, unsigned long long* err) {
  ic_range(idx, g, n, lo, hi, allowed, err);
}

extern "C" __global__ void index_check_range_i32(const int* idx, EGeo g, long long n, long long lo, long long hi,
    long long allowed, unsigned long long* err) {
  ic_range(idx, g, n, lo, hi, allowed, err);
}

extern "C" __global__ void index_check_value_i64(const long long* idx, EGeo g, unsigned long long* err) {
  ic_value(idx, g, err);
}

extern "C" __global__ void index_check_value_i32(const int* idx, EGeo g, unsigned long long* err) {
  ic_value(idx, g, err);
}
