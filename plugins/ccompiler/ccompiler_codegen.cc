// The codegen kiln.ext.ccompiler (design §17): each region function PartitionGraph made becomes
// one C function in the Kiln calling convention (one DLTensor* per input, then one per output),
// a loop nest per op, constants as static arrays. All regions go into one "c_source" module:
// Kiln's runtime compiles it with the system C compiler into the exported .so (and into a
// temporary library when the model runs before export), so no runtime plugin is needed.
#include <kiln/ffi/registry.h>
#include <kiln/ir/expr_functor.h>
#include <kiln/ir/function.h>
#include <kiln/ir/op.h>
#include <kiln/runtime/artifact.h>
#include <kiln/transform/byoc.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

#include "ccompiler_ops.h"

namespace kiln {
namespace ccompiler {
namespace {

using ir::Expr;

int64_t NumElements(const std::vector<int64_t>& shape) {
  int64_t count = 1;
  for (int64_t dim : shape) count *= dim;
  return count;
}

/// `value` as an exact C float literal (hexadecimal), or INFINITY / NAN.
std::string FloatLiteral(double value) {
  if (std::isnan(value)) return "NAN";
  if (std::isinf(value)) return value > 0 ? "INFINITY" : "-INFINITY";
  char text[64];
  std::snprintf(text, sizeof(text), "%af", static_cast<double>(static_cast<float>(value)));
  return text;
}

/// `text` as a C string literal.
std::string StringLiteral(const std::string& text) {
  std::string literal = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') literal += '\\';
    literal += c;
  }
  return literal + "\"";
}

/// "2, 3": the extents, as a C initializer.
std::string JoinDims(const std::vector<int64_t>& shape) {
  std::string text;
  for (int64_t dim : shape) text += (text.empty() ? "" : ", ") + std::to_string(dim);
  return text;
}

/// "(2, 3)", "(4,)", "()": the shape as the errors and comments print it.
std::string ShapeText(const std::vector<int64_t>& shape) {
  return "(" + JoinDims(shape) + (shape.size() == 1 ? ",)" : ")");
}

/// Writes one region function as C.
class RegionEmitter {
 public:
  RegionEmitter(const ir::Function& function, std::string symbol)
      : function_(function), symbol_(std::move(symbol)) {}

  /// Static arrays of the constants, then the function.
  std::string Emit() {
    const size_t num_inputs = function_->params().size();
    std::vector<Expr> heads;
    if (const auto* tuple = function_->body().as<ir::TupleObj>()) {
      heads.assign(tuple->fields().begin(), tuple->fields().end());
    } else {
      heads.push_back(function_->body());
    }
    const size_t num_args = num_inputs + heads.size();
    body_ << "  (void)self;\n  (void)result;\n"
          << "  if (num_args != " << num_args << ") return kiln_error_set_raised_from_cstr("
          << "\"TypeError\", "
          << StringLiteral("'" + symbol_ + "' takes " + std::to_string(num_args) +
                           " arguments: " + std::to_string(num_inputs) + " inputs, then " +
                           std::to_string(heads.size()) + " outputs")
          << ");\n";
    for (size_t i = 0; i < num_inputs; ++i) {
      const ir::Var& param = function_->params()[i];
      const std::string name = "in" + std::to_string(i);
      values_[param.get()] = {
          name, ShapeOf(param->checked_type(), "input '" + param->name_hint().str() + "'")};
      CheckArgument(i, "input '" + param->name_hint().str() + "'", values_[param.get()]);
    }
    for (size_t j = 0; j < heads.size(); ++j) {
      const std::string name = "out" + std::to_string(j);
      const std::vector<int64_t> shape =
          ShapeOf(heads[j]->checked_type(), "output " + std::to_string(j));
      CheckArgument(num_inputs + j, "output " + std::to_string(j), {name, shape});
      // An op's result goes straight into the first output that returns it.
      if (heads[j].as<ir::CallObj>() != nullptr && values_.count(heads[j].get()) == 0) {
        values_[heads[j].get()] = {name, shape};
      }
    }
    ir::PostOrderVisit(function_->body(), [this](const Expr& expr) { Visit(expr); });
    for (size_t j = 0; j < heads.size(); ++j) CopyToOutput(heads[j], "out" + std::to_string(j));

    std::ostringstream c;
    c << "\n"
      << constants_.str() << (num_constants_ > 0 ? "\n" : "") << "int " << symbol_
      << "(void* self, const KilnAny* args, int32_t num_args, KilnAny* result) {\n"
      << body_.str();
    if (scratch_floats_ > 0) {
      c << "  float* scratch = (float*)malloc(" << scratch_floats_ << " * sizeof(float));\n"
        << "  if (scratch == NULL) return kiln_error_set_raised_from_cstr(\"RuntimeError\", "
        << StringLiteral("'" + symbol_ + "': out of memory") << ");\n";
    }
    c << loops_.str() << (scratch_floats_ > 0 ? "  free(scratch);\n" : "") << "  return 0;\n}\n";
    return c.str();
  }

