// Lowering a fused group to one prim_func (kiln/tir/lower.h, docs/design.md §24): each op's
// compute rule gives its output element as a value over its inputs' elements, and a consumer's
// loads of a producer's placeholder are replaced by the producer's value at those indices, so a
// chain becomes one expression in one loop nest. Reductions read by other ops of the group are
// computed first into a buffer (a stage); `reduce` values become loops over an accumulator.
#include <kiln/arith/analyzer.h>
#include <kiln/ffi/registry.h>
#include <kiln/ir/expr.h>
#include <kiln/ir/expr_functor.h>
#include <kiln/ir/op.h>
#include <kiln/tir/builtin_nodes.h>
#include <kiln/tir/compute.h>
#include <kiln/tir/lower.h>

#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

namespace kiln {
namespace tir {
namespace {

using arith::SizeExpr;
using ir::Expr;
using Indices = std::vector<SizeExpr>;

constexpr DLDataType kBool{kDLUInt, 1, 1};
/// Past these, a group stays with the kernels: the generated expression is printed as a tree,
/// so a value used many times is written many times, and deep nesting is refused by the
/// traversals (internal::kMaxDepth).
constexpr size_t kMaxOps = 48;
constexpr int64_t kMaxValueNodes = 20000;
/// Accumulator lanes of a reduction over a long axis: 16 floats fill an AVX-512 vector.
constexpr int64_t kReductionLanes = 16;
/// A value cached per row (CacheSharedValue) lives on the thread's stack, as the C codegen
/// places local buffers of up to 1024 elements; it is found by comparing subtrees of values of
/// at most kMaxRowCacheSearch nodes.
constexpr int64_t kMaxRowCache = 1024;
constexpr int64_t kMaxRowCacheSearch = 2000;

/// Thrown inside the lowering to decline the group; never escapes it.
struct Declined {
  std::string why;
};

bool Supported(DLDataType dtype) {
  if (dtype.lanes != 1) return false;
  if (dtype.code == kDLFloat) return dtype.bits == 32 || dtype.bits == 64;
  if (DataTypeEqual(dtype, kBool)) return true;
  return (dtype.code == kDLInt || dtype.code == kDLUInt) &&
         (dtype.bits == 8 || dtype.bits == 16 || dtype.bits == 32 || dtype.bits == 64);
}

ir::TensorType TensorTypeOf(const Expr& expr) {
  const auto* type = expr->checked_type().as<ir::TensorTypeObj>();
  if (type == nullptr) throw Declined{"a value that is not a tensor (a tuple)"};
  if (!Supported(type->dtype())) {
    throw Declined{"dtype " + DataTypeToString(type->dtype()) + " has no generated code"};
  }
  return Downcast<ir::TensorType>(expr->checked_type());
}

Indices ShapeOf(const ir::TensorType& type) {
  Indices shape;
  for (const ir::Dim& dim : type->shape()) shape.push_back(dim.AsSizeExpr());
  return shape;
}

Indices ShapeOf(const Node& buffer) {
  Indices shape;
  for (const Any& extent : buffer.field_as<Array<Any>>("shape")) {
    shape.push_back(extent.cast<SizeExpr>());
  }
  return shape;
}

/// The immediate a one-element constant is, or nullopt.
std::optional<Node> ScalarImmediate(const Tensor& data) {
  const DLDataType dtype = data.dtype();
  if (data.NumElements() != 1 || !Supported(dtype)) return std::nullopt;
  const void* p = static_cast<const char*>(data.data()) + data.dl_tensor().byte_offset;
  if (dtype.code == kDLFloat) {
    const double value =
        dtype.bits == 32 ? *static_cast<const float*>(p) : *static_cast<const double*>(p);
    return FloatImm(value, dtype);
  }
  int64_t value = 0;
  switch (dtype.bits) {
    case 1:
    case 8:
      value =
          dtype.code == kDLInt ? *static_cast<const int8_t*>(p) : *static_cast<const uint8_t*>(p);
      break;
    case 16:
      value =
          dtype.code == kDLInt ? *static_cast<const int16_t*>(p) : *static_cast<const uint16_t*>(p);
      break;
    case 32:
      value =
          dtype.code == kDLInt ? *static_cast<const int32_t*>(p) : *static_cast<const uint32_t*>(p);
      break;
    default: value = *static_cast<const int64_t*>(p); break;
  }
  return IntImm(value, dtype);
}

/// Whether `expr` is a sum of variables and constants with constant factors, whose interval
/// bound is exact when each variable appears once (as after simplification).
bool IsAffine(const SizeExpr& expr) {
  if (expr.as<arith::SizeVarObj>() != nullptr || expr.as_int().has_value()) return true;
  const auto* binary = expr.as<arith::BinaryObj>();
  if (binary == nullptr) return false;
  switch (binary->op()) {
    case arith::BinaryOp::kAdd:
    case arith::BinaryOp::kSub: return IsAffine(binary->a()) && IsAffine(binary->b());
    case arith::BinaryOp::kMul:
      return (binary->a().as_int().has_value() && IsAffine(binary->b())) ||
             (binary->b().as_int().has_value() && IsAffine(binary->a()));
    default: return false;
  }
}

/// The nodes `value` prints as (a tree), counting each use of a shared node.
int64_t TreeSize(const Node& value, std::unordered_map<const Object*, int64_t>* memo) {
  auto it = memo->find(value.get());
  if (it != memo->end()) return it->second;
  int64_t size = 1;
  for (size_t i = 0; i < value->info().fields.size(); ++i) {
    const FieldKind kind = value->info().fields[i].kind;
    const Any& field = value->fields()[i];
    if (kind == FieldKind::kValue) size += TreeSize(field.cast<Node>(), memo);
    if (kind == FieldKind::kValues) {
      for (const Any& item : field.cast<Array<Any>>()) size += TreeSize(item.cast<Node>(), memo);
    }
    if (size > kMaxValueNodes) break;
  }
  memo->emplace(value.get(), size);
  return size;
}

class GroupLowering {
 public:
  GroupLowering(const ir::Function& func, const Array<Expr>& args) : func_(func), args_(args) {}

