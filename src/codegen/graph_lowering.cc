// LowerToGraph (kiln/codegen/graph_lowering.h): @main's calls become graph nodes, their bodies
// kernel program functions, and the graph's tensors are placed by PlanMemory.
#include <kiln/codegen/graph_lowering.h>
#include <kiln/ffi/registry.h>
#include <kiln/ir/control_flow.h>
#include <kiln/ir/expr_functor.h>
#include <kiln/ir/function.h>
#include <kiln/ir/op.h>
#include <kiln/ir/type_relation.h>
#include <kiln/runtime/graph_executor.h>
#include <kiln/runtime/kernel_program.h>
#include <kiln/runtime/memory_plan.h>
#include <kiln/runtime/shape_signature.h>
#include <kiln/tir/lower.h>
#include <kiln/tir/passes.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "../runtime/tagged_attrs_internal.h"
#include "program_in_place.h"

namespace kiln {
namespace codegen {
namespace {

using Json = nlohmann::json;
using ir::Expr;
using runtime::PlanMemory;

/// Tensors a function's program names, as kiln/runtime/kernel_program.h spells them ("i0").
using Refs = std::vector<std::string>;

// ---------------------------------------------------------------------------------------------
// Types and expressions
// ---------------------------------------------------------------------------------------------

/// The tensor types of `type` in order (itself, or a tuple's fields flattened); ValueError
/// naming `what` for anything else or a dimension that is not static.
std::vector<ir::TensorType> FlattenTensorTypes(const ir::Type& type, const std::string& what) {
  if (const auto* tuple = type.as<ir::TupleTypeObj>()) {
    std::vector<ir::TensorType> flat;
    for (const ir::Type& field : tuple->fields()) {
      std::vector<ir::TensorType> inner = FlattenTensorTypes(field, what);
      flat.insert(flat.end(), inner.begin(), inner.end());
    }
    return flat;
  }
  const auto* tensor = type.as<ir::TensorTypeObj>();
  KILN_CHECK(tensor != nullptr, ValueError)
      << "cannot lower " << what << ": its type is not a tensor or a tuple of tensors (run "
      << "InferType first)";
  return {Downcast<ir::TensorType>(type)};
}

/// The shape of `type`: constants and size expressions, which the runtime evaluates per call.
runtime::SymbolicShape ShapeOf(const ir::TensorType& type) {
  runtime::SymbolicShape shape;
  for (const ir::Dim& dim : type->shape()) shape.push_back(dim.AsSizeExpr());
  return shape;
}

/// [2, "batch", "seq * 64"]: a static extent as a number, a symbolic one as its text.
Json ShapeJson(const runtime::SymbolicShape& shape) {
  Json extents = Json::array();
  for (const arith::SizeExpr& extent : shape) {
    const std::optional<int64_t> constant = extent.as_int();
    extents.push_back(constant.has_value() ? Json(*constant) : Json(extent.ToString()));
  }
  return extents;
}

Json SpecJson(const runtime::SymbolicShape& shape, DLDataType dtype) {
  return Json{{"shape", ShapeJson(shape)}, {"dtype", DataTypeToString(dtype)}};
}

/// Where field `index` of a tuple of type `tuple_type` starts among the flattened tensors, and
/// how many tensors it has.
std::pair<size_t, size_t> FieldRange(const ir::Type& tuple_type, int64_t index) {
  const auto* tuple = tuple_type.as<ir::TupleTypeObj>();
  KILN_CHECK(tuple != nullptr && index >= 0 && index < static_cast<int64_t>(tuple->fields().size()),
             ValueError)
      << "cannot lower a tuple field access " << index << " of a value that has no such field";
  size_t start = 0;
  for (int64_t i = 0; i < index; ++i) {
    start += FlattenTensorTypes(tuple->fields()[i], "a tuple field").size();
  }
  return {start, FlattenTensorTypes(tuple->fields()[index], "a tuple field").size()};
}

/// The size variables `types` use.
std::set<std::string> SizesUsed(const std::vector<ir::Type>& types) {
  std::set<std::string> used;
  for (const ir::Type& type : types) {
    if (!type.defined() || type.as<ir::FuncTypeObj>() != nullptr) continue;
    for (const ir::TensorType& tensor : FlattenTensorTypes(type, "a value")) {
      for (const ir::Dim& dim : tensor->shape()) {
        for (const std::string& var : arith::FreeSizeVars(dim.AsSizeExpr())) used.insert(var);
      }
    }
  }
  return used;
}

/// The types of a call and of what its function computes inside.
std::vector<ir::Type> TypesOfCall(const Expr& expr) {
  std::vector<ir::Type> types{expr->checked_type()};
  const auto* call = expr.as<ir::CallObj>();
  const auto* callee = call == nullptr ? nullptr : call->op().as<ir::FunctionObj>();
  if (callee != nullptr) {
    for (const Expr& inner : ir::DataflowPostOrder(callee->body()))
      types.push_back(inner->checked_type());
  }
  return types;
}

// ---------------------------------------------------------------------------------------------
// The lowering
// ---------------------------------------------------------------------------------------------

struct GraphEntry {
  runtime::SymbolicShape shape;
  DLDataType dtype{};
  int64_t first_use = 0;
  int64_t last_use = 0;
  bool pinned = false;
};

struct GraphNode {
  std::string func;
  std::vector<int64_t> inputs;
  std::vector<int64_t> outputs;
  int64_t returns = 0;  ///< trailing outputs the function allocates and returns
  /// (output, input) positions: the output may take the input's bytes (graph JSON "in_place")
  std::vector<std::pair<int64_t, int64_t>> in_place;
};

class GraphLowering {
 public:
  explicit GraphLowering(const LoweringOptions& options) : options_(options) {}

