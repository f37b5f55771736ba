// Binding size variables from a call's arguments and evaluating shapes with them
// (kiln/runtime/shape_signature.h). This runs on every call of a symbolic graph or function,
// so the common extents, constants and bare variables, skip the general evaluator.
#include <kiln/ffi/error.h>
#include <kiln/runtime/shape_signature.h>

#include <algorithm>
#include <map>
#include <optional>
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

ShapeSignature::ShapeSignature(std::vector<SymbolicShape> args, std::vector<std::string> names,
                               int64_t min_size)
    : args_(std::move(args)), names_(std::move(names)), min_size_(min_size) {
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
  AddSolvedSources();
  AddProducts();
  for (size_t arg = 0; arg < args_.size(); ++arg) {
    for (const arith::SizeExpr& extent : args_[arg]) CheckReadable({extent}, names_[arg]);
  }
}

void ShapeSignature::AddProducts() {
  for (size_t arg = 0; arg < args_.size(); ++arg) {
    for (size_t axis = 0; axis < args_[arg].size(); ++axis) {
      const arith::SizeExpr extent = WithProducts(args_[arg][axis]);
      const std::vector<std::string> names = arith::FreeSizeVars(extent);
      const bool unknown = std::any_of(names.begin(), names.end(), [&](const std::string& name) {
        return std::find(variables_.begin(), variables_.end(), name) == variables_.end();
      });
      if (!unknown) continue;
      arith::SizeVar var(String("kiln_product_" + std::to_string(products_.size())));
      products_.emplace_back(args_[arg][axis], var);
      variables_.push_back(var->name().str());
      sources_.push_back(Source{arg, axis});
    }
  }
}

arith::SizeExpr ShapeSignature::WithProducts(const arith::SizeExpr& extent) const {
  if (products_.empty()) return extent;
  for (const auto& [product, var] : products_) {
    if (arith::StructuralEqual(product, extent)) return var;
  }
  const auto* node = extent.as<arith::BinaryObj>();
  if (node == nullptr) return extent;
  return arith::MakeBinary(node->op(), WithProducts(node->a()), WithProducts(node->b()));
}

void ShapeSignature::AddSolvedSources() {
  for (bool progress = true; progress;) {
    progress = false;
    for (size_t arg = 0; arg < args_.size(); ++arg) {
      for (size_t axis = 0; axis < args_[arg].size(); ++axis) {
        std::vector<std::string> unknown;
        for (const std::string& name : arith::FreeSizeVars(args_[arg][axis])) {
          if (std::find(variables_.begin(), variables_.end(), name) == variables_.end()) {
            unknown.push_back(name);
          }
        }
        if (unknown.size() != 1) continue;
        variables_.push_back(unknown[0]);
        sources_.push_back(Source{arg, axis, /*solved=*/true});
        progress = true;
      }
    }
  }
}

int64_t ShapeSignature::Solve(size_t i, const std::vector<int64_t>& values, int64_t extent) const {
  const arith::SizeExpr& expr = args_[sources_[i].arg][sources_[i].axis];
  std::map<std::string, int64_t> by_name;
  for (size_t j = 0; j < i; ++j) by_name.emplace(variables_[j], values[j]);
  auto at = [&](int64_t value) -> std::optional<int64_t> {
    by_name[variables_[i]] = value;
    try {
      return arith::Evaluate(expr, by_name);
    } catch (const Error&) {
      return std::nullopt;  // a division by zero or an overflow: not this value
    }
  };
  // Extents are almost always a * v + b: read a and b off two points and invert.
  const std::optional<int64_t> one = at(1);
  const std::optional<int64_t> two = at(2);
  if (one.has_value() && two.has_value() && *two > *one) {
    const int64_t slope = *two - *one;
    const int64_t offset = *one - slope;
    // Exact where a * v + b can reach the extent; otherwise the value below, which the caller's
    // check of every extent refutes with an extent close to the one given.
    return std::max(min_size_, (extent - offset) / slope);
  }
  return min_size_;
}

void ShapeSignature::CheckReadable(const SymbolicShape& shape, const std::string& what) const {
  for (const arith::SizeExpr& extent : shape) {
    for (const std::string& name : arith::FreeSizeVars(WithProducts(extent))) {
      KILN_CHECK(std::find(variables_.begin(), variables_.end(), name) != variables_.end(),
                 ValueError)
          << what << " of shape " << SymbolicShapeToString(shape) << " depends on the size '"
          << name << "', which no argument gives as one of its extents";
    }
  }
}

std::string ShapeSignature::SizeName(size_t i) const {
  const size_t first_product = variables_.size() - products_.size();
  return i < first_product ? variables_[i] : products_[i - first_product].first.ToString();
}

std::string ShapeSignature::DescribeValues(const std::vector<int64_t>& values) const {
  std::string text;
  for (size_t i = 0; i < variables_.size(); ++i) {
    text += (i == 0 ? "" : ", ") + SizeName(i) + " = " + std::to_string(values[i]) + " (from " +
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
    const int64_t extent = args[source.arg]->shape[source.axis];
    values.push_back(source.solved ? Solve(i, values, extent) : extent);
    // The compiler proved the model's shapes for sizes of at least 1 (an empty batch would
    // make a padded convolution's output size negative, for one).
    KILN_CHECK(values.back() >= min_size_, ValueError)
        << caller << ": " << names_[source.arg] << " has extent " << values.back() << " at axis "
        << source.axis << ", the size '" << SizeName(i) << "', which must be at least "
        << min_size_;
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
                                              const std::string& what, bool extents) const {
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
    const int64_t value = arith::Evaluate(WithProducts(extent), by_name);
    KILN_CHECK(value >= 0 || !extents, ValueError)
        << what << " of shape " << SymbolicShapeToString(shape)
        << " would have the negative extent " << value << " (" << extent << ") where "
        << DescribeValues(values);
    result.push_back(value);
  }
  return result;
}

}  // namespace runtime
}  // namespace kiln