 private:
  /// Where a value lives (a C pointer expression) and its shape.
  struct Value {
    std::string pointer;
    std::vector<int64_t> shape;
  };

  std::vector<int64_t> ShapeOf(const ir::Type& type, const std::string& what) const {
    std::string reason;
    std::optional<std::vector<int64_t>> shape = transform::StaticFloat32Shape(type, what, &reason);
    KILN_CHECK(shape.has_value(), NotImplementedError)
        << "ccompiler: '" << symbol_ << "': " << reason;
    return *shape;
  }

  /// Declares `value.pointer` as argument `index`, returning -1 from the function when the
  /// caller passed anything but a compact float32 CPU tensor of the value's shape.
  void CheckArgument(size_t index, const std::string& what, const Value& value) {
    const std::string message = "'" + symbol_ + "': " + what + " expects a compact float32 " +
                                ShapeText(value.shape) + " CPU tensor";
    body_ << "  float* " << value.pointer << " = kiln_cc_tensor(&args[" << index << "], "
          << value.shape.size() << ", "
          << (value.shape.empty() ? "NULL" : "(const int64_t[]){" + JoinDims(value.shape) + "}")
          << ", " << StringLiteral(message) << ");\n"
          << "  if (" << value.pointer << " == NULL) return -1;\n";
  }

  void Visit(const Expr& expr) {
    if (values_.count(expr.get()) != 0 && expr.as<ir::CallObj>() == nullptr) return;
    if (const auto* constant = expr.as<ir::ConstantObj>()) {
      AddConstant(expr, *constant);
    } else if (const auto* call = expr.as<ir::CallObj>()) {
      AddCall(expr, *call);
    } else if (expr.as<ir::OpObj>() == nullptr && expr.as<ir::VarObj>() == nullptr &&
               expr.get() != function_->body().get()) {
      KILN_THROW(NotImplementedError) << "ccompiler: '" << symbol_ << "' holds a "
                                      << expr->GetTypeKey() << ", which it cannot write in C";
    }
  }

  void AddConstant(const Expr& expr, const ir::ConstantObj& constant) {
    const Tensor& data = constant.data();
    KILN_CHECK(DataTypeEqual(data.dtype(), DLDataType{kDLFloat, 32, 1}) && data.IsContiguous() &&
                   data.device().device_type == kDLCPU,
               NotImplementedError)
        << "ccompiler: '" << symbol_ << "' has a constant that is not a compact float32 CPU tensor";
    const std::string name = symbol_ + "_const_" + std::to_string(num_constants_++);
    const Shape shape = data.shape();
    values_[expr.get()] = {name, std::vector<int64_t>(shape.begin(), shape.end())};
    const auto* floats = static_cast<const float*>(data.data());
    const int64_t count = data.NumElements();
    constants_ << "static const float " << name << "[" << std::max<int64_t>(count, 1) << "] = {";
    for (int64_t i = 0; i < count; ++i) {
      constants_ << (i % 6 == 0 ? "\n    " : " ") << FloatLiteral(floats[i]) << ",";
    }
    constants_ << "\n};\n";
  }

  void AddCall(const Expr& expr, const ir::CallObj& call) {
    const auto* op = call.op().as<ir::OpObj>();
    const COp* c_op = op != nullptr ? FindOp(op->name().str()) : nullptr;
    KILN_CHECK(c_op != nullptr, NotImplementedError)
        << "ccompiler: '" << symbol_ << "' calls "
        << (op != nullptr ? "op '" + op->name().str() + "'" : std::string("a function"))
        << ", which the plugin does not support";
    // The result was bound to an output; otherwise it takes a slice of the scratch buffer.
    auto bound = values_.find(expr.get());
    Value result;
    if (bound != values_.end()) {
      result = bound->second;
    } else {
      result.shape = ShapeOf(expr->checked_type(), "the result of " + c_op->op);
      result.pointer = "t" + std::to_string(num_temporaries_++);
      body_ << "  float* " << result.pointer << ";\n";
      loops_ << "  " << result.pointer << " = scratch + " << scratch_floats_ << ";\n";
      scratch_floats_ += NumElements(result.shape);
      values_[expr.get()] = result;
    }
    std::vector<Value> operands;
    for (const Expr& arg : call.args()) operands.push_back(values_.at(arg.get()));
    std::vector<std::string> extra;
    for (const std::string& attr : c_op->attrs) {
      extra.push_back(FloatLiteral(call.attrs().at(attr).cast<double>()));
    }
    EmitLoops(*c_op, result, operands, extra);
  }