  LoweredGraph Lower(const ir::IRModule& mod) {
    mod_ = mod;
    const ir::Function main = mod.Lookup("main");
    for (const ir::Var& param : main->params()) {
      const std::vector<ir::TensorType> types =
          FlattenTensorTypes(param->checked_type(), "parameter '" + param->name_hint().str() + "'");
      KILN_CHECK(types.size() == 1, ValueError)
          << "cannot lower parameter '" << param->name_hint().str()
          << "': the graph's inputs must be tensors, not tuples";
      const int64_t entry = NewEntry(types[0], /*pinned=*/true);
      inputs_.emplace_back(param->name_hint().str(), entry);
      entries_of_[param.get()] = {entry};
    }
    const std::map<std::string, Expr> definers = SizeDefiners(main->body());
    auto definers_of_sizes_used = [&definers](const Expr& expr) {
      return DefinersOfSizesUsed(expr, definers);
    };
    for (const Expr& expr : ir::DataflowPostOrder(main->body(), definers_of_sizes_used))
      LowerMainNode(expr);
    ReportMissingKernels();
    const std::vector<int64_t> outputs = EntriesOf(main->body());
    for (int64_t entry : outputs) entries_[entry].pinned = true;

    LoweredGraph result;
    result.graph_json = GraphJson(outputs, ChecksJson(main));
    Array<Tensor> constants(constants_.begin(), constants_.end());
    for (const Tensor& constant : constants_)
      result.constant_bytes += CompactBytes(constant.dl_tensor());
    const Json description{{"version", runtime::kKernelProgramFormatVersion},
                           {"constants", constant_specs_},
                           {"functions", functions_}};
    result.program =
        Function::GetGlobalRequired("runtime.KernelProgramCreate")(description.dump(), constants)
            .cast<runtime::Module>();
    result.prim_funcs = generated_;
    result.declined = declined_;
    return result;
  }

 private:
  // ---- @main -------------------------------------------------------------------------------

  void LowerMainNode(const Expr& expr) {
    if (const auto* tuple = expr.as<ir::TupleObj>()) {
      std::vector<int64_t> entries;
      for (const Expr& field : tuple->fields()) {
        const std::vector<int64_t> inner = EntriesOf(field);
        entries.insert(entries.end(), inner.begin(), inner.end());
      }
      entries_of_[expr.get()] = entries;
    } else if (const auto* item = expr.as<ir::TupleGetItemObj>()) {
      const std::vector<int64_t> whole = EntriesOf(item->tuple());
      const auto [start, count] = FieldRange(item->tuple()->checked_type(), item->index());
      entries_of_[expr.get()] =
          std::vector<int64_t>(whole.begin() + start, whole.begin() + start + count);
    } else if (const auto* call = expr.as<ir::CallObj>()) {
      LowerMainCall(Downcast<ir::Call>(expr), *call);
    } else {
      KILN_CHECK(expr.as<ir::IfObj>() == nullptr && expr.as<ir::LoopObj>() == nullptr, ValueError)
          << "cannot lower " << (expr.as<ir::IfObj>() ? "an If" : "a Loop") << " in @main: "
          << "kiln::Build turns them into calls of a control_flow module first";
      KILN_CHECK(expr.as<ir::VarObj>() != nullptr || expr.as<ir::ConstantObj>() != nullptr,
                 ValueError)
          << "cannot lower a " << expr->GetTypeKey() << " in @main: only calls, tuples, "
          << "parameters and constants are lowered";
    }
  }

