// A stand-in for libcudnn.so, built by CudnnCallsTest with g++ -shared: it keeps the descriptors it is given,
// checks every call's arguments against cuDNN's documented order (which descriptor kind sits where, an image
// tensor beside a grid tensor, alpha 1, beta 0 or 1, a workspace when one is asked for) and logs what each run
// call received, so that the Java bindings' argument order is checked without a GPU. A failed check returns
// CUDNN_STATUS_BAD_PARAM (2000) and cudnnGetErrorString(2000) says which check.
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <string>

namespace {
enum Kind { TENSOR = 1, FILTER = 2, CONV = 3 };
struct Desc {
  int kind;
  int dtype = -1;
  int d[4] = {0, 0, 0, 0};  // tensor n, c, h, w; filter k, c/groups, kh, kw
  int pad[2] = {0, 0}, stride[2] = {1, 1}, dil[2] = {1, 1};
  int mode = -1, compute = -1, groups = 1, math = -1;
};
struct Perf {
  int algo;
  int status;
  float time;
  size_t memory;
  int determinism;
  int mathType;
  int reserved[3];
};
static_assert(sizeof(Perf) == 48, "cudnnConvolution*AlgoPerf_t is 48 bytes");
std::string LOG;
char LAST[512] = "";
void *const HANDLE = reinterpret_cast<void *>(0x4A);

int fail(const char *why) {
  std::snprintf(LAST, sizeof LAST, "CUDNN_STATUS_BAD_PARAM (mock: %s)", why);
  return 2000;
}

bool is(const Desc *d, int kind) { return d != nullptr && d->kind == kind; }

// x: the image [n, c, h, w]; w: the filter [k, c/groups, kh, kw]; y: the grid [n, k, oh, ow] of conv
int checkSet(void *h, const Desc *x, const Desc *w, const Desc *conv, const Desc *y) {
  if (h != HANDLE) return fail("not the handle cudnnCreate gave");
  if (!is(x, TENSOR)) return fail("x is not a tensor descriptor");
  if (!is(w, FILTER)) return fail("w is not a filter descriptor");
  if (!is(conv, CONV)) return fail("conv is not a convolution descriptor");
  if (!is(y, TENSOR)) return fail("y is not a tensor descriptor");
  if (x->d[1] != w->d[1] * conv->groups) return fail("x's channels are not the filter's times groups");
  if (y->d[1] != w->d[0]) return fail("y's channels are not the filter's count");
  if (x->d[0] != y->d[0]) return fail("x and y batches differ");
  return 0;
}

int fillPerf(int requested, int *count, Perf *perf) {
  if (requested < 3) return fail("fewer than 3 algorithms requested");
  Perf p[3] = {{1, 0, 0.f, 0, 0, 3, {0, 0, 0}},       // non-deterministic
               {2, 0, 0.f, 2048, 1, 1, {0, 0, 0}},    // deterministic, tensor cores
               {3, 0, 0.f, 4096, 1, 3, {0, 0, 0}}};   // deterministic, FMA
  std::memcpy(perf, p, sizeof p);
  *count = 3;
  return 0;
}

int run(const char *name, void *h, const float *alpha, const Desc *x, const void *xp, const Desc *w,
        const void *wp, const Desc *conv, int algo, const void *ws, size_t wsBytes, const float *beta, const Desc *y,
        const void *yp) {
  int rc = checkSet(h, x, w, conv, y);
  if (rc) return rc;
  if (alpha == nullptr || *alpha != 1.f) return fail("alpha is not a host float 1");
  if (beta == nullptr || (*beta != 0.f && *beta != 1.f)) return fail("beta is not a host float 0 or 1");
  if (wsBytes > 0 && ws == nullptr) return fail("no workspace for a workspace size");
  if (xp == nullptr || wp == nullptr || yp == nullptr) return fail("a null buffer");
  char b[256];
  std::snprintf(b, sizeof b, "%s algo=%d math=%d x=%lx w=%lx y=%lx ws=%lx/%zu beta=%g;", name, algo, conv->math,
                (unsigned long) xp, (unsigned long) wp, (unsigned long) yp, (unsigned long) ws, wsBytes,
                (double) *beta);
  LOG += b;
  return 0;
}
}  // namespace

