// ONNX ops that rearrange elements without computing: DepthToSpace, SpaceToDepth and Tile, each
// a reshape, a transpose or expand, and a reshape back.
#include <kiln/ffi/error.h>

#include <string>

#include "converter.h"

namespace kiln {
namespace frontend {
namespace onnx_import {
namespace {

ir::Expr Reshape(ir::Expr data, const std::vector<int64_t>& shape) {
  return MakeCall("reshape", {std::move(data)}, {{"newshape", ToArray(shape)}});
}

ir::Expr Transpose(ir::Expr data, const std::vector<int64_t>& axes) {
  return MakeCall("transpose", {std::move(data)}, {{"axes", ToArray(axes)}});
}

/// (N, C, H, W) of input 0 and the blocksize, checked.
std::vector<int64_t> BlockShape(const NodeContext& node, int64_t* block) {
  std::vector<int64_t> shape = node.InputShape(0);
  KILN_CHECK(shape.size() == 4, ValueError) << node.Describe() << ": the input must be 4-D";
  *block = node.Int("blocksize", 0);
  KILN_CHECK(*block > 0, ValueError) << node.Describe() << ": blocksize must be positive";
  return shape;
}

// DCR mode reads the channels as (block, block, C'), CRD as (C', block, block).
ir::Expr ConvertDepthToSpace(const NodeContext& node) {
  int64_t b = 0;
  const std::vector<int64_t> s = BlockShape(node, &b);
  KILN_CHECK(s[1] % (b * b) == 0, ValueError)
      << node.Describe() << ": channels " << s[1] << " do not divide by blocksize^2 " << b * b;
  const int64_t c = s[1] / (b * b);
  const std::string mode = node.Str("mode", "DCR");
  KILN_CHECK(mode == "DCR" || mode == "CRD", ValueError)
      << node.Describe() << ": mode must be DCR or CRD, not '" << mode << "'";
  ir::Expr blocks =
      mode == "DCR"
          ? Transpose(Reshape(node.Input(0), {s[0], b, b, c, s[2], s[3]}), {0, 3, 4, 1, 5, 2})
          : Transpose(Reshape(node.Input(0), {s[0], c, b, b, s[2], s[3]}), {0, 1, 4, 2, 5, 3});
  return Reshape(blocks, {s[0], c, s[2] * b, s[3] * b});
}

ir::Expr ConvertSpaceToDepth(const NodeContext& node) {
  int64_t b = 0;
  const std::vector<int64_t> s = BlockShape(node, &b);
  KILN_CHECK(s[2] % b == 0 && s[3] % b == 0, ValueError)
      << node.Describe() << ": height " << s[2] << " and width " << s[3]
      << " must divide by blocksize " << b;
  ir::Expr blocks =
      Transpose(Reshape(node.Input(0), {s[0], s[1], s[2] / b, b, s[3] / b, b}), {0, 3, 5, 1, 2, 4});
  return Reshape(blocks, {s[0], s[1] * b * b, s[2] / b, s[3] / b});
}

// Tile repeats the whole tensor along each dim: (d0, d1, ...) is viewed as (1, d0, 1, d1, ...),
// expanded to (r0, d0, r1, d1, ...) and merged back to (r0 * d0, r1 * d1, ...).
/// Tile with repeats known only at run time: the same reshape, expand and reshape, over sizes.
ir::Expr RunTimeTile(const NodeContext& node) {
  const std::vector<arith::SizeExpr> shape = node.InputShapeExprs(0);
  const std::vector<arith::SizeExpr> repeats = node.NewSizes(shape.size());
  std::vector<arith::SizeExpr> interleaved;
  std::vector<arith::SizeExpr> expanded;
  std::vector<arith::SizeExpr> out;
  for (size_t d = 0; d < shape.size(); ++d) {
    interleaved.insert(interleaved.end(), {arith::IntImm(1), shape[d]});
    expanded.insert(expanded.end(), {repeats[d], shape[d]});
    out.push_back(repeats[d] * shape[d]);
  }
  ir::Expr data = MakeCall("reshape", {node.Input(0)}, {{"newshape", SizesAttr(interleaved)}});
  data = DefineSizes(data, AsInt64(node.Input(1), node.InputDType(1)), repeats);
  ir::Expr tiled = MakeCall("expand", {data}, {{"shape", SizesAttr(expanded)}});
  return MakeCall("reshape", {tiled}, {{"newshape", SizesAttr(out)}});
}

ir::Expr ConvertTile(const NodeContext& node) {
  // Repeats computed from symbolic sizes are read at run time too (as a tensor of them).
  if (node.IsRunTimeValue(1) || node.SymbolicInput(1) != nullptr) return RunTimeTile(node);
  const std::vector<int64_t> shape = node.InputShape(0);
  const std::vector<int64_t> repeats = node.ConstantInts(1);
  KILN_CHECK(repeats.size() == shape.size(), ValueError)
      << node.Describe() << ": " << repeats.size() << " repeats for a tensor of rank "
      << shape.size();
  std::vector<int64_t> interleaved;
  std::vector<int64_t> expanded;
  std::vector<int64_t> out;
  for (size_t d = 0; d < shape.size(); ++d) {
    KILN_CHECK(repeats[d] >= 0, ValueError) << node.Describe() << ": repeats must be >= 0";
    interleaved.insert(interleaved.end(), {1, shape[d]});
    expanded.insert(expanded.end(), {repeats[d], shape[d]});
    out.push_back(repeats[d] * shape[d]);
  }
  ir::Expr tiled =
      MakeCall("expand", {Reshape(node.Input(0), interleaved)}, {{"shape", ToArray(expanded)}});
  return Reshape(tiled, out);
}

}  // namespace

void AddLayoutConverters(std::vector<ConverterEntry>& table) {
  AddConverter(table, "DepthToSpace", 1, kMaxOpset, ConvertDepthToSpace);
  AddConverter(table, "SpaceToDepth", 1, kMaxOpset, ConvertSpaceToDepth);
  AddConverter(table, "Tile", 6, kMaxOpset, ConvertTile);
}

}  // namespace onnx_import
}  // namespace frontend
}  // namespace kiln