  /// The graph entries holding `expr`'s value; a constant used as a graph value (an output,
  /// say) gets a node that copies it into an entry.
  std::vector<int64_t> EntriesOf(const Expr& expr) {
    auto it = entries_of_.find(expr.get());
    if (it != entries_of_.end()) return it->second;
    const auto* constant = expr.as<ir::ConstantObj>();
    KILN_CHECK(constant != nullptr, ValueError)
        << "cannot lower @main: a " << expr->GetTypeKey() << " is used before it is defined";
    FunctionBuilder builder(NewFunctionName("constant"), 0);
    const std::string source = ConstantRef(*constant);
    std::vector<int64_t> outputs = AddNode(builder, {source}, expr->checked_type(), {});
    entries_of_[expr.get()] = outputs;
    return outputs;
  }

  /// The function `node` calls; undefined for an op.
  ir::Function CalleeOf(const ir::CallObj& node) const {
    if (const auto* gvar = node.op().as<ir::GlobalVarObj>()) {
      return mod_.Lookup(gvar->name_hint().str());
    }
    if (node.op().as<ir::FunctionObj>() != nullptr) return Downcast<ir::Function>(node.op());
    return ir::Function();
  }

  /// The define_sizes call that `node` is, or that the whole body of `callee` (its function)
  /// is; null for any other call.
  static const ir::CallObj* AsDefineSizes(const ir::CallObj& node, const ir::Function& callee) {
    const ir::CallObj* define = callee.defined() ? callee->body().as<ir::CallObj>() : &node;
    const auto* op = define == nullptr ? nullptr : define->op().as<ir::OpObj>();
    return op != nullptr && op->name().str() == "define_sizes" ? define : nullptr;
  }

  /// The call of @main that defines each size a run decides (docs/design.md §22): the
  /// define_sizes naming it, else the first call whose function returns an output with that
  /// extent (kReturnsOutputsAttr). A size reaches its readers through types only, so nothing
  /// else puts, say, an expand to the extent a NonZero decided after that NonZero.
  std::map<std::string, Expr> SizeDefiners(const Expr& body) const {
    std::map<std::string, Expr> definers;
    for (const Expr& expr : ir::DataflowPostOrder(body)) {
      const auto* node = expr.as<ir::CallObj>();
      if (node == nullptr) continue;
      const ir::Function callee = CalleeOf(*node);
      if (const ir::CallObj* define = AsDefineSizes(*node, callee)) {
        for (const Any& size : define->attrs().at(String("sizes")).cast<Array<Any>>()) {
          definers[size.cast<arith::SizeExpr>().ToString()] = expr;
        }
        continue;
      }
      const std::optional<int64_t> returns =
          callee.defined() ? callee.GetAttr<int64_t>(kReturnsOutputsAttr) : std::nullopt;
      if (!returns.has_value()) continue;
      const std::vector<ir::TensorType> outputs =
          FlattenTensorTypes(expr->checked_type(), "a call returning outputs");
      for (size_t k = outputs.size() - static_cast<size_t>(*returns); k < outputs.size(); ++k) {
        for (const arith::SizeExpr& extent : ShapeOf(outputs[k])) {
          if (const auto* var = extent.as<arith::SizeVarObj>()) {
            definers.emplace(var->name().str(), expr);
          }
        }
      }
    }
    return definers;
  }

  /// The definers (SizeDefiners) of the sizes `expr`'s types use, as operands to lower first.
  static std::vector<Expr> DefinersOfSizesUsed(const Expr& expr,
                                               const std::map<std::string, Expr>& definers) {
    std::vector<Expr> operands;
    if (expr.as<ir::CallObj>() == nullptr) return operands;
    for (const std::string& var : SizesUsed(TypesOfCall(expr))) {
      auto it = definers.find(var);
      if (it != definers.end() && it->second.get() != expr.get()) operands.push_back(it->second);
    }
    return operands;
  }