  LoweredGroup Run(const std::string& name) {
    LoweredGroup result;
    try {
      result.func = Lower(name, &result.arguments);
    } catch (const Declined& declined) {
      result = LoweredGroup{};
      result.declined = declined.why;
      return result;
    }
    std::tie(result.func, result.schedule) = ScheduleGroup(result.func, OpsByPrecedence());
    return result;
  }

 private:
  Node Lower(const std::string& name, std::vector<size_t>* arguments) {
    std::vector<Node> params;
    for (int64_t i = 0; i < func_->params().size(); ++i) {
      const ir::Var& param = func_->params()[i];
      if (const auto* constant = args_[i].as<ir::ConstantObj>()) {
        if (std::optional<Node> immediate = ScalarImmediate(constant->data())) {
          values_.emplace(param.get(), *immediate);
          continue;
        }
      }
      const ir::TensorType type = TensorTypeOf(param);
      const Node buffer = Buffer(NewName("in"), type->dtype(), ShapeOf(type));
      buffers_.emplace(param.get(), buffer);
      params.push_back(buffer);
      arguments->push_back(static_cast<size_t>(i));
    }
    std::vector<Expr> outputs{func_->body()};
    if (const auto* tuple = func_->body().as<ir::TupleObj>()) {
      outputs.assign(tuple->fields().begin(), tuple->fields().end());
    }
    std::unordered_map<const Object*, Node> output_buffers;
    std::vector<Node> output_params;
    for (const Expr& output : outputs) {
      const ir::TensorType type = TensorTypeOf(output);
      output_params.push_back(Buffer(NewName("out"), type->dtype(), ShapeOf(type)));
      output_buffers.emplace(output.get(), output_params.back());
    }
    params.insert(params.end(), output_params.begin(), output_params.end());

    std::vector<Expr> reductions;
    size_t ops = 0;
    const std::vector<Expr> calls = PostOrderCalls(func_->body());
    for (const Expr& expr : calls) {
      if (++ops > kMaxOps) throw Declined{"more than " + std::to_string(kMaxOps) + " ops"};
      if (Downcast<ir::Op>(expr.as<ir::CallObj>()->op()).pattern() == ir::OpPattern::kCommReduce) {
        reductions.push_back(expr);
      }
    }
    if (std::optional<Node> product = ProductWithEpilogue(calls, outputs, output_params)) {
      return Simplified(name, params, *product);
    }
    if (outputs.size() == 1 && output_buffers.count(outputs[0].get()) != 0) {
      if (std::optional<Node> rows = RowStages(reductions, outputs[0], output_params[0])) {
        return Simplified(name, params, *rows);
      }
    }
    // Reductions first, each into its output or a buffer of its own, then the other outputs.
    std::vector<Node> stages;
    std::vector<Node> temps;
    for (const Expr& expr : reductions) {
      auto out = output_buffers.find(expr.get());
      Node buffer;
      if (out != output_buffers.end()) {
        buffer = out->second;
      } else {
        const ir::TensorType type = TensorTypeOf(expr);
        buffer = Buffer(NewName("stage"), type->dtype(), ShapeOf(type));
        temps.push_back(buffer);
      }
      stages.push_back(Stage(buffer, expr));
      buffers_.emplace(expr.get(), buffer);
    }
    for (size_t k = 0; k < outputs.size(); ++k) {
      if (buffers_.count(outputs[k].get()) == 0 || outputs[k].as<ir::VarObj>() != nullptr) {
        stages.push_back(Stage(output_params[k], outputs[k]));
      }
    }
    Node body = stages.size() == 1 ? stages[0] : Seq(stages);
    for (auto temp = temps.rbegin(); temp != temps.rend(); ++temp) {
      body = Allocate(*temp, "global", body);
    }
    return Simplified(name, params, body);
  }

  /// The prim_func, simplified: index arithmetic of the rules (a reshape's flattening) folds
  /// away where the loop bounds decide it.
  static Node Simplified(const std::string& name, const std::vector<Node>& params,
                         const Node& body) {
    return Function::GetGlobalRequired("tir.pass.simplify")(PrimFunc(name, params, body))
        .cast<Node>();
  }

