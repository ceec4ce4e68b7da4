// ElementwiseHostTest's driver: reads requests from stdin, runs the kernel body on the host, writes the output
// operand's elements. A request: FAMILY ntypes type... op param-bits rank shape..., then per operand (the output
// first) its strides, element count, dtype code and elements, all bit patterns in hex. Dtype codes are DType's
// ordinals: 0 F32, 1 F64, 2 I64, 3 I32, 4 BOOL, 5 BF16, 6 F16.
static int ew_size(int c) { return c == 0 ? 4 : c == 1 ? 8 : c == 2 ? 8 : c == 3 ? 4 : c == 4 ? 1 : 2; }
template <typename F> void ew_with(int c, F f) {
  switch (c) {
    case 0: f((float*)nullptr); break;
    case 1: f((double*)nullptr); break;
    case 2: f((long long*)nullptr); break;
    case 3: f((int*)nullptr); break;
    default: f((ebool*)nullptr); break;
  }
}
// The 16-bit floats: only the families that take them (CONVERT, FILL, WHERE's values) instantiate them.
template <typename F> void ew_with_half(int c, F f) {
  if (c == 5) f((ebf16*)nullptr);
  else f((ef16*)nullptr);
}
template <typename F> void ew_with_any(int c, F f) {
  if (c >= 5) ew_with_half(c, f);
  else ew_with(c, f);
}
#define EW_T(p) std::remove_pointer_t<decltype(p)>
int main() {
  std::string fam;
  while (std::cin >> fam) {
    int nt;
    std::cin >> nt;
    std::vector<int> types(nt);
    for (int& t : types) std::cin >> t;
    int op, rank;
    unsigned long long pbits;
    std::cin >> op >> std::hex >> pbits >> std::dec >> rank;
    double p;
    std::memcpy(&p, &pbits, 8);
    std::vector<long long> shape(rank);
    long long numel = 1;
    for (long long& s : shape) { std::cin >> s; numel *= s; }
    int nops = fam == "UNARY_BACKWARD" ? 3 : nt;
    Geo g[4];
    std::vector<std::vector<unsigned char>> mem(nops);
    std::vector<int> code(nops);
    for (int k = 0; k < nops; k++) {
      g[k].rank = rank;
      g[k].numel = numel;
      for (int d = 0; d < rank; d++) { g[k].shape[d] = shape[d]; std::cin >> g[k].stride[d]; }
      long long size;
      std::cin >> size >> code[k];
      mem[k].assign(size * ew_size(code[k]) + 8, 0);
      for (long long i = 0; i < size; i++) {
        unsigned long long b;
        std::cin >> std::hex >> b >> std::dec;
        std::memcpy(&mem[k][i * ew_size(code[k])], &b, ew_size(code[k]));
      }
    }
    if (!std::cin) { std::fprintf(stderr, "host_main: malformed request\n"); return 2; }
    void* P[4];
    for (int k = 0; k < nops; k++) P[k] = mem[k].data();
    if (fam == "UNARY") {
      ew_with(code[1], [&](auto* ti) { ew_with(code[0], [&](auto* to) {
        ew_unary<EW_T(ti), EW_T(to)>(g[0], g[1], (EW_T(to)*)P[0], (const EW_T(ti)*)P[1], op, p); }); });
    } else if (fam == "BINARY") {
      ew_with(code[1], [&](auto* ta) { ew_with(code[2], [&](auto* tb) { ew_with(code[0], [&](auto* to) {
        ew_binary<EW_T(ta), EW_T(tb), EW_T(to)>(g[0], g[1], g[2], (EW_T(to)*)P[0], (const EW_T(ta)*)P[1],
            (const EW_T(tb)*)P[2], op); }); }); });
    } else if (fam == "CONVERT") {
      ew_with_any(code[1], [&](auto* ts) { ew_with_any(code[0], [&](auto* td) {
        ew_convert<EW_T(ts), EW_T(td)>(g[0], g[1], (EW_T(td)*)P[0], (const EW_T(ts)*)P[1]); }); });
    } else if (fam == "FILL") {
      ew_with_any(code[0], [&](auto* t) { ew_fill<EW_T(t)>(g[0], (EW_T(t)*)P[0], p); });
    } else if (fam == "WHERE" && code[0] >= 5) { // half values and output, of one dtype
      ew_with(code[1], [&](auto* tc) { ew_with_half(code[0], [&](auto* t) {
        ew_where<EW_T(tc), EW_T(t), EW_T(t), EW_T(t)>(g[0], g[1], g[2], g[3], (EW_T(t)*)P[0],
            (const EW_T(tc)*)P[1], (const EW_T(t)*)P[2], (const EW_T(t)*)P[3]); }); });
    } else if (fam == "WHERE") {
      ew_with(code[1], [&](auto* tc) { ew_with(code[2], [&](auto* ta) { ew_with(code[3], [&](auto* tb) {
        ew_with(code[0], [&](auto* to) {
          ew_where<EW_T(tc), EW_T(ta), EW_T(tb), EW_T(to)>(g[0], g[1], g[2], g[3], (EW_T(to)*)P[0],
              (const EW_T(tc)*)P[1], (const EW_T(ta)*)P[2], (const EW_T(tb)*)P[3]); }); }); }); });
    } else if (fam == "UNARY_BACKWARD") {
      ew_with(code[0], [&](auto* t) {
        if constexpr (ew_floating<EW_T(t)>::value) {
          ew_unary_backward<EW_T(t)>(g[0], g[1], g[2], (EW_T(t)*)P[0], (const EW_T(t)*)P[1], (const EW_T(t)*)P[2], op);
        } });
    } else {
      std::fprintf(stderr, "host_main: unknown family %s\n", fam.c_str());
      return 2;
    }
    long long n = (long long)(mem[0].size() - 8) / ew_size(code[0]);
    std::cout << std::hex;
    for (long long i = 0; i < n; i++) {
      unsigned long long b = 0;
      std::memcpy(&b, &mem[0][i * ew_size(code[0])], ew_size(code[0]));
      std::cout << b << ' ';
    }
    std::cout << std::dec << '\n';
  }
  return 0;
}