  void LowerMainCall(const ir::Call& call, const ir::CallObj& node) {
    const ir::Function callee = CalleeOf(node);
    if (LowerDefineSizes(call, node, callee)) return;
    if (callee.defined() && callee->attrs().count(String(ir::attr::kCompiler)) != 0) {
      LowerExternalCall(call, callee);
      return;
    }
    if (callee.defined() && options_.generated_kernels && LowerGenerated(call, callee)) return;
    // Each argument is bound inside the program when constant, else read from the graph.
    std::vector<Refs> param_refs;
    std::vector<int64_t> node_inputs;
    for (const Expr& arg : node.args()) {
      Refs refs;
      if (const auto* constant = arg.as<ir::ConstantObj>()) {
        refs.push_back(ConstantRef(*constant));
      } else {
        for (int64_t entry : EntriesOf(arg)) {
          refs.push_back("i" + std::to_string(node_inputs.size()));
          node_inputs.push_back(entry);
        }
      }
      param_refs.push_back(refs);
    }
    AddSizeCarriers(TypesOfCall(call), node_inputs);
    if (callee.defined()) {
      FunctionBuilder builder(NewFunctionName(FusedName(callee)), node_inputs.size());
      KILN_CHECK(callee->params().size() == static_cast<int64_t>(param_refs.size()), ValueError)
          << "cannot lower a call with " << param_refs.size() << " arguments to a function of "
          << callee->params().size() << " parameters";
      for (size_t i = 0; i < param_refs.size(); ++i) {
        builder.Bind(callee->params()[i].get(), param_refs[i]);
      }
      const Refs results = LowerBody(builder, callee->body());
      entries_of_[call.get()] = AddNode(builder, results, call->checked_type(), node_inputs);
      return;
    }
    const auto* op = node.op().as<ir::OpObj>();
    KILN_CHECK(op != nullptr, ValueError) << "cannot lower a call of a " << node.op()->GetTypeKey()
                                          << ": only ops and functions can be called";
    FunctionBuilder builder(NewFunctionName(op->name().str()), node_inputs.size());
    Refs inputs;
    for (const Refs& refs : param_refs) inputs.insert(inputs.end(), refs.begin(), refs.end());
    const Refs results = builder.AddStep(*op, node.attrs(), inputs, call->checked_type());
    NoteKernel(op->name().str());
    entries_of_[call.get()] = AddNode(builder, results, call->checked_type(), node_inputs);
  }

  /// Appends to a node's inputs a size carrier for each size that `types` (its function's
  /// results and temporaries) use but its inputs' extents do not give: the kernel program binds
  /// sizes from its arguments' extents only (a fused expand to a size a NonZero decided).
  void AddSizeCarriers(const std::vector<ir::Type>& types, std::vector<int64_t>& node_inputs) {
    std::set<std::string> given;  // an extent gives its size only on its own (n, not n + m)
    for (int64_t entry : node_inputs) {
      for (const arith::SizeExpr& extent : entries_[entry].shape) {
        if (const auto* var = extent.as<arith::SizeVarObj>()) given.insert(var->name().str());
      }
    }
    for (const std::string& var : SizesUsed(types)) {
      if (given.count(var) == 0) node_inputs.push_back(SizeCarrier(var));
    }
  }

  /// The entry of shape (var, 0) that carries size `var` into kernel programs: it holds no
  /// element, so no node writes it (the graph reader lets a node read an empty entry unwritten)
  /// and it takes no memory, whatever the lifetime of what it is read with.
  int64_t SizeCarrier(const std::string& var) {
    auto [it, added] = size_carriers_.emplace(var, 0);
    if (added) {
      entries_.push_back(
          GraphEntry{{arith::SizeVar(String(var)), arith::IntImm(0)}, DLDataType{kDLUInt, 8, 1}});
      it->second = static_cast<int64_t>(entries_.size()) - 1;
    }
    return it->second;
  }

  /// A define_sizes call, alone or as the whole body of a fused function, is no node: its value
  /// is its data's entry, and its values' entry defines its sizes (docs/design.md §22). False
  /// for any other call.
  bool LowerDefineSizes(const ir::Call& call, const ir::CallObj& node, const ir::Function& callee) {
    const ir::CallObj* define = AsDefineSizes(node, callee);
    if (define == nullptr) return false;
    // The arguments of the call; in a fused function, the call's arguments its parameters are.
    auto argument = [&](size_t i) -> Expr {
      const Expr& arg = define->args()[static_cast<int64_t>(i)];
      if (!callee.defined()) return arg;
      for (int64_t p = 0; p < callee->params().size(); ++p) {
        if (callee->params()[p].get() == arg.get()) return node.args()[p];
      }
      KILN_THROW(ValueError) << "cannot lower a fused define_sizes whose arguments are not the "
                                "function's parameters";
    };
    entries_of_[call.get()] = EntriesOf(argument(0));
    const std::vector<int64_t> values = EntriesOf(argument(1));
    Json sizes = Json::array();
    for (const Any& size : define->attrs().at(String("sizes")).cast<Array<Any>>()) {
      sizes.push_back(size.cast<arith::SizeExpr>().ToString());
    }
    size_definitions_.push_back(Json{{"entry", values.at(0)}, {"sizes", sizes}});
    return true;
  }