  /// result[i...] = f(operand[i...]..., attrs...) over the result's shape. Operands of the
  /// result's size or of one element are read with one flat index; others broadcast, numpy
  /// style, through a loop nest whose index skips their dimensions of size 1.
  void EmitLoops(const COp& op, const Value& result, const std::vector<Value>& operands,
                 const std::vector<std::string>& extra) {
    const int64_t count = NumElements(result.shape);
    bool flat = true;
    for (const Value& operand : operands) {
      const int64_t size = NumElements(operand.shape);
      flat = flat && (size == count || size == 1);
    }
    const size_t rank = result.shape.size();
    std::string indent = "  ";
    std::string result_index = "i";
    loops_ << "  /* " << op.op << " " << ShapeText(result.shape) << " */\n";
    if (flat) {
      loops_ << indent << "for (int64_t i = 0; i < " << count << "; ++i)\n";
      indent += "  ";
    } else {
      for (size_t d = 0; d < rank; ++d, indent += "  ") {
        loops_ << indent << "for (int64_t i" << d << " = 0; i" << d << " < " << result.shape[d]
               << "; ++i" << d << ")\n";
      }
      result_index = NestIndex(result.shape, rank);
    }
    loops_ << indent << result.pointer << "[" << result_index << "] = " << op.FunctionName() << "(";
    for (size_t k = 0; k < operands.size(); ++k) {
      std::string index;
      if (flat) {
        index = NumElements(operands[k].shape) == count ? "i" : "0";
      } else {
        index = NestIndex(operands[k].shape, rank);
      }
      loops_ << (k == 0 ? "" : ", ") << operands[k].pointer << "[" << index << "]";
    }
    for (const std::string& value : extra) loops_ << ", " << value;
    loops_ << ");\n";
  }

  /// The flat index into a compact tensor of `shape` at loop indices i0..i<rank-1>, its
  /// dimensions aligned to the right; a dimension of size 1 is broadcast (not indexed).
  static std::string NestIndex(const std::vector<int64_t>& shape, size_t rank) {
    std::vector<int64_t> strides(shape.size(), 1);
    for (size_t d = shape.size(); d-- > 1;) strides[d - 1] = strides[d] * shape[d];
    std::string index;
    for (size_t d = 0; d < shape.size(); ++d) {
      if (shape[d] == 1) continue;
      index += index.empty() ? "" : " + ";
      index += "i" + std::to_string(rank - shape.size() + d);
      if (strides[d] != 1) index += " * " + std::to_string(strides[d]);
    }
    return index.empty() ? "0" : index;
  }

  /// Copies a head into output `out` unless it was computed there.
  void CopyToOutput(const Expr& head, const std::string& out) {
    const Value& value = values_.at(head.get());
    if (value.pointer == out) return;
    loops_ << "  memcpy(" << out << ", " << value.pointer << ", " << NumElements(value.shape)
           << " * sizeof(float));\n";
  }

  const ir::Function& function_;
  std::string symbol_;
  std::unordered_map<const Object*, Value> values_;
  std::ostringstream constants_;  // static arrays, before the function
  std::ostringstream body_;       // argument checks and declarations
  std::ostringstream loops_;      // the computation
  int num_constants_ = 0;
  int num_temporaries_ = 0;
  int64_t scratch_floats_ = 0;
};

KILN_REGISTER_GLOBAL("kiln.ext.ccompiler")
    .set_body_typed([](const Array<ir::Function>& functions, const Map<String, Any>&) {
      std::string code = Prelude();
      std::vector<std::string> symbols;
      for (const ir::Function& function : functions) {
        std::optional<String> symbol = function.GetAttr<String>(ir::attr::kGlobalSymbol);
        KILN_CHECK(symbol.has_value(), ValueError)
            << "ccompiler: a region function has no global_symbol";
        symbols.push_back(symbol->str());
        code += RegionEmitter(function, symbols.back()).Emit();
      }
      return Array<runtime::Module>{runtime::CSourceModuleCreate(code, symbols)};
    });

}  // namespace
}  // namespace ccompiler
}  // namespace kiln