  /// Row statistics computed at their row (compute-at): when every reduction of the group keeps
  /// the output's leading axes and reduces the others to extent 1 (softmax's maximum and sum, a
  /// layer norm's mean and variance), each is computed inside the output's loops over those
  /// axes, into a local scalar the rest of the row reads. One pass over each row replaces one
  /// pass over the whole tensor per reduction, and no stage buffer is allocated. A value that a
  /// reduction and the output both compute is computed once into a row buffer
  /// (CacheSharedValue), and divisions by a statistic become multiplications
  /// (MultiplyByReciprocals). nullopt when the group is not of that form (or has no reduction,
  /// or one that is an output).
  std::optional<Node> RowStages(const std::vector<Expr>& reductions, const Expr& output,
                                const Node& out) {
    const Indices out_shape = ShapeOf(out);
    size_t kept = 0;  // the leading axes shared with the output
    for (const Expr& reduction : reductions) {
      if (reduction.same_as(output)) return std::nullopt;
      const Indices shape = ShapeOf(TensorTypeOf(reduction));
      if (shape.size() != out_shape.size()) return std::nullopt;
      size_t leading = shape.size();
      while (leading > 0 && shape[leading - 1].as_int() == 1) --leading;
      for (size_t d = 0; d < leading; ++d) {
        if (!arith::StructuralEqual(shape[d], out_shape[d])) return std::nullopt;
      }
      if (leading == 0 || (kept != 0 && leading != kept)) return std::nullopt;
      kept = leading;
    }
    if (kept == 0) return std::nullopt;
    Indices row;
    for (size_t d = 0; d < kept; ++d) row.push_back(NewLoopVar(out_shape[d]));
    std::vector<Node> values;
    std::vector<Node> locals;
    std::unordered_map<const Object*, Node> local_of;  // stage placeholder -> row scalar
    for (const Expr& reduction : reductions) {
      Indices at = row;
      at.resize(out_shape.size(), arith::IntImm(0));
      values.push_back(ValueOf(reduction, at, /*materialized=*/false));
      locals.push_back(Buffer(NewName("row"), values.back()->dtype(), {arith::IntImm(1)}));
      const ir::TensorType type = TensorTypeOf(reduction);
      const Node stage = Buffer(NewName("stage"), type->dtype(), ShapeOf(type));
      local_of.emplace(stage.get(), locals.back());
      buffers_.emplace(reduction.get(), stage);
    }
    Indices element = row;
    for (size_t d = kept; d < out_shape.size(); ++d) element.push_back(NewLoopVar(out_shape[d]));
    Node out_value = ValueOf(output, element, false);
    const Row row_shape{
        Indices(element.begin() + static_cast<std::ptrdiff_t>(kept), element.end()),
        Indices(out_shape.begin() + static_cast<std::ptrdiff_t>(kept), out_shape.end())};
    const std::optional<Node> cache = CacheSharedValue(row_shape, &values, &out_value);
    std::vector<Node> statements;  // statement k computes reduction k
    for (size_t k = 0; k < values.size(); ++k) {
      statements.push_back(StoreWithReductions(locals[k], {arith::IntImm(0)}, values[k]));
    }
    statements.push_back(
        LoopNest(row_shape.vars, row_shape.extents, StoreWithReductions(out, element, out_value)));
    if (!ReadRowScalars(local_of, row, &statements)) {
      for (const Expr& reduction : reductions) buffers_.erase(reduction.get());
      fills_.clear();
      return std::nullopt;
    }
    Node body = Seq(MultiplyByReciprocals(statements, &locals));
    if (cache.has_value()) body = Allocate(*cache, "local", body);
    for (auto local = locals.rbegin(); local != locals.rend(); ++local) {
      body = Allocate(*local, "local", body);
    }
    return LoopNest(row, out_shape, body);
  }

  /// Makes `statements` read each statistic's row scalar (`local_of` its stage placeholder)
  /// where they read the statistic at the row's own element; false when they read one elsewhere.
  static bool ReadRowScalars(const std::unordered_map<const Object*, Node>& local_of,
                             const Indices& row, std::vector<Node>* statements) {
    bool at_row = true;
    for (Node& statement : *statements) {
      statement = Mutate(statement, [&](const Node& node) -> std::optional<Node> {
        if (!node.is("load")) return std::nullopt;
        auto local = local_of.find(node.field_as<Node>("buffer").get());
        if (local == local_of.end()) return std::nullopt;
        const auto indices = node.field_as<Array<Any>>("indices");
        for (int64_t d = 0; d < indices.size(); ++d) {
          const auto index = indices[d].cast<SizeExpr>();
          const auto axis = static_cast<size_t>(d);
          at_row = at_row && (axis < row.size() ? arith::StructuralEqual(index, row[axis])
                                                : index.as_int() == 0);
        }
        return Load(local->second, {arith::IntImm(0)});
      });
    }
    return at_row;
  }

  /// `statements` of a row, where statement k computes the row scalar `locals[k]`, with each
  /// float division by a row scalar made a multiplication by its reciprocal, computed once right
  /// after the scalar (and added to `locals`): a division per element costs as much as several
  /// multiplications, and the hand-written softmax and layer norm kernels do the same. The
  /// product may differ from the quotient in the last bit.
  std::vector<Node> MultiplyByReciprocals(const std::vector<Node>& statements,
                                          std::vector<Node>* locals) {
    std::unordered_map<const Object*, size_t> scalar_index;
    for (size_t k = 0; k < locals->size(); ++k) scalar_index.emplace((*locals)[k].get(), k);
    std::map<size_t, Node> reciprocal_of;  // by scalar index
    std::vector<Node> rewritten;
    rewritten.reserve(statements.size());
    for (const Node& statement : statements) {
      rewritten.push_back(Mutate(statement, [&](const Node& node) -> std::optional<Node> {
        if (!node.is("div") || node->dtype().code != kDLFloat) return std::nullopt;
        const auto divisor = node.field_as<Node>("b");
        if (!divisor.is("load")) return std::nullopt;
        auto scalar = scalar_index.find(divisor.field_as<Node>("buffer").get());
        if (scalar == scalar_index.end()) return std::nullopt;
        auto [reciprocal, added] = reciprocal_of.try_emplace(scalar->second);
        if (added) {
          reciprocal->second = Buffer(NewName("reciprocal"), node->dtype(), {arith::IntImm(1)});
        }
        return Binary("mul", node.field_as<Node>("a"),
                      Load(reciprocal->second, {arith::IntImm(0)}));
      }));
    }
    std::vector<Node> result;
    for (size_t i = 0; i < rewritten.size(); ++i) {
      result.push_back(rewritten[i]);
      for (const auto& [k, reciprocal] : reciprocal_of) {
        if (k != i) continue;
        const Node scalar = Load((*locals)[k], {arith::IntImm(0)});
        result.push_back(Store(reciprocal, {arith::IntImm(0)},
                               Binary("div", FloatImm(1.0, scalar->dtype()), scalar)));
        locals->push_back(reciprocal);
      }
    }
    return result;
  }

  /// The loops over one row of the output: its trailing axes, after the kept ones.
  struct Row {
    Indices vars;
    Indices extents;
  };

  /// A value stored into the row buffer `buffer` by the reduction whose axes index it.
  struct SharedValue {
    Node buffer;
    Node value;
  };

  /// Where a reduction's source computes a value the output computes too: the row `buffer`
  /// to hold it, the `value` at the row's variables and at the reduction's axes (`fill`), and
  /// the `source` that reads the buffer instead.
  struct CachedSource {
    Node buffer;
    Node value;
    Node fill;
    Node source;
  };

