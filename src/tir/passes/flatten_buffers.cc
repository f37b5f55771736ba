// The loop-level pass `flatten_buffers` (the global "tir.pass.flatten_buffers"): every buffer a
// function allocates becomes one-dimensional, of its elements' count, and each load and store of
// it reads the row-major offset of its indices (simplified under the loops' bounds), which is
// what a target that knows only flat memory (or storage_rewrite, to let buffers of different
// shapes share memory) needs. Parameters keep their shapes: the calling convention checks each
// argument's shape against them, and the C target computes their offsets the same way.
#include <kiln/ffi/registry.h>
#include <kiln/tir/builtin_nodes.h>

#include <optional>
#include <string>
#include <vector>

#include "buffer_access.h"
#include "simplify.h"

namespace kiln {
namespace tir {
namespace {

std::optional<Node> Flatten(const Node& allocation) {
  const auto buffer = allocation.field_as<Node>("buffer");
  const auto shape = buffer.field_as<Array<Any>>("shape");
  if (shape.size() <= 1) return std::nullopt;
  arith::SizeExpr elements = arith::IntImm(1);
  for (const Any& extent : shape) elements = elements * extent.cast<arith::SizeExpr>();
  const std::string name = buffer.field_as<String>("name").str();
  const Node flat = Buffer(name, buffer.field_as<DLDataType>("dtype"), {elements});
  auto row_major = [&](const Array<Any>& indices) {
    arith::SizeExpr offset = arith::IntImm(0);
    for (int64_t axis = 0; axis < indices.size(); ++axis) {
      offset = offset * shape[axis].cast<arith::SizeExpr>() + indices[axis].cast<arith::SizeExpr>();
    }
    return std::vector<arith::SizeExpr>{offset};
  };
  const Node body = RetargetAccesses(allocation.field_as<Node>("body"), name, flat, row_major);
  return Allocate(flat, allocation.field_as<String>("scope").str(), body);
}

Node FlattenBuffers(const Node& func) {
  return Simplify(Mutate(func, [](const Node& node) -> std::optional<Node> {
    return node.is("allocate") ? Flatten(node) : std::nullopt;
  }));
}

}  // namespace

KILN_REGISTER_GLOBAL("tir.pass.flatten_buffers").set_body_typed(FlattenBuffers);

}  // namespace tir
}  // namespace kiln
