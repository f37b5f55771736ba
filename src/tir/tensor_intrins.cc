// The core's tensor intrinsics (kiln/tir/schedule.h): a matrix product's loop nest, replaced by
// the CPU kernels' GEMM (tir.micro_kernel.sgemm and sgemm_bt, src/kernels/cpu/micro_kernels.cc).
#include <kiln/ffi/map.h>
#include <kiln/ffi/registry.h>
#include <kiln/tir/builtin_nodes.h>
#include <kiln/tir/schedule.h>

#include <string>
#include <vector>

namespace kiln {
namespace tir {
namespace {

/// c[i, j] = sum over r of a[i, r] * b[r, j], c zeroed first; `b_shape` and `b_index` give B's
/// layout: "k, n" and "r, j" for A * B, "n, k" and "j, r" for A * B^T.
Node GemmDescription(const std::string& name, const std::string& b_shape,
                     const std::string& b_index) {
  return ParseText(
      "prim_func(name=" + name +
      ", params=[buffer(name=a, dtype=float32, shape=[m, k]), buffer(name=b, dtype=float32, "
      "shape=[" +
      b_shape +
      "]), buffer(name=c, dtype=float32, shape=[m, n])], body=\n"
      "  for(var=i, extent=m, kind=serial, body=\n"
      "    for(var=j, extent=n, kind=serial, body=\n"
      "      seq(stmts=[\n"
      "        store(buffer=%c, indices=[i, j], value=float(value=0.0, dtype=float32)),\n"
      "        for(var=r, extent=k, kind=serial, body=\n"
      "          store(buffer=%c, indices=[i, j], value=add(a=load(buffer=%c, indices=[i, j]),\n"
      "            b=mul(a=load(buffer=%a, indices=[i, r]), b=load(buffer=%b, indices=[" +
      b_index + "]))))),\n      ]))))");
}

/// evaluate(call_packed(kernel, [&a, &b, &c, m, n, k, lda, ldb, ldc])): the regions' first
/// elements and their buffers' row strides.
Node GemmCall(const std::string& kernel, const Map<String, Any>& buffers,
              const Map<String, Any>& sizes) {
  constexpr DLDataType kInt64{kDLInt, 64, 1};
  std::vector<Node> addresses;
  std::vector<Node> row_strides;
  for (const char* name : {"a", "b", "c"}) {
    const auto region = buffers.at(String(name)).cast<Map<String, Any>>();
    std::vector<arith::SizeExpr> offset;
    for (const Any& index : region.at(String("offset")).cast<Array<Any>>()) {
      offset.push_back(index.cast<arith::SizeExpr>());
    }
    addresses.push_back(Address(region.at(String("buffer")).cast<Node>(), offset));
    row_strides.push_back(IndexValue(
        region.at(String("strides")).cast<Array<Any>>()[0].cast<arith::SizeExpr>(), kInt64));
  }
  std::vector<Node> args = addresses;
  for (const char* size : {"m", "n", "k"}) {
    args.push_back(IndexValue(sizes.at(String(size)).cast<arith::SizeExpr>(), kInt64));
  }
  args.insert(args.end(), row_strides.begin(), row_strides.end());
  return Evaluate(CallPacked(kernel, args));
}

/// The description global (tir.intrin.<name>.desc) of one GEMM intrinsic, parsed when first
/// asked for: at load time the node kinds the text names may not be registered yet.
Function Description(const std::string& name, const std::string& b_shape,
                     const std::string& b_index) {
  return Function::FromTyped(
      [name, b_shape, b_index]() { return GemmDescription(name, b_shape, b_index); });
}

Function Implementation(const std::string& name) {
  return Function::FromTyped([kernel = "tir.micro_kernel." + name](const Map<String, Any>& buffers,
                                                                   const Map<String, Any>& sizes) {
    return GemmCall(kernel, buffers, sizes);
  });
}

}  // namespace

KILN_REGISTER_GLOBAL("tir.intrin.sgemm.desc").set_body(Description("sgemm", "k, n", "r, j"));
KILN_REGISTER_GLOBAL("tir.intrin.sgemm").set_body(Implementation("sgemm"));
KILN_REGISTER_GLOBAL("tir.intrin.sgemm_bt.desc").set_body(Description("sgemm_bt", "n, k", "j, r"));
KILN_REGISTER_GLOBAL("tir.intrin.sgemm_bt").set_body(Implementation("sgemm_bt"));

}  // namespace tir
}  // namespace kiln