  /// The first value that a reduction sums (or combines otherwise) and the output also computes,
  /// at each element of the row, when it calls an intrinsic: softmax's exponentials, summed and
  /// then divided. The reduction's loop stores it into a row buffer as it combines it
  /// (Accumulate, through fills_), and the output reads it from there, instead of computing it
  /// twice per element. `reductions` and `output` are rewritten to read it. Returns the buffer;
  /// nullopt when there is no such value, or the row is longer than a thread's stack buffer.
  std::optional<Node> CacheSharedValue(const Row& row, std::vector<Node>* reductions,
                                       Node* output) {
    SizeExpr elements = arith::IntImm(1);
    for (const SizeExpr& extent : row.extents) elements = elements * extent;
    const std::optional<int64_t> count = arith::Analyzer().Simplify(elements).as_int();
    std::unordered_map<const Object*, int64_t> sizes;
    if (row.vars.empty() || !count.has_value() || *count > kMaxRowCache ||
        TreeSize(*output, &sizes) > kMaxRowCacheSearch) {
      return std::nullopt;
    }
    for (Node& reduction : *reductions) {
      std::optional<CachedSource> cached;
      const Node rewritten = Mutate(reduction, [&](const Node& node) -> std::optional<Node> {
        if (cached.has_value() || !node.is("reduce")) return std::nullopt;
        cached = FindCachedSource(row, node, *output);
        if (!cached.has_value()) return std::nullopt;
        const Node reduce = WithFields(node, {{"source", cached->source}});
        fills_.emplace(reduce.get(), SharedValue{cached->buffer, cached->fill});
        return reduce;
      });
      if (!cached.has_value()) continue;
      reduction = rewritten;
      const Node load = Load(cached->buffer, row.vars);
      *output = Mutate(*output, [&](const Node& node) -> std::optional<Node> {
        return StructuralEqual(node, cached->value) ? std::optional<Node>(load) : std::nullopt;
      });
      return cached->buffer;
    }
    return std::nullopt;
  }

  /// nullopt when the reduction's axes are not the row's, or its source computes no value that
  /// calls an intrinsic and that `output` computes too.
  std::optional<CachedSource> FindCachedSource(const Row& row, const Node& reduce,
                                               const Node& output) {
    const auto axes = reduce.field_as<Array<Any>>("axes");
    const auto extents = reduce.field_as<Array<Any>>("extents");
    if (static_cast<size_t>(axes.size()) != row.vars.size()) return std::nullopt;
    std::map<std::string, SizeExpr> to_row;
    std::map<std::string, SizeExpr> to_axes;
    Indices at_axes;
    for (size_t a = 0; a < row.vars.size(); ++a) {
      const auto i = static_cast<int64_t>(a);
      if (!arith::StructuralEqual(extents[i].cast<SizeExpr>(), row.extents[a])) {
        return std::nullopt;
      }
      at_axes.push_back(axes[i].cast<SizeExpr>());
      to_row.emplace(at_axes.back().as<arith::SizeVarObj>()->name().str(), row.vars[a]);
      to_axes.emplace(row.vars[a].as<arith::SizeVarObj>()->name().str(), at_axes.back());
    }
    const Node at_row = SubstituteIndices(reduce.field_as<Node>("source"), to_row);
    std::optional<Node> value;
    Visit(at_row, [&](const Node& node) {
      if (!value.has_value() && CallsIntrinsic(node) && Contains(output, node)) value = node;
      return !value.has_value();
    });
    if (!value.has_value()) return std::nullopt;
    const Node buffer = Buffer(NewName("cache"), (*value)->dtype(), row.extents);
    const Node load = Load(buffer, at_axes);
    const Node source =
        Mutate(reduce.field_as<Node>("source"), [&](const Node& node) -> std::optional<Node> {
          return StructuralEqual(SubstituteIndices(node, to_row), *value)
                     ? std::optional<Node>(load)
                     : std::nullopt;
        });
    return CachedSource{buffer, *value, SubstituteIndices(*value, to_axes), source};
  }

  static bool CallsIntrinsic(const Node& value) {
    bool calls = false;
    Visit(value, [&](const Node& node) {
      calls = calls || node.is("call");
      return !calls;
    });
    return calls;
  }

  static bool Contains(const Node& value, const Node& part) {
    bool found = false;
    Visit(value, [&](const Node& node) {
      found = found || StructuralEqual(node, part);
      return !found;
    });
    return found;
  }

  /// Where a tile of a micro-kernel's output lies: the callback's parameters, its two loops'
  /// extents, and the output element at an iteration of them.
  struct TileMap {
    Indices params;
    SizeExpr outer_extent;
    SizeExpr inner_extent;
    std::function<Indices(const SizeExpr& outer, const SizeExpr& inner)> element;
  };