  /// A function taken by an external compiler is one graph node calling its global_symbol,
  /// which the compiler's module (an import of the program) provides; every argument,
  /// constants included, is a graph entry, since the external module sees only its inputs.
  void LowerExternalCall(const ir::Call& call, const ir::Function& callee) {
    const std::optional<String> symbol = callee.GetAttr<String>(ir::attr::kGlobalSymbol);
    KILN_CHECK(symbol.has_value(), ValueError)
        << "cannot lower a call of a function for compiler '"
        << callee.GetAttr<String>(ir::attr::kCompiler)->str()
        << "': it has no global_symbol (PartitionGraph gives each region one)";
    std::vector<int64_t> inputs;
    for (const Expr& arg : call->args()) {
      const std::vector<int64_t> entries = EntriesOf(arg);
      inputs.insert(inputs.end(), entries.begin(), entries.end());
    }
    entries_of_[call.get()] = AddGraphNode(symbol->str(), call->checked_type(), inputs);
    if (std::optional<int64_t> returns = callee.GetAttr<int64_t>(kReturnsOutputsAttr)) {
      DefineByReturn(*returns);
    }
  }

  /// The last node returns its last `count` outputs (codegen::kReturnsOutputsAttr); each of
  /// their extents that is a size variable nothing has defined yet is defined by that output's
  /// shape.
  void DefineByReturn(int64_t count) {
    GraphNode& node = nodes_.back();
    node.returns = count;
    std::set<std::string>& defined = defined_by_return_;
    if (defined.empty()) {  // the sizes the inputs give, or earlier definitions
      for (const auto& [name, entry] : inputs_) {
        for (const arith::SizeExpr& extent : entries_[entry].shape) {
          for (const std::string& var : arith::FreeSizeVars(extent)) defined.insert(var);
        }
      }
    }
    for (const Json& definition : size_definitions_) {
      for (const Json& size : definition.at("sizes")) defined.insert(size.get<std::string>());
    }
    for (size_t k = node.outputs.size() - static_cast<size_t>(count); k < node.outputs.size();
         ++k) {
      const runtime::SymbolicShape& shape = entries_[node.outputs[k]].shape;
      Json sizes = Json::array();
      Json axes = Json::array();
      for (size_t axis = 0; axis < shape.size(); ++axis) {
        const auto* var = shape[axis].as<arith::SizeVarObj>();
        if (var == nullptr || !defined.insert(var->name().str()).second) continue;
        sizes.push_back(var->name().str());
        axes.push_back(axis);
      }
      if (sizes.empty()) continue;
      size_definitions_.push_back(
          Json{{"entry", node.outputs[k]}, {"sizes", sizes}, {"axes", axes}});
    }
  }

  /// A fused function whose ops all have compute rules is one graph node calling a generated
  /// C function (kiln/tir/lower.h), which takes the arguments that are not scalar constants.
  /// False, with the reason noted, for a group that stays with the kernels.
  bool LowerGenerated(const ir::Call& call, const ir::Function& callee) {
    const std::string name = NewFunctionName("tir_" + FusedName(callee));
    const tir::LoweredGroup group = tir::LowerFusedGroup(callee, call->args(), name);
    if (!group.func.defined()) {
      declined_.push_back(name + ": " + group.declined);
      return false;
    }
    const tir::Node func = tir::RunPasses(group.func, options_.tir_passes, options_.pass_context);
    std::vector<int64_t> inputs;
    for (size_t k : group.arguments) {
      const std::vector<int64_t> entries = EntriesOf(call->args()[static_cast<int64_t>(k)]);
      inputs.insert(inputs.end(), entries.begin(), entries.end());
    }
    generated_.push_back(func);
    entries_of_[call.get()] = AddGraphNode(name, call->checked_type(), inputs);
    return true;
  }

  // ---- program functions -----------------------------------------------------------------

  class FunctionBuilder {
   public:
    FunctionBuilder(std::string name, size_t num_inputs)
        : name_(std::move(name)), num_inputs_(num_inputs) {}

    const std::string& name() const { return name_; }
    void Bind(const Object* var, Refs refs) { refs_[var] = std::move(refs); }
    std::optional<Refs> Find(const Object* expr) const {
      auto it = refs_.find(expr);
      if (it == refs_.end()) return std::nullopt;
      return it->second;
    }

    /// A step calling `op`'s kernel; returns the temporaries it writes.
    Refs AddStep(const ir::OpObj& op, const Map<String, Any>& attrs, const Refs& inputs,
                 const ir::Type& result_type) {
      Refs outputs;
      for (const ir::TensorType& type : FlattenTensorTypes(result_type, "op " + op.name().str())) {
        outputs.push_back("T" + std::to_string(temps_.size()));
        temps_.push_back(SpecJson(ShapeOf(type), type->dtype()));
      }
      steps_.push_back(
          Json{{"kernel", op.name().str()},
               {"attrs", runtime::tagged_attrs::EncodeAll(attrs, "op '" + op.name().str() + "'")},
               {"inputs", inputs},
               {"outputs", outputs}});
      return outputs;
    }

