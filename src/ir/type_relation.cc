// Type relations: the context they read and the errors they raise, and the broadcast rule most
// of them share.
#include <kiln/ir/text_format.h>
#include <kiln/ir/type_relation.h>

#include <algorithm>
#include <sstream>

namespace kiln {
namespace ir {

namespace {

/// Binds every size variable of `type`'s shapes to [1, +inf) in `analyzer`.
void BindSizes(const Type& type, arith::Analyzer& analyzer) {
  if (const auto* tuple = type.as<TupleTypeObj>()) {
    for (const Type& field : tuple->fields()) BindSizes(field, analyzer);
    return;
  }
  const auto* tensor = type.as<TensorTypeObj>();
  if (tensor == nullptr) return;
  for (const Dim& dim : tensor->shape()) {
    if (dim.as_static().has_value()) continue;
    for (const std::string& name : arith::FreeSizeVars(dim.AsSizeExpr())) {
      analyzer.Bind(arith::SizeVar(String(name)), 1);
    }
  }
}

}  // namespace

TypeRelationContext::TypeRelationContext(Op op, const Array<Type>& arg_types,
                                         Map<String, Any> attrs)
    : op_(std::move(op)), arg_types_(arg_types.begin(), arg_types.end()), attrs_(std::move(attrs)) {
  // A size variable is an extent some tensor has at run time, and the runtime refuses a size
  // below 1 (kiln/runtime/shape_signature.h): relations may rely on it, so that a 3x3
  // convolution with padding 1 over `h` type-checks (docs/design.md §20).
  for (const Type& type : arg_types_) BindSizes(type, analyzer_);
}

const Type& TypeRelationContext::arg_type(int64_t i) const {
  KILN_ICHECK(i >= 0 && i < num_args()) << "argument " << i << " of " << num_args();
  return arg_types_[i];
}

const TensorTypeObj* TypeRelationContext::Tensor(int64_t i) const {
  const auto* tensor = arg_type(i).as<TensorTypeObj>();
  KILN_CHECK(tensor != nullptr, TypeError) << Describe(ArgName(i) + " must be a tensor");
  return tensor;
}

std::vector<int64_t> TypeRelationContext::StaticShape(int64_t i) const {
  std::vector<int64_t> shape;
  for (const Dim& dim : Tensor(i)->shape()) {
    std::optional<int64_t> extent = dim.as_static();
    KILN_CHECK(extent.has_value(), TypeError)
        << Describe(ArgName(i) + " needs a static shape, dimension " +
                    std::to_string(shape.size()) + " is " + dim.ToString());
    shape.push_back(*extent);
  }
  return shape;
}

std::vector<arith::SizeExpr> TypeRelationContext::Shape(int64_t i) const {
  std::vector<arith::SizeExpr> shape;
  for (const Dim& dim : Tensor(i)->shape()) shape.push_back(dim.AsSizeExpr());
  return shape;
}

std::vector<const TensorTypeObj*> TypeRelationContext::TensorTuple(int64_t i) const {
  const auto* tuple = arg_type(i).as<TupleTypeObj>();
  KILN_CHECK(tuple != nullptr, TypeError) << Describe(ArgName(i) + " must be a tuple of tensors");
  std::vector<const TensorTypeObj*> fields;
  for (const Type& field : tuple->fields()) {
    const auto* tensor = field.as<TensorTypeObj>();
    KILN_CHECK(tensor != nullptr, TypeError)
        << Describe(ArgName(i) + " must be a tuple of tensors, field " +
                    std::to_string(fields.size()) + " is not a tensor");
    fields.push_back(tensor);
  }
  return fields;
}

std::vector<int64_t> TypeRelationContext::IntsAttr(const char* name) const {
  std::vector<int64_t> values;
  for (const Any& item : Attr<Array<Any>>(name)) values.push_back(item.cast<int64_t>());
  return values;
}

namespace {

arith::SizeExpr ExtentOf(const Any& item) {
  if (item.type_index() == kKilnTypeInt) return arith::IntImm(item.cast<int64_t>());
  return item.cast<arith::SizeExpr>();
}

}  // namespace

std::vector<arith::SizeExpr> TypeRelationContext::SizesAttr(const char* name) const {
  std::vector<arith::SizeExpr> values;
  for (const Any& item : Attr<Array<Any>>(name)) values.push_back(ExtentOf(item));
  return values;
}

arith::SizeExpr TypeRelationContext::SizeAttr(const char* name) const {
  return ExtentOf(Attr<Any>(name));
}

std::vector<double> TypeRelationContext::FloatsAttr(const char* name) const {
  std::vector<double> values;
  for (const Any& item : Attr<Array<Any>>(name)) values.push_back(item.cast<double>());
  return values;
}

bool TypeRelationContext::HasAttr(const char* name) const {
  std::optional<Any> value = attrs_.Get(String(name));
  return value.has_value() && !value->is_none();
}

std::string TypeRelationContext::ArgName(int64_t i) const {
  const std::shared_ptr<const OpSchema> schema = op_.schema();
  if (schema != nullptr && i < static_cast<int64_t>(schema->inputs.size())) {
    return "'" + schema->inputs[i] + "' (argument " + std::to_string(i) + ")";
  }
  return "argument " + std::to_string(i);
}

std::string TypeRelationContext::Describe(const std::string& what) const {
  const std::shared_ptr<const OpSchema> schema = op_.schema();
  std::ostringstream out;
  out << op_->name().str() << ": " << what << "\n  (arguments: ";
  for (int64_t i = 0; i < num_args(); ++i) {
    if (i > 0) out << ", ";
    if (schema != nullptr && i < static_cast<int64_t>(schema->inputs.size())) {
      out << schema->inputs[i] << ": ";
    }
    const Type& type = arg_type(i);
    out << (type.defined() ? AsText(type) : std::string("<untyped>"));
  }
  out << ")";
  return out.str();
}

void TypeRelationContext::CheckNumArgs(int64_t n) const {
  KILN_CHECK(num_args() == n, TypeError)
      << Describe("takes " + std::to_string(n) + " arguments, got " + std::to_string(num_args()));
}

void TypeRelationContext::CheckSameDType(int64_t i, int64_t j) const {
  KILN_CHECK(DataTypeEqual(DType(i), DType(j)), TypeError)
      << Describe(ArgName(i) + " and " + ArgName(j) + " must have the same dtype, got " +
                  DataTypeToString(DType(i)) + " and " + DataTypeToString(DType(j)));
}

int64_t TypeRelationContext::NormalizeAxis(int64_t axis, int64_t rank, const char* attr) const {
  KILN_CHECK(axis >= -rank && axis < rank, TypeError)
      << Describe(std::string("attribute '") + attr + "' = " + std::to_string(axis) +
                  " is out of range for rank " + std::to_string(rank));
  return axis < 0 ? axis + rank : axis;
}

namespace {
thread_local SizeCheckCollector* active_collector = nullptr;
}  // namespace

SizeCheckCollector::SizeCheckCollector() : outer_(active_collector) { active_collector = this; }

SizeCheckCollector::~SizeCheckCollector() { active_collector = outer_; }

void SizeCheckCollector::Add(SizeCheck check) {
  for (const SizeCheck& known : checks_) {
    if (arith::StructuralEqual(known.lhs, check.lhs) && known.relation == check.relation &&
        arith::StructuralEqual(known.rhs, check.rhs) && known.message == check.message) {
      return;
    }
  }
  checks_.push_back(std::move(check));
}

void TypeRelationContext::DeferCheck(const arith::SizeExpr& lhs, const std::string& relation,
                                     const arith::SizeExpr& rhs, const std::string& what) const {
  if (active_collector != nullptr) active_collector->Add({lhs, relation, rhs, Describe(what)});
}

Type TypeRelationContext::TensorResult(const std::vector<int64_t>& shape, DLDataType dtype) {
  return TensorType::Static(shape, dtype);
}

Type TypeRelationContext::TensorResult(const std::vector<arith::SizeExpr>& shape,
                                       DLDataType dtype) {
  Array<Dim> dims;
  for (const arith::SizeExpr& extent : shape) dims.push_back(Dim::FromSizeExpr(extent));
  return TensorType(dims, dtype);
}

kiln::Function MakeTypeRelationFunction(TypeRelation relation) {
  return kiln::Function::FromTyped(
      [relation](const Op& op, const Array<Type>& arg_types, const Map<String, Any>& attrs) {
        return relation(TypeRelationContext(op, arg_types, attrs));
      },
      "FInferType");
}

Type InferCallType(const Op& op, const Array<Type>& arg_types, const Map<String, Any>& attrs) {
  std::optional<kiln::Function> relation = op.GetAttr<kiln::Function>(op_attr::kFInferType);
  KILN_CHECK(relation.has_value(), TypeError)
      << "op '" << op->name().str()
      << "' has no type relation: register one with set_type_relation (C++) or the "
         "FInferType attribute";
  Any result = (*relation)(op, arg_types, attrs);
  std::optional<Type> type = result.as<Type>();
  KILN_CHECK(type.has_value() && type->defined(), TypeError)
      << "the type relation of op '" << op->name().str() << "' returned a " << result.type_str()
      << " instead of a type";
  return *type;
}

std::string ShapeToText(const std::vector<int64_t>& shape) {
  std::string out = "(";
  for (size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + ")";
}

std::string ShapeToText(const std::vector<arith::SizeExpr>& shape) {
  std::string out = "(";
  for (size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + shape[i].ToString();
  return out + ")";
}

std::optional<std::vector<int64_t>> BroadcastShapes(const std::vector<int64_t>& a,
                                                    const std::vector<int64_t>& b) {
  const size_t rank = std::max(a.size(), b.size());
  std::vector<int64_t> out(rank);
  for (size_t i = 0; i < rank; ++i) {
    // Aligned from the right; a missing dimension acts as 1.
    const int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1) return std::nullopt;
    out[i] = da == 1 ? db : da;
  }
  return out;
}

}  // namespace ir
}  // namespace kiln