  /// A group that starts with a matrix product (nn.dense) or a convolution (nn.conv2d) over
  /// float32 parameters and whose other ops form its epilogue, reading the product only at the
  /// element they compute: the CPU kernel (tir.micro_kernel.sgemm_bt or .conv2d) computes the
  /// product into the output, and the epilogue becomes a callback that the kernel runs on each
  /// tile of it as soon as the tile is done, while it is in cache (docs/design.md §29). nullopt
  /// for other groups.
  /// `calls` are the group's op calls, producers first (PostOrderCalls).
  std::optional<Node> ProductWithEpilogue(const std::vector<Expr>& calls,
                                          const std::vector<Expr>& outputs,
                                          const std::vector<Node>& output_params) {
    const auto* anchor = calls.empty() ? nullptr : calls.front().as<ir::CallObj>();
    if (anchor == nullptr || outputs.size() != 1) return std::nullopt;
    const std::string op = Downcast<ir::Op>(anchor->op())->name().str();
    if (op != "nn.dense" && op != "nn.conv2d") return std::nullopt;
    auto data = buffers_.find(anchor->args()[0].get());
    auto weight = buffers_.find(anchor->args()[1].get());
    const Node& out = output_params[0];
    const Indices out_shape = ShapeOf(out);
    const Indices product_shape = ShapeOf(TensorTypeOf(calls.front()));
    const bool same_shape = std::equal(
        out_shape.begin(), out_shape.end(), product_shape.begin(), product_shape.end(),
        [](const SizeExpr& a, const SizeExpr& b) { return arith::StructuralEqual(a, b); });
    if (data == buffers_.end() || weight == buffers_.end() || !same_shape ||
        !IsFloat32(data->second) || !IsFloat32(weight->second) || !IsFloat32(out)) {
      return std::nullopt;
    }
    std::vector<Node> args{Address(data->second, Zeros(ShapeOf(data->second).size())),
                           Address(weight->second, Zeros(ShapeOf(weight->second).size())),
                           Address(out, Zeros(out_shape.size()))};
    std::optional<TileMap> tiles =
        op == "nn.dense" ? DenseArgs(data->second, weight->second, out_shape, &args)
                         : Conv2DArgs(*anchor, data->second, weight->second, out_shape, &args);
    if (!tiles.has_value()) return std::nullopt;
    buffers_.emplace(calls.front().get(), out);
    if (!outputs[0].same_as(calls.front())) {
      args.push_back(EpilogueCallback(outputs[0], out, *tiles));
    }
    return Evaluate(CallPacked(
        op == "nn.dense" ? "tir.micro_kernel.sgemm_bt" : "tir.micro_kernel.conv2d", args));
  }

  static Node Int64(const SizeExpr& index) { return IndexValue(index, DLDataType{kDLInt, 64, 1}); }
  static Indices Zeros(size_t rank) { return Indices(rank, arith::IntImm(0)); }

  static bool IsFloat32(const Node& buffer) {
    const auto dtype = buffer.field_as<DLDataType>("dtype");
    return dtype.code == kDLFloat && dtype.bits == 32 && dtype.lanes == 1;
  }

  /// sgemm_bt's (m, n, k, lda, ldb, ldc) for data (..., k) and weight (n, k); its tiles are
  /// (row0, rows, col0, cols) of the product, whose rows are the output's leading axes
  /// flattened.
  std::optional<TileMap> DenseArgs(const Node& data, const Node& weight, const Indices& out_shape,
                                   std::vector<Node>* args) {
    const Indices x_shape = ShapeOf(data);
    if (ShapeOf(weight).size() != 2) return std::nullopt;
    const SizeExpr& k = x_shape.back();
    const SizeExpr n = ShapeOf(weight)[0];
    SizeExpr m = arith::IntImm(1);
    for (size_t d = 0; d + 1 < x_shape.size(); ++d) m = m * x_shape[d];
    for (const SizeExpr& value : {m, n, k, k, k, n}) args->push_back(Int64(value));
    TileMap tiles{NewSizeVars({"row0_", "rows", "col0_", "cols"}), {}, {}, {}};
    tiles.outer_extent = tiles.params[1];
    tiles.inner_extent = tiles.params[3];
    tiles.element = [out_shape, row0 = tiles.params[0], col0 = tiles.params[2]](
                        const SizeExpr& row, const SizeExpr& col) {
      // The flattened row, unflattened into the output's leading axes (innermost fastest).
      Indices element(out_shape.size());
      SizeExpr rest = row0 + row;
      for (size_t d = out_shape.size() - 1; d-- > 0;) {
        element[d] = d == 0 ? rest : arith::FloorMod(rest, out_shape[d]);
        rest = arith::FloorDiv(rest, out_shape[d]);
      }
      element.back() = col0 + col;
      return element;
    };
    return tiles;
  }

  /// conv2d's shapes and window for its micro-kernel; its tiles are (image, channel0, channels,
  /// spatial0, count) of the output, spatial positions flattened over (height, width).
  std::optional<TileMap> Conv2DArgs(const ir::CallObj& call, const Node& data, const Node& weight,
                                    const Indices& out_shape, std::vector<Node>* args) {
    const Indices x = ShapeOf(data);
    const Indices w = ShapeOf(weight);
    std::vector<int64_t> window;
    for (const char* attr : {"strides", "padding", "dilation"}) {
      for (const Any& value : call.attrs().at(String(attr)).cast<Array<Any>>()) {
        window.push_back(value.cast<int64_t>());
      }
    }
    if (x.size() != 4 || w.size() != 4 || window.size() != 8) return std::nullopt;
    for (const SizeExpr& value :
         {x[0], x[1], x[2], x[3], out_shape[1], out_shape[2], out_shape[3], w[2], w[3]}) {
      args->push_back(Int64(value));
    }
    for (int64_t value : window) args->push_back(Int64(arith::IntImm(value)));
    args->push_back(Int64(arith::IntImm(call.attrs().at(String("groups")).cast<int64_t>())));
    TileMap tiles{
        NewSizeVars({"image", "channel0_", "channels", "spatial0_", "count"}), {}, {}, {}};
    tiles.outer_extent = tiles.params[2];
    tiles.inner_extent = tiles.params[4];
    tiles.element = [width = out_shape[3], image = tiles.params[0], channel0 = tiles.params[1],
                     spatial0 = tiles.params[3]](const SizeExpr& channel, const SizeExpr& spot) {
      const SizeExpr position = spatial0 + spot;
      return Indices{image, channel0 + channel, arith::FloorDiv(position, width),
                     arith::FloorMod(position, width)};
    };
    return tiles;
  }

  Indices NewSizeVars(const std::vector<std::string>& prefixes) {
    Indices vars;
    for (const std::string& prefix : prefixes)
      vars.push_back(arith::SizeVar(String(NewName(prefix))));
    return vars;
  }