    /// The function's JSON, its result `results` written to outputs o0, o1, ...: a temporary
    /// is renamed to its output (the step writes there directly); anything else is copied.
    /// `inputs` and `outputs` are the specs of the tensors it is called with.
    Json Finish(const Refs& results, Json inputs, Json outputs) {
      std::map<std::string, std::string> rename;
      for (size_t k = 0; k < results.size(); ++k) {
        const std::string output = "o" + std::to_string(k);
        if (results[k][0] == 'T' && rename.count(results[k]) == 0) {
          rename[results[k]] = output;
        } else {
          steps_.push_back(Json{{"copy", results[k]}, {"to", output}});
        }
      }
      Json temps = Json::array();
      for (size_t t = 0; t < temps_.size(); ++t) {
        const std::string name = "T" + std::to_string(t);
        if (rename.count(name) != 0) continue;
        rename[name] = "t" + std::to_string(temps.size());
        temps.push_back(temps_[t]);
      }
      for (Json& step : steps_) {
        for (const char* key : {"inputs", "outputs", "copy"}) {
          if (!step.contains(key)) continue;
          Json& value = step[key];
          if (value.is_string()) value = Renamed(rename, value.get<std::string>());
          for (Json& ref : value) {
            if (ref.is_string()) ref = Renamed(rename, ref.get<std::string>());
          }
        }
      }
      return Json{{"name", name_},
                  {"num_inputs", num_inputs_},
                  {"num_outputs", results.size()},
                  {"inputs", std::move(inputs)},
                  {"outputs", std::move(outputs)},
                  {"temps", temps},
                  {"steps", steps_}};
    }

   private:
    static std::string Renamed(const std::map<std::string, std::string>& rename,
                               const std::string& ref) {
      auto it = rename.find(ref);
      return it == rename.end() ? ref : it->second;
    }

    std::string name_;
    size_t num_inputs_;
    std::unordered_map<const Object*, Refs> refs_;
    Json temps_ = Json::array();
    Json steps_ = Json::array();
  };

  /// Adds `body`'s op calls as steps of `builder`; returns the refs of its result.
  Refs LowerBody(FunctionBuilder& builder, const Expr& body) {
    for (const Expr& expr : ir::DataflowPostOrder(body)) {
      if (builder.Find(expr.get()).has_value()) continue;
      builder.Bind(expr.get(), LowerBodyNode(builder, expr));
    }
    return *builder.Find(body.get());
  }

  Refs LowerBodyNode(FunctionBuilder& builder, const Expr& expr) {
    auto refs_of = [&](const Expr& operand) { return *builder.Find(operand.get()); };
    if (const auto* constant = expr.as<ir::ConstantObj>()) return {ConstantRef(*constant)};
    if (const auto* tuple = expr.as<ir::TupleObj>()) {
      Refs refs;
      for (const Expr& field : tuple->fields()) {
        const Refs inner = refs_of(field);
        refs.insert(refs.end(), inner.begin(), inner.end());
      }
      return refs;
    }
    if (const auto* item = expr.as<ir::TupleGetItemObj>()) {
      const Refs whole = refs_of(item->tuple());
      const auto [start, count] = FieldRange(item->tuple()->checked_type(), item->index());
      return Refs(whole.begin() + start, whole.begin() + start + count);
    }
    const auto* call = expr.as<ir::CallObj>();
    const auto* op = call != nullptr ? call->op().as<ir::OpObj>() : nullptr;
    KILN_CHECK(op != nullptr, ValueError)
        << "cannot lower function '" << builder.name() << "': it contains a "
        << (call != nullptr ? call->op()->GetTypeKey() : expr->GetTypeKey())
        << " where only op calls, tuples, parameters and constants can be lowered";
    Refs inputs;
    for (const Expr& arg : call->args()) {
      const Refs inner = refs_of(arg);
      inputs.insert(inputs.end(), inner.begin(), inner.end());
    }
    NoteKernel(op->name().str());
    return builder.AddStep(*op, call->attrs(), inputs, expr->checked_type());
  }

  /// Finishes `builder`'s function as a graph node reading `inputs` and writing new entries
  /// for the tensors of `result_type`; returns those entries.
  std::vector<int64_t> AddNode(FunctionBuilder& builder, const Refs& results,
                               const ir::Type& result_type, const std::vector<int64_t>& inputs) {
    Json input_specs = Json::array();
    for (int64_t entry : inputs) {
      input_specs.push_back(SpecJson(entries_[entry].shape, entries_[entry].dtype));
    }
    Json output_specs = Json::array();
    for (const ir::TensorType& type : FlattenTensorTypes(result_type, builder.name())) {
      output_specs.push_back(SpecJson(ShapeOf(type), type->dtype()));
    }
    functions_.push_back(builder.Finish(results, std::move(input_specs), std::move(output_specs)));
    std::vector<int64_t> outputs = AddGraphNode(builder.name(), result_type, inputs);
    for (const auto& [output, input] : OutputsOverInputs(functions_.back())) {
      const int64_t entry = inputs[static_cast<size_t>(input)];
      if (std::count(inputs.begin(), inputs.end(), entry) == 1) {
        nodes_.back().in_place.emplace_back(output, input);
      }
    }
    return outputs;
  }