extern "C" {
const char *mock_log() { return LOG.c_str(); }
void mock_reset() { LOG.clear(); }

size_t cudnnGetVersion() { return 90501; }
const char *cudnnGetErrorString(int s) { return s == 0 ? "CUDNN_STATUS_SUCCESS" : s == 2000 ? LAST : "mock: ?"; }
int cudnnCreate(void **h) {
  *h = HANDLE;
  return 0;
}
int cudnnSetStream(void *h, void *stream) {
  if (h != HANDLE) return fail("cudnnSetStream: not the handle");
  char b[64];
  std::snprintf(b, sizeof b, "stream=%lx;", (unsigned long) stream);
  LOG += b;
  return 0;
}
int cudnnCreateTensorDescriptor(Desc **d) {
  *d = new Desc{TENSOR};
  return 0;
}
int cudnnSetTensor4dDescriptorEx(Desc *d, int dt, int n, int c, int h, int w, int ns, int cs, int hs, int ws) {
  if (!is(d, TENSOR)) return fail("cudnnSetTensor4dDescriptorEx: not a tensor descriptor");
  if (n <= 0 || c <= 0 || h <= 0 || w <= 0) return fail("tensor dims");
  if (ws != 1 || hs != w || cs != h * w || ns != c * h * w) return fail("tensor strides are not contiguous NCHW");
  d->dtype = dt;
  int v[4] = {n, c, h, w};
  std::memcpy(d->d, v, sizeof v);
  return 0;
}
int cudnnCreateFilterDescriptor(Desc **d) {
  *d = new Desc{FILTER};
  return 0;
}
int cudnnSetFilter4dDescriptor(Desc *d, int dt, int format, int k, int c, int h, int w) {
  if (!is(d, FILTER)) return fail("cudnnSetFilter4dDescriptor: not a filter descriptor");
  if (format != 0) return fail("filter format is not NCHW");
  if (k <= 0 || c <= 0 || h <= 0 || w <= 0) return fail("filter dims");
  d->dtype = dt;
  int v[4] = {k, c, h, w};
  std::memcpy(d->d, v, sizeof v);
  return 0;
}
int cudnnCreateConvolutionDescriptor(Desc **d) {
  *d = new Desc{CONV};
  return 0;
}
int cudnnSetConvolution2dDescriptor(Desc *d, int ph, int pw, int u, int v, int dh, int dw, int mode, int compute) {
  if (!is(d, CONV)) return fail("cudnnSetConvolution2dDescriptor: not a convolution descriptor");
  if (ph < 0 || pw < 0 || u <= 0 || v <= 0 || dh <= 0 || dw <= 0) return fail("padding, stride or dilation");
  if (mode != 1) return fail("mode is not CUDNN_CROSS_CORRELATION");
  d->pad[0] = ph, d->pad[1] = pw, d->stride[0] = u, d->stride[1] = v, d->dil[0] = dh, d->dil[1] = dw;
  d->mode = mode, d->compute = compute;
  return 0;
}
int cudnnSetConvolutionGroupCount(Desc *d, int g) {
  if (!is(d, CONV) || g <= 0) return fail("cudnnSetConvolutionGroupCount");
  d->groups = g;
  return 0;
}
int cudnnSetConvolutionMathType(Desc *d, int m) {
  if (!is(d, CONV) || m < 0 || m > 3) return fail("cudnnSetConvolutionMathType");
  d->math = m;
  return 0;
}
int cudnnGetConvolution2dForwardOutputDim(const Desc *conv, const Desc *x, const Desc *w, int *n, int *c, int *h,
                                          int *ww) {
  if (!is(conv, CONV) || !is(x, TENSOR) || !is(w, FILTER)) return fail("output dim: descriptor kinds");
  if (x->d[1] != w->d[1] * conv->groups) return fail("output dim: channels");
  *n = x->d[0];
  *c = w->d[0];
  *h = (x->d[2] + 2 * conv->pad[0] - conv->dil[0] * (w->d[2] - 1) - 1) / conv->stride[0] + 1;
  *ww = (x->d[3] + 2 * conv->pad[1] - conv->dil[1] * (w->d[3] - 1) - 1) / conv->stride[1] + 1;
  return 0;
}
int cudnnGetConvolutionForwardAlgorithm_v7(void *h, const Desc *x, const Desc *w, const Desc *conv, const Desc *y,
                                           int req, int *count, Perf *perf) {
  int rc = checkSet(h, x, w, conv, y);
  return rc ? rc : fillPerf(req, count, perf);
}
int cudnnGetConvolutionBackwardDataAlgorithm_v7(void *h, const Desc *w, const Desc *dy, const Desc *conv,
                                                const Desc *dx, int req, int *count, Perf *perf) {
  int rc = checkSet(h, dx, w, conv, dy);
  return rc ? rc : fillPerf(req, count, perf);
}
int cudnnGetConvolutionBackwardFilterAlgorithm_v7(void *h, const Desc *x, const Desc *dy, const Desc *conv,
                                                  const Desc *dw, int req, int *count, Perf *perf) {
  int rc = checkSet(h, x, dw, conv, dy);
  return rc ? rc : fillPerf(req, count, perf);
}
// workspace sizes: 1000 * algo plus 1, 2 or 3 for forward, data, filter
int cudnnGetConvolutionForwardWorkspaceSize(void *h, const Desc *x, const Desc *w, const Desc *conv, const Desc *y,
                                            int algo, size_t *size) {
  int rc = checkSet(h, x, w, conv, y);
  if (!rc) *size = 1000 * (size_t) algo + 1;
  return rc;
}
int cudnnGetConvolutionBackwardDataWorkspaceSize(void *h, const Desc *w, const Desc *dy, const Desc *conv,
                                                 const Desc *dx, int algo, size_t *size) {
  int rc = checkSet(h, dx, w, conv, dy);
  if (!rc) *size = 1000 * (size_t) algo + 2;
  return rc;
}
int cudnnGetConvolutionBackwardFilterWorkspaceSize(void *h, const Desc *x, const Desc *dy, const Desc *conv,
                                                   const Desc *dw, int algo, size_t *size) {
  int rc = checkSet(h, x, dw, conv, dy);
  if (!rc) *size = 1000 * (size_t) algo + 3;
  return rc;
}
int cudnnConvolutionForward(void *h, const float *alpha, const Desc *xd, const void *x, const Desc *wd,
                            const void *w, const Desc *conv, int algo, void *ws, size_t wsBytes, const float *beta,
                            const Desc *yd, void *y) {
  return run("forward", h, alpha, xd, x, wd, w, conv, algo, ws, wsBytes, beta, yd, y);
}
int cudnnConvolutionBackwardData(void *h, const float *alpha, const Desc *wd, const void *w, const Desc *dyd,
                                 const void *dy, const Desc *conv, int algo, void *ws, size_t wsBytes,
                                 const float *beta, const Desc *dxd, void *dx) {
  return run("data", h, alpha, dxd, dx, wd, w, conv, algo, ws, wsBytes, beta, dyd, dy);
}
int cudnnConvolutionBackwardFilter(void *h, const float *alpha, const Desc *xd, const void *x, const Desc *dyd,
                                   const void *dy, const Desc *conv, int algo, void *ws, size_t wsBytes,
                                   const float *beta, const Desc *dwd, void *dw) {
  return run("filter", h, alpha, xd, x, dwd, dw, conv, algo, ws, wsBytes, beta, dyd, dy);
}
}