  /// callback(tile params): `output`'s value stored over that tile of `out`. The value is built
  /// over the output's whole index space first, where the reads of every input are proven in
  /// bounds, then moved to the tile's indices.
  Node EpilogueCallback(const Expr& output, const Node& out, const TileMap& tiles) {
    const Indices shape = ShapeOf(out);
    Indices element;
    const Node value = ValueOverNewLoops(output, shape, &element);
    Visit(value, [&](const Node& node) {
      if (node.is("reduce")) throw Declined{"a reduction in the epilogue of a matrix product"};
      if (node.is("load") && node.field_as<Node>("buffer").same_as(out)) {
        const auto indices = node.field_as<Array<Any>>("indices");
        for (size_t d = 0; d < element.size(); ++d) {
          if (!arith::StructuralEqual(indices[static_cast<int64_t>(d)].cast<SizeExpr>(),
                                      element[d])) {
            throw Declined{"the epilogue of a matrix product reads other elements of it"};
          }
        }
      }
      return true;
    });
    const SizeExpr outer = NewLoopVar(tiles.outer_extent);
    const SizeExpr inner = NewLoopVar(tiles.inner_extent);
    const Indices at = tiles.element(outer, inner);
    std::map<std::string, SizeExpr> moved;
    for (size_t d = 0; d < element.size(); ++d) {
      moved.emplace(element[d].as<arith::SizeVarObj>()->name().str(), at[d]);
    }
    const Node store = Store(out, at, SubstituteIndices(value, moved));
    return Callback(tiles.params,
                    For(outer.as<arith::SizeVarObj>()->name().str(), tiles.outer_extent, "serial",
                        For(inner.as<arith::SizeVarObj>()->name().str(), tiles.inner_extent,
                            "vectorized", store)));
  }

  /// A new loop variable over [0, extent).
  SizeExpr NewLoopVar(const SizeExpr& extent) {
    const std::string name = NewName("i");
    extents_.emplace(name, extent);
    return arith::SizeVar(String(name));
  }

  /// `body` inside serial loops over `vars` (the leading axes of `shape`); the group's schedule
  /// (ScheduleGroup) decides which run in parallel.
  static Node LoopNest(const Indices& vars, const Indices& shape, Node body) {
    for (size_t d = vars.size(); d-- > 0;) {
      body = For(vars[d].as<arith::SizeVarObj>()->name().str(), shape[d], "serial", body);
    }
    return body;
  }

  /// The group's ops in the order ScheduleGroup asks for their schedules: higher patterns
  /// first, later ops first among equals (the reduction of a reduction group, then the last op
  /// of an elementwise chain).
  std::vector<ir::Op> OpsByPrecedence() const {
    std::vector<ir::Op> ops;
    for (const Expr& expr : PostOrderCalls(func_->body())) {
      ops.insert(ops.begin(), Downcast<ir::Op>(expr.as<ir::CallObj>()->op()));
    }
    std::stable_sort(ops.begin(), ops.end(),
                     [](const ir::Op& a, const ir::Op& b) { return a.pattern() > b.pattern(); });
    return ops;
  }

  /// The op calls under `body`, producers first; declines anything else but tuples of outputs,
  /// parameters and constants.
  static std::vector<Expr> PostOrderCalls(const Expr& body) {
    std::vector<Expr> calls;
    ir::PostOrderVisit(body, [&](const Expr& expr) {
      if (const auto* call = expr.as<ir::CallObj>()) {
        if (call->op().as<ir::OpObj>() == nullptr) throw Declined{"a call of a function"};
        calls.push_back(expr);
      } else if (expr.as<ir::TupleObj>() != nullptr) {
        if (expr.get() != body.get()) throw Declined{"a tuple inside the group"};
      } else if (expr.as<ir::TupleGetItemObj>() != nullptr ||
                 expr.as<ir::FunctionObj>() != nullptr) {
        throw Declined{"a " + expr->GetTypeKey() + " inside the group"};
      }
    });
    return calls;
  }

  /// The loop nest writing `expr` into `buffer`.
  Node Stage(const Node& buffer, const Expr& expr) {
    const Indices shape = ShapeOf(buffer);
    Indices indices;
    const Node value = ValueOverNewLoops(expr, shape, &indices);
    return LoopNest(indices, shape, StoreWithReductions(buffer, indices, value));
  }

  /// `expr`'s value at new loop variables over `shape`, which are appended to `indices`;
  /// declined when the inlined expression is too large.
  Node ValueOverNewLoops(const Expr& expr, const Indices& shape, Indices* indices) {
    for (const SizeExpr& extent : shape) indices->push_back(NewLoopVar(extent));
    Node value = ValueOf(expr, *indices, /*materialized=*/false);
    std::unordered_map<const Object*, int64_t> memo;
    if (TreeSize(value, &memo) > kMaxValueNodes) {
      throw Declined{"the inlined expression is too large (a value used many times)"};
    }
    return value;
  }