  /// A graph node calling `func`, reading `inputs` and writing new entries for the tensors of
  /// `result_type`; returns those entries.
  std::vector<int64_t> AddGraphNode(const std::string& func, const ir::Type& result_type,
                                    const std::vector<int64_t>& inputs) {
    const auto node = static_cast<int64_t>(nodes_.size());
    std::vector<int64_t> outputs;
    for (const ir::TensorType& type : FlattenTensorTypes(result_type, func)) {
      outputs.push_back(NewEntry(type, /*pinned=*/false));
      entries_.back().first_use = node;
      entries_.back().last_use = node;
    }
    for (int64_t entry : inputs) {
      if (!entries_[entry].pinned) entries_[entry].last_use = node;
    }
    nodes_.push_back(GraphNode{func, inputs, outputs, 0, {}});
    return outputs;
  }

  // ---- names, constants, kernels ----------------------------------------------------------

  /// "fused_nn_conv2d_add_nn_relu" from the ops a primitive function calls, in order.
  static std::string FusedName(const ir::Function& func) {
    std::string name = "fused";
    for (const Expr& expr : ir::DataflowPostOrder(func->body())) {
      const auto* call = expr.as<ir::CallObj>();
      const auto* op = call != nullptr ? call->op().as<ir::OpObj>() : nullptr;
      if (op == nullptr || name.size() > 48) continue;
      std::string op_name = op->name().str();
      std::replace(op_name.begin(), op_name.end(), '.', '_');
      name += "_" + op_name;
    }
    return name;
  }

  /// `base` with a counter that makes it unique among the program's functions.
  std::string NewFunctionName(std::string base) {
    std::replace(base.begin(), base.end(), '.', '_');
    return base + "_" + std::to_string(name_counts_[base]++);
  }

  std::string ConstantRef(const ir::ConstantObj& constant) {
    auto [it, inserted] = constant_ids_.emplace(&constant, constants_.size());
    if (inserted) {
      const Tensor& data = constant.data();
      constants_.push_back(data);
      const Shape shape = data.shape();
      constant_specs_.push_back(SpecJson(
          runtime::FromStatic(std::vector<int64_t>(shape.begin(), shape.end())), data.dtype()));
    }
    return "c" + std::to_string(it->second);
  }

  /// Records `op` when it has no CPU kernel. runtime.WhyNoCpuKernel (libkiln_kernels_cpu)
  /// loads a plugin op's runtime library (libkiln_runtime_<namespace>.so) before giving up.
  void NoteKernel(const std::string& op) {
    if (missing_kernels_.count(op) != 0) return;
    const std::string global = "kernel.cpu." + op;
    if (Function::GetGlobal(global.c_str()).has_value()) return;
    const auto why = Function::GetGlobalRequired("runtime.WhyNoCpuKernel")(op);
    if (!why.is_none()) missing_kernels_.emplace(op, why.cast<String>().str());
  }

  void ReportMissingKernels() const {
    if (missing_kernels_.empty()) return;
    std::string lines;
    for (const auto& [op, why] : missing_kernels_) {
      lines.append("\n  ").append(op).append(": ").append(why);
    }
    KILN_THROW(NotImplementedError)
        << "no CPU kernel for " << missing_kernels_.size() << " op(s) (each needs a global "
        << "function kernel.cpu.<op>; load the plugin that provides it):" << lines;
  }

  int64_t NewEntry(const ir::TensorType& type, bool pinned) {
    entries_.push_back(GraphEntry{ShapeOf(type), type->dtype(), 0, 0, pinned});
    if (pinned) entries_.back().last_use = std::numeric_limits<int64_t>::max();
    return static_cast<int64_t>(entries_.size()) - 1;
  }

  // ---- the graph JSON ------------------------------------------------------------------

