// A strided geometry (eg_common.cuh's EGeo) for the drivers of the indexing kernels: shape, strides, offset.
EGeo geo(std::vector<long long> shape, std::vector<long long> stride, long long off) {
  EGeo g{}; g.rank = shape.size();
  for (size_t i = 0; i < shape.size(); i++) { g.shape[i] = shape[i]; g.stride[i] = stride[i]; }
  g.offset = off; return g;
}