  /// `expr`'s element at `indices`: a load of a parameter or of a computed stage (unless
  /// `materialized` is false for `expr` itself), an immediate, or its op's rule with the
  /// arguments' values inlined.
  Node ValueOf(const Expr& expr, const Indices& indices, bool materialized = true) {
    if (auto value = values_.find(expr.get()); value != values_.end()) return value->second;
    if (materialized || expr.as<ir::VarObj>() != nullptr) {
      if (auto buffer = buffers_.find(expr.get()); buffer != buffers_.end()) {
        return Load(buffer->second, indices);
      }
    }
    if (const auto* constant = expr.as<ir::ConstantObj>()) {
      if (std::optional<Node> immediate = ScalarImmediate(constant->data())) return *immediate;
      throw Declined{"a constant of " + std::to_string(constant->data().NumElements()) +
                     " elements inside the group"};
    }
    const auto* call = expr.as<ir::CallObj>();
    const auto op = Downcast<ir::Op>(call->op());
    std::vector<Node> placeholders;
    for (const Expr& arg : call->args()) {
      const ir::TensorType type = TensorTypeOf(arg);
      placeholders.push_back(
          Buffer("arg" + std::to_string(placeholders.size()), type->dtype(), ShapeOf(type)));
    }
    const ir::TensorType type = TensorTypeOf(expr);
    Node value;
    try {
      value =
          ApplyComputeRule(op->name().str(), placeholders,
                           Buffer("result", type->dtype(), ShapeOf(type)), indices, call->attrs());
    } catch (const Error& error) {
      // A rule's way to decline; any other error is a bug in the rule and propagates.
      if (error.kind() != "NotImplementedError") throw;
      throw Declined{error.message()};
    }
    value = RenameReduceAxes(value);
    return Mutate(value, [&](const Node& node) -> std::optional<Node> {
      if (!node.is("load")) return std::nullopt;
      const auto buffer = node.field_as<Node>("buffer");
      for (size_t k = 0; k < placeholders.size(); ++k) {
        if (buffer.get() != placeholders[k].get()) continue;
        Indices read;
        for (const Any& index : node.field_as<Array<Any>>("indices")) {
          read.push_back(index.cast<SizeExpr>());
        }
        CheckedRead(op->name().str(), k, placeholders[k], read);
        return ValueOf(call->args()[static_cast<int64_t>(k)], read);
      }
      return std::nullopt;
    });
  }

  /// Gives each reduction of a rule's value axes of unique names, so that values inlined into
  /// one another never share a loop variable.
  Node RenameReduceAxes(const Node& value) {
    return Mutate(value, [&](const Node& node) -> std::optional<Node> {
      if (!node.is("reduce")) return std::nullopt;
      std::map<std::string, SizeExpr> renamed;
      Array<Any> axes;
      const auto extents = node.field_as<Array<Any>>("extents");
      for (const Any& axis : node.field_as<Array<Any>>("axes")) {
        const String fresh(NewName("k"));
        renamed.emplace(axis.cast<SizeExpr>().as<arith::SizeVarObj>()->name().str(),
                        arith::SizeVar(fresh));
        extents_.emplace(fresh.str(), extents[axes.size()].cast<SizeExpr>());
        axes.push_back(arith::SizeVar(fresh));
      }
      return WithFields(
          node,
          {{"axes", axes}, {"source", SubstituteIndices(node.field_as<Node>("source"), renamed)}});
    });
  }

  /// A ValueError when the analyzer proves that `op`'s rule reads its input `k` out of bounds;
  /// the group is declined when it cannot prove the read in bounds. Loop and reduction
  /// variables of static extents are bound; the rest are sizes (>= 0).
  void CheckedRead(const std::string& op, size_t k, const Node& placeholder, const Indices& read) {
    const Indices shape = ShapeOf(placeholder);
    for (size_t d = 0; d < read.size(); ++d) {
      const SizeExpr& index = read[d];
      if (const auto* var = index.as<arith::SizeVarObj>()) {
        auto extent = extents_.find(var->name().str());
        if (extent != extents_.end() && arith::StructuralEqual(extent->second, shape[d])) continue;
      }
      arith::Analyzer analyzer;
      std::map<std::string, SizeExpr> largest;
      for (const auto& [name, extent] : extents_) {
        if (std::optional<int64_t> value = extent.as_int()) {
          analyzer.Bind(arith::SizeVar(String(name)), 0, *value - 1);
        } else {
          // v in [0, extent) is extent - 1 - w for some w >= 0: proving the bound for every
          // w >= 0 proves it for every v.
          largest.emplace(name, extent - 1 - arith::SizeVar(String(name + "_slack")));
        }
      }
      const bool above_zero = analyzer.CanProveGE(index, arith::IntImm(0));
      const bool below_extent = analyzer.CanProveLT(index, shape[d]) ||
                                analyzer.CanProveLT(arith::Substitute(index, largest), shape[d]);
      if (above_zero && below_extent) continue;
      // Over affine indices of statically bounded variables the interval is exact: an index
      // outside the extent there is a read out of bounds, not a missing proof.
      const SizeExpr simple = analyzer.Simplify(index);
      const arith::ConstIntBound bound = analyzer.Bound(simple);
      const std::optional<int64_t> extent = shape[d].as_int();
      const bool exact = extent.has_value() && IsAffine(simple) && bound.min != bound.kNegInf &&
                         bound.max != bound.kPosInf;
      KILN_CHECK(!exact || (bound.min >= 0 && bound.max < *extent), ValueError)
          << "compute rule of '" << op << "' reads input " << k << " out of bounds: index "
          << index.ToString() << " of axis " << d << " (extent " << shape[d].ToString()
          << ") takes the values " << bound;
      throw Declined{"cannot prove that '" + op + "' reads input " + std::to_string(k) +
                     " in bounds (index " + index.ToString() + " of extent " + shape[d].ToString() +
                     ")"};
    }
  }

  /// `store(buffer[indices] = value)`, with each reduction in `value` first computed into an
  /// accumulator by loops over its axes.
  Node StoreWithReductions(const Node& buffer, const Indices& indices, const Node& value) {
    std::vector<Node> reductions;
    std::set<const Object*> seen;
    Visit(value, [&](const Node& node) {
      if (!node.is("reduce")) return true;
      if (seen.insert(node.get()).second) reductions.push_back(node);
      return false;
    });
    std::vector<Node> accumulators;
    std::unordered_map<const Object*, Node> loads;
    for (const Node& reduction : reductions) {
      accumulators.push_back(
          Buffer(NewName("acc"), reduction->dtype(), {arith::IntImm(Lanes(reduction))}));
      loads.emplace(reduction.get(), Load(accumulators.back(), {arith::IntImm(0)}));
    }
    const Node replaced = Mutate(value, [&](const Node& node) -> std::optional<Node> {
      auto load = loads.find(node.get());
      if (load == loads.end()) return std::nullopt;
      return load->second;
    });
    Node stmt = Store(buffer, indices, replaced);
    for (size_t r = reductions.size(); r-- > 0;) {
      stmt = Accumulate(reductions[r], accumulators[r], stmt);
    }
    return stmt;
  }

