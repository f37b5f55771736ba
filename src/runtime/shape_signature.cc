// Binding size variables from a call's arguments and evaluating shapes with them
// (kiln/runtime/shape_signature.h). This runs on every call of a symbolic graph or function,
// so the common extents, constants and bare variables, skip the general evaluator.
#include <kiln/ffi/error.h>
#include <kiln/runtime/shape_signature.h>

#include <algorithm>
#include <map>
#include <sstream>
#include <utility>

namespace kiln {
namespace runtime {

std::string SymbolicShapeToString(const SymbolicShape& shape) {
  std::ostringstream os;
  os << "(";
  for (size_t i = 0; i < shape.size(); ++i) os << (i == 0 ? "" : ", ") << shape[i];
  os << (shape.size() == 1 ? ",)" : ")");
  return os.str();
}

bool IsStatic(const SymbolicShape& shape) {
  return std::all_of(shape.begin(), shape.end(),
                     [](const arith::SizeExpr& extent) { return extent.as_int().has_value(); });
}

SymbolicShape FromStatic(const std::vector<int64_t>& shape) {
  SymbolicShape symbolic;
  for (int64_t extent : shape) symbolic.push_back(arith::IntImm(extent));
  return symbolic;
}

arith::SizeExpr ParseExtent(std::string_view text, const std::string& what) {
  arith::SizeExprParseResult parsed = arith::TryParseSizeExpr(text);
  KILN_CHECK(parsed.expr.defined(), ValueError)
      << what << ": the extent '" << text << "' is not a size expression (" << parsed.error
      << " at column " << parsed.error_offset + 1 << ")";
  return parsed.expr;
}

ShapeSignature::ShapeSignature(std::vector<SymbolicShape> args, std::vector<std::string> names)
    : args_(std::move(args)), names_(std::move(names)) {
  KILN_ICHECK(args_.size() == names_.size()) << "ShapeSignature: one name per argument";
  for (size_t arg = 0; arg < args_.size(); ++arg) {
    all_static_ = all_static_ && IsStatic(args_[arg]);
    for (size_t axis = 0; axis < args_[arg].size(); ++axis) {
      const auto* var = args_[arg][axis].as<arith::SizeVarObj>();
      if (var == nullptr) continue;
      const std::string name = var->name().str();
      if (std::find(variables_.begin(), variables_.end(), name) != variables_.end()) continue;
      variables_.push_back(name);
      sources_.push_back(Source{arg, axis});
    }
  }
  for (size_t arg = 0; arg < args_.size(); ++arg) {
    for (const arith::SizeExpr& extent : args_[arg]) CheckReadable({extent}, names_[arg]);
  }
}

void ShapeSignature::CheckReadable(const SymbolicShape& shape, const std::string& what) const {
  for (const arith::SizeExpr& extent : shape) {
    for (const std::string& name : arith::FreeSizeVars(extent)) {
      KILN_CHECK(std::find(variables_.begin(), variables_.end(), name) != variables_.end(),
                 ValueError)
          << what << " of shape " << SymbolicShapeToString(shape) << " depends on the size '"
          << name << "', which no argument gives as one of its extents";
    }
  }
}

std::string ShapeSignature::DescribeValues(const std::vector<int64_t>& values) const {
  std::string text;
  for (size_t i = 0; i < variables_.size(); ++i) {
    text += (i == 0 ? "" : ", ") + variables_[i] + " = " + std::to_string(values[i]) + " (from " +
            names_[sources_[i].arg] + ", axis " + std::to_string(sources_[i].axis) + ")";
  }
  return text;
}

std::vector<int64_t> ShapeSignature::Bind(const std::vector<const DLTensor*>& args,
                                          const char* caller) const {
  KILN_ICHECK(args.size() == args_.size()) << "ShapeSignature::Bind: one tensor per argument";
  for (size_t arg = 0; arg < args.size(); ++arg) {
    KILN_CHECK(static_cast<size_t>(args[arg]->ndim) == args_[arg].size(), ValueError)
        << caller << ": " << names_[arg] << " has rank " << args[arg]->ndim << ", expected rank "
        << args_[arg].size() << " " << SymbolicShapeToString(args_[arg]) << ", got shape "
        << Shape(args[arg]->shape, args[arg]->ndim);
  }
  std::vector<int64_t> values;
  for (size_t i = 0; i < sources_.size(); ++i) {
    const Source& source = sources_[i];
    values.push_back(args[source.arg]->shape[source.axis]);
    // The compiler proved the model's shapes for sizes of at least 1 (an empty batch would
    // make a padded convolution's output size negative, for one).
    KILN_CHECK(values.back() >= 1, ValueError)
        << caller << ": " << names_[source.arg] << " has extent " << values.back() << " at axis "
        << source.axis << ", the size '" << variables_[i] << "', which must be at least 1";
  }
  for (size_t arg = 0; arg < args.size(); ++arg) {
    const std::vector<int64_t> expected = Evaluate(args_[arg], values, names_[arg]);
    for (size_t axis = 0; axis < expected.size(); ++axis) {
      const int64_t got = args[arg]->shape[axis];
      if (got == expected[axis]) continue;
      const arith::SizeExpr& extent = args_[arg][axis];
      std::ostringstream needs;
      needs << extent;
      if (!extent.as_int().has_value()) needs << " = " << expected[axis];
      KILN_THROW(ValueError) << caller << ": " << names_[arg] << " has extent " << got
                             << " at axis " << axis << ", where the model needs " << needs.str()
                             << " (it takes " << SymbolicShapeToString(args_[arg]) << ", got "
                             << Shape(args[arg]->shape, args[arg]->ndim)
                             << (variables_.empty() ? "" : "; " + DescribeValues(values)) << ")";
    }
  }
  return values;
}

std::vector<int64_t> ShapeSignature::Evaluate(const SymbolicShape& shape,
                                              const std::vector<int64_t>& values,
                                              const std::string& what) const {
  std::vector<int64_t> result;
  result.reserve(shape.size());
  std::map<std::string, int64_t> by_name;
  for (const arith::SizeExpr& extent : shape) {
    if (std::optional<int64_t> constant = extent.as_int()) {
      result.push_back(*constant);
      continue;
    }
    if (by_name.empty()) {
      for (size_t i = 0; i < variables_.size(); ++i) by_name.emplace(variables_[i], values[i]);
    }
    const int64_t value = arith::Evaluate(extent, by_name);
    KILN_CHECK(value >= 0, ValueError) << what << " of shape " << SymbolicShapeToString(shape)
                                       << " would have the negative extent " << value << " ("
                                       << extent << ") where " << DescribeValues(values);
    result.push_back(value);
  }
  return result;
}

}  // namespace runtime
}  // namespace kiln
