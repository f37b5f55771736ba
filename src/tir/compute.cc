// Compute rules (kiln/tir/compute.h): their registry (global functions `tir.compute.<op>`), the
// context C++ rules are written against, and the builders rules share.
#include <kiln/ffi/registry.h>
#include <kiln/tir/compute.h>

#include <limits>

namespace kiln {
namespace tir {

Node ComputeContext::Input(size_t i) const {
  KILN_CHECK(i < inputs_.size(), ValueError)
      << "compute rule: input " << i << " of " << inputs_.size();
  return BroadcastLoad(inputs_[i], indices_);
}

Any ComputeContext::Attr(const std::string& name) const {
  std::optional<Any> value = attrs_.Get(String(name));
  KILN_CHECK(value.has_value(), KeyError)
      << "compute rule: the call has no attribute '" << name << "'";
  return *value;
}

Node ComputeContext::Constant(double value) const {
  const DLDataType type = dtype();
  if (type.code == kDLFloat) return FloatImm(value, type);
  return IntImm(static_cast<int64_t>(value), type);
}

void RegisterComputeRule(const std::string& op, ComputeFn fn) {
  Function::SetGlobal(
      (kComputeRulePrefix + op).c_str(),
      Function::FromTyped(
          [fn = std::move(fn)](const Array<Node>& inputs, const Node& output,
                               const Array<Any>& indices, const Map<String, Any>& attrs) {
            std::vector<arith::SizeExpr> index_list;
            for (const Any& index : indices) index_list.push_back(index.cast<arith::SizeExpr>());
            return fn(ComputeContext(std::vector<Node>(inputs.begin(), inputs.end()), output,
                                     std::move(index_list), attrs));
          },
          kComputeRulePrefix + op),
      /*allow_override=*/true);
}

std::optional<Function> FindComputeRule(const std::string& op) {
  return Function::GetGlobal((kComputeRulePrefix + op).c_str());
}

Node ApplyComputeRule(const std::string& op, const std::vector<Node>& inputs, const Node& output,
                      const std::vector<arith::SizeExpr>& indices, const Map<String, Any>& attrs) {
  const std::optional<Function> rule = FindComputeRule(op);
  KILN_CHECK(rule.has_value(), NotImplementedError)
      << "op '" << op << "' has no compute rule " << kComputeRulePrefix << op;
  const Any value = (*rule)(Array<Node>(inputs.begin(), inputs.end()), output,
                            Array<Any>(indices.begin(), indices.end()), attrs);
  const std::optional<Node> node = value.as<Node>();
  KILN_CHECK(node.has_value() && node->defined() && (*node)->role() == NodeRole::kValue, TypeError)
      << kComputeRulePrefix << op << " must return a tir value";
  const auto dtype = output.field_as<DLDataType>("dtype");
  KILN_CHECK(DataTypeEqual((*node)->dtype(), dtype), TypeError)
      << kComputeRulePrefix << op << " returned a " << DataTypeToString((*node)->dtype())
      << " value for a " << DataTypeToString(dtype) << " result";
  return *node;
}

Node BroadcastLoad(const Node& buffer, const std::vector<arith::SizeExpr>& indices) {
  const auto shape = buffer.field_as<Array<Any>>("shape");
  const size_t rank = static_cast<size_t>(shape.size());
  KILN_CHECK(rank <= indices.size(), ValueError)
      << "compute rule: buffer '" << buffer.field_as<String>("name").str() << "' of rank " << rank
      << " broadcast to " << indices.size() << " indices";
  std::vector<arith::SizeExpr> read(indices.end() - static_cast<std::ptrdiff_t>(rank),
                                    indices.end());
  for (size_t d = 0; d < rank; ++d) {
    if (shape[static_cast<int64_t>(d)].cast<arith::SizeExpr>().as_int() == 1) {
      read[d] = arith::IntImm(0);
    }
  }
  return Load(buffer, read);
}

const char* CombinerName(Combiner combiner) {
  switch (combiner) {
    case Combiner::kSum: return "sum";
    case Combiner::kProd: return "prod";
    case Combiner::kMax: return "max";
    case Combiner::kMin: return "min";
  }
  return "";
}

Combiner ParseCombiner(const std::string& name) {
  for (Combiner combiner : {Combiner::kSum, Combiner::kProd, Combiner::kMax, Combiner::kMin}) {
    if (name == CombinerName(combiner)) return combiner;
  }
  KILN_THROW(ValueError) << "unknown combiner '" << name << "' (known: sum, prod, max, min)";
}

Node Reduce(Combiner combiner, const std::vector<std::string>& axes,
            const std::vector<arith::SizeExpr>& extents, const Node& source) {
  Array<Any> axis_vars;
  for (const std::string& axis : axes) axis_vars.push_back(arith::SizeVar(String(axis)));
  return MakeNode("reduce", {String(CombinerName(combiner)), axis_vars,
                             Array<Any>(extents.begin(), extents.end()), source});
}

Node ReduceIdentity(Combiner combiner, DLDataType dtype) {
  const bool is_float = dtype.code == kDLFloat;
  auto immediate = [&](double float_value, int64_t int_value) {
    return is_float ? FloatImm(float_value, dtype) : IntImm(int_value, dtype);
  };
  constexpr double kInf = std::numeric_limits<double>::infinity();
  const bool is_signed = dtype.code == kDLInt;
  const int64_t highest = is_signed ? static_cast<int64_t>((uint64_t{1} << (dtype.bits - 1)) - 1)
                          : dtype.bits >= 64
                              ? -1  // all ones, as the unsigned type reads it
                              : static_cast<int64_t>((uint64_t{1} << dtype.bits) - 1);
  const int64_t lowest = is_signed ? -highest - 1 : 0;
  switch (combiner) {
    case Combiner::kSum: return immediate(0.0, 0);
    case Combiner::kProd: return immediate(1.0, 1);
    case Combiner::kMax: return immediate(-kInf, lowest);
    case Combiner::kMin: return immediate(kInf, highest);
  }
  return Node();
}

Node Combine(Combiner combiner, const Node& accumulated, const Node& value) {
  switch (combiner) {
    case Combiner::kSum: return Binary("add", accumulated, value);
    case Combiner::kProd: return Binary("mul", accumulated, value);
    case Combiner::kMax: return Binary("max", accumulated, value);
    case Combiner::kMin: return Binary("min", accumulated, value);
  }
  return Node();
}

}  // namespace tir
}  // namespace kiln