  /// `rest` after `accumulator` holds `reduction`'s value. With several lanes (Lanes), the
  /// innermost axis is split: each lane combines every Lanes()-th element, the tail goes to
  /// lane 0, and the lanes are combined last.
  Node Accumulate(const Node& reduction, const Node& accumulator, const Node& rest) {
    const Combiner combiner = ParseCombiner(reduction.field_as<String>("combiner").str());
    const auto axes = reduction.field_as<Array<Any>>("axes");
    const auto extents = reduction.field_as<Array<Any>>("extents");
    const Node source = reduction.field_as<Node>("source");
    const int64_t lanes = *ShapeOf(accumulator)[0].as_int();
    const Indices first{arith::IntImm(0)};
    auto combined_into = [&](const Indices& lane, const Node& value) {
      return StoreWithReductions(accumulator, lane,
                                 Combine(combiner, Load(accumulator, lane), value));
    };
    auto axis_name = [&](int64_t a) {
      return axes[a].cast<SizeExpr>().as<arith::SizeVarObj>()->name().str();
    };
    const auto fill = fills_.find(reduction.get());
    // One element's step, with the inner axis at its index in `at`: the row buffer's store
    // first, when the reduction fills one.
    auto step = [&](const Indices& lane, const std::map<std::string, SizeExpr>& at) {
      Node combine = combined_into(lane, SubstituteIndices(source, at));
      if (fill == fills_.end()) return combine;
      Indices cell;
      for (const Any& axis : axes) cell.push_back(axis.cast<SizeExpr>());
      return Seq(
          {SubstituteIndices(Store(fill->second.buffer, cell, fill->second.value), at), combine});
    };
    const Node identity = ReduceIdentity(combiner, reduction->dtype());
    const int64_t inner = axes.size() - 1;
    Node init = Store(accumulator, first, identity);
    Node loop;
    if (lanes == 1) {
      loop = For(axis_name(inner), extents[inner].cast<SizeExpr>(), "serial", step(first, {}));
    } else {
      const std::string lane = NewName("lane");
      const SizeExpr extent = extents[inner].cast<SizeExpr>();
      const SizeExpr chunks = arith::FloorDiv(extent, arith::IntImm(lanes));
      const std::string chunk = NewName("chunk");
      const std::string tail = NewName("tail");
      const Indices at_lane{arith::SizeVar(String(lane))};
      init = For(lane, arith::IntImm(lanes), "vectorized", Store(accumulator, at_lane, identity));
      const Node main =
          For(chunk, chunks, "serial",
              For(lane, arith::IntImm(lanes), "vectorized",
                  step(at_lane, {{axis_name(inner), arith::SizeVar(String(chunk)) * lanes +
                                                        arith::SizeVar(String(lane))}})));
      const Node rest_of_axis =
          For(tail, arith::FloorMod(extent, arith::IntImm(lanes)), "serial",
              step(first, {{axis_name(inner), chunks * lanes + arith::SizeVar(String(tail))}}));
      loop = Seq({main, rest_of_axis});
    }
    for (int64_t a = inner; a-- > 0;) {
      loop = For(axis_name(a), extents[a].cast<SizeExpr>(), "serial", loop);
    }
    std::vector<Node> stmts{init, loop};
    // The lanes combine pairwise, halving each step: log2(lanes) vector steps instead of a
    // chain of lanes - 1 dependent scalar ones, which cost as much as the loop on short rows.
    for (int64_t half = lanes / 2; half >= 1; half /= 2) {
      const std::string other = NewName("lane");
      const Indices at{arith::SizeVar(String(other))};
      stmts.push_back(For(other, arith::IntImm(half), half > 1 ? "vectorized" : "serial",
                          combined_into(at, Load(accumulator, {at[0] + arith::IntImm(half)}))));
    }
    stmts.push_back(rest);
    return Allocate(accumulator, "local", Seq(stmts));
  }

  /// The accumulator lanes of `reduction`: partial results combined at the end, so that its
  /// innermost loop vectorizes (a float sum may not be reordered otherwise). One lane for an
  /// innermost axis too short to fill two vectors.
  static int64_t Lanes(const Node& reduction) {
    const auto extents = reduction.field_as<Array<Any>>("extents");
    const std::optional<int64_t> inner = extents[extents.size() - 1].cast<SizeExpr>().as_int();
    return inner.has_value() && *inner < 2 * kReductionLanes ? 1 : kReductionLanes;
  }

  std::string NewName(const std::string& prefix) {
    return prefix + std::to_string(counts_[prefix]++);
  }

  ir::Function func_;
  Array<Expr> args_;
  std::unordered_map<const Object*, Node> values_;   // parameters bound to immediates
  std::unordered_map<const Object*, Node> buffers_;  // parameters and computed stages
  /// Reductions whose loop also stores a value into a row buffer (CacheSharedValue).
  std::unordered_map<const Object*, SharedValue> fills_;
  std::map<std::string, SizeExpr> extents_;  // loop and reduction variables
  std::map<std::string, int64_t> counts_;
};

}  // namespace

LoweredGroup LowerFusedGroup(const ir::Function& func, const Array<ir::Expr>& args,
                             const std::string& name) {
  KILN_CHECK(func->params().size() == args.size(), ValueError)
      << "LowerFusedGroup: " << args.size() << " arguments for " << func->params().size()
      << " parameters";
  return GroupLowering(func, args).Run(name);
}

KILN_REGISTER_GLOBAL("tir.LowerFusedGroup")
    .set_body_typed([](const ir::Function& func, const Array<ir::Expr>& args, const String& name) {
      const LoweredGroup group = LowerFusedGroup(func, args, name.str());
      if (!group.func.defined()) return Any(String(group.declined));
      return Any(group.func);
    });

}  // namespace tir
}  // namespace kiln