  /// The graph JSON. A graph whose shapes are all static comes planned; one with a symbolic
  /// shape has no "storages": the executor plans it for each signature it is called with.
  std::string GraphJson(const std::vector<int64_t>& outputs, Json checks) const {
    const bool all_static = size_definitions_.empty() &&
                            std::all_of(entries_.begin(), entries_.end(), [](const GraphEntry& e) {
                              return runtime::IsStatic(e.shape);
                            });
    Json graph{{"version", runtime::kGraphFormatVersion}};
    Json entries = Json::array();
    for (const GraphEntry& entry : entries_) entries.push_back(SpecJson(entry.shape, entry.dtype));
    if (all_static) {
      const runtime::MemoryPlan plan = PlanMemory(Requests());
      Json storages = Json::array();
      for (int64_t bytes : plan.storage_bytes) storages.push_back(Json{{"bytes", bytes}});
      graph["storages"] = storages;
      for (size_t i = 0; i < entries_.size(); ++i) {
        entries[i]["storage"] = plan.storage_of[i];
        entries[i]["offset"] = plan.offset_of[i];
      }
    }
    Json inputs = Json::array();
    for (const auto& [name, entry] : inputs_)
      inputs.push_back(Json{{"name", name}, {"entry", entry}});
    Json nodes = Json::array();
    for (const GraphNode& node : nodes_) {
      nodes.push_back(Json{{"name", node.func},
                           {"func", node.func},
                           {"inputs", node.inputs},
                           {"outputs", node.outputs}});
      if (node.returns > 0) nodes.back()["returns"] = node.returns;
      for (const auto& [output, input] : node.in_place) {
        nodes.back()["in_place"].push_back(Json{{"output", output}, {"input", input}});
      }
    }
    graph["entries"] = entries;
    graph["inputs"] = inputs;
    graph["nodes"] = nodes;
    graph["outputs"] = outputs;
    if (!checks.empty()) graph["checks"] = std::move(checks);
    if (!size_definitions_.empty()) graph["size_definitions"] = size_definitions_;
    return graph.dump();
  }

  /// The size checks type inference deferred to run time (ir::kSizeChecksAttr of @main), as
  /// the graph JSON lists them.
  static Json ChecksJson(const ir::Function& main) {
    Json checks = Json::array();
    std::optional<Any> entries = main->attrs().Get(String(ir::kSizeChecksAttr));
    if (!entries.has_value()) return checks;
    for (const Any& item : entries->cast<Array<Any>>()) {
      const auto entry = item.cast<Array<Any>>();
      checks.push_back(Json{{"lhs", ExtentJson(entry[0])},
                            {"relation", entry[1].cast<String>().str()},
                            {"rhs", ExtentJson(entry[2])},
                            {"message", entry[3].cast<String>().str()}});
    }
    return checks;
  }

  static Json ExtentJson(const Any& extent) {
    return ShapeJson({extent.cast<arith::SizeExpr>()})[0];
  }

  /// The entries of a static graph, as the memory planner takes them.
  std::vector<runtime::BufferRequest> Requests() const {
    const auto last_node = std::max<int64_t>(static_cast<int64_t>(nodes_.size()) - 1, 0);
    std::vector<runtime::BufferRequest> requests;
    for (const GraphEntry& entry : entries_) {
      int64_t bytes = ElementBytes(entry.dtype);
      for (const arith::SizeExpr& extent : entry.shape) bytes *= *extent.as_int();
      requests.push_back(runtime::BufferRequest{bytes, std::min(entry.first_use, last_node),
                                                std::min(entry.last_use, last_node), entry.pinned});
    }
    for (const GraphNode& node : nodes_) {
      for (const auto& [output, input] : node.in_place) {
        requests[node.outputs[output]].over = node.inputs[input];
      }
    }
    return requests;
  }

  ir::IRModule mod_;
  std::vector<GraphEntry> entries_;
  std::vector<std::pair<std::string, int64_t>> inputs_;
  std::vector<GraphNode> nodes_;
  std::unordered_map<const Object*, std::vector<int64_t>> entries_of_;
  Json functions_ = Json::array();
  Json size_definitions_ = Json::array();
  std::set<std::string> defined_by_return_;       ///< sizes defined when DefineByReturn last ran
  std::map<std::string, int64_t> size_carriers_;  ///< size -> its SizeCarrier entry
  std::vector<Tensor> constants_;
  Json constant_specs_ = Json::array();
  std::unordered_map<const Object*, size_t> constant_ids_;
  std::map<std::string, int64_t> name_counts_;
  LoweringOptions options_;
  std::vector<tir::Node> generated_;   ///< prim_funcs of the groups lowered to the loop IR
  std::vector<std::string> declined_;  ///< "function: why", for the groups that were not
  std::map<std::string, std::string> missing_kernels_;  ///< op -> why it has no kernel
};

}  // namespace

LoweredGraph LowerToGraph(const ir::IRModule& mod, const LoweringOptions& options) {
  return GraphLowering(options).Lower(mod);
}

}  // namespace codegen
}  // namespace kiln
