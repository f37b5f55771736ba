// SerializeJsonGraph and CreateJsonModules (kiln/codegen/json_graph.h): a region function as the
// JSON graph of kiln/runtime/json_runtime.h.
#include <kiln/codegen/json_graph.h>
#include <kiln/ffi/registry.h>
#include <kiln/ir/expr_functor.h>
#include <kiln/ir/op.h>
#include <kiln/runtime/backend.h>
#include <kiln/runtime/json_runtime.h>

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "../runtime/tagged_attrs_internal.h"

namespace kiln {
namespace codegen {
namespace {

using Json = nlohmann::json;
using ir::Expr;

/// The values an expression stands for, flattened: one [node, output] pair per tensor.
using Entries = std::vector<Json>;

class JsonGraphBuilder {
 public:
  JsonGraphBuilder(const ir::Function& function, std::string symbol)
      : function_(function), symbol_(std::move(symbol)) {}

  JsonGraphCode Build() {
    for (const ir::Var& param : function_->params()) {
      const ir::Type& type =
          param->checked_type().defined() ? param->checked_type() : param->type_annotation();
      const std::string what = "parameter '" + param->name_hint().str() + "'";
      entries_[param.get()] =
          AddNode({{"kind", "input"}, {"name", param->name_hint().str()}}, SpecsJson(type, what));
    }
    const std::unordered_set<const Object*> inside = NodesInsideFunctions(function_->body());
    ir::PostOrderVisit(function_->body(), [&](const Expr& expr) {
      if (inside.count(expr.get()) == 0) Visit(expr);
    });
    const Json document{{"version", runtime::kJsonGraphFormatVersion},
                        {"symbol", symbol_},
                        {"nodes", nodes_},
                        {"heads", EntriesOf(function_->body())}};
    return JsonGraphCode{symbol_, document.dump(), constants_};
  }

 private:
  /// What the graph cannot see: the nodes of function literals (composite bodies), which are
  /// serialized as their call's attributes.
  static std::unordered_set<const Object*> NodesInsideFunctions(const Expr& body) {
    std::unordered_set<const Object*> inside;
    ir::PostOrderVisit(body, [&](const Expr& expr) {
      const auto* function = expr.as<ir::FunctionObj>();
      if (function == nullptr) return;
      ir::PostOrderVisit(function->body(), [&](const Expr& node) { inside.insert(node.get()); });
      for (const ir::Var& param : function->params()) inside.insert(param.get());
    });
    return inside;
  }

  void Visit(const Expr& expr) {
    if (const auto* constant = expr.as<ir::ConstantObj>()) {
      const Tensor& data = constant->data();
      // Constants that share a tensor (a weight the IR uses twice) share one const node.
      auto [shared, inserted] = const_entries_.emplace(data.get(), Entries());
      if (!inserted) {
        entries_[expr.get()] = shared->second;
        return;
      }
      const std::string name = symbol_ + "_const_" + std::to_string(constants_.size());
      constants_.push_back(data);
      const Shape shape = data.shape();
      const Json spec{{"shape", std::vector<int64_t>(shape.begin(), shape.end())},
                      {"dtype", DataTypeToString(data.dtype())}};
      shared->second = AddNode({{"kind", "const"}, {"name", name}}, Json::array({spec}));
      entries_[expr.get()] = shared->second;
    } else if (const auto* call = expr.as<ir::CallObj>()) {
      entries_[expr.get()] = AddCall(*call, expr);
    } else if (const auto* tuple = expr.as<ir::TupleObj>()) {
      Entries& entries = entries_[expr.get()];
      for (const Expr& field : tuple->fields()) {
        const Entries& field_entries = EntriesOf(field);
        entries.insert(entries.end(), field_entries.begin(), field_entries.end());
      }
    } else if (const auto* item = expr.as<ir::TupleGetItemObj>()) {
      entries_[expr.get()] = FieldEntries(*item);
    } else if (const auto* var = expr.as<ir::VarObj>()) {
      KILN_CHECK(entries_.count(expr.get()) != 0, ValueError)
          << Where() << "'%" << var->name_hint().str() << "' is not a parameter of the function";
    }
    // Ops and function literals are callees, handled with their call.
  }

  Entries AddCall(const ir::CallObj& call, const Expr& expr) {
    Json node{{"kind", "op"}, {"inputs", Json::array()}};
    if (const auto* op = call.op().as<ir::OpObj>()) {
      node["op"] = op->name().str();
      node["attrs"] =
          runtime::tagged_attrs::EncodeAll(call.attrs(), "op '" + op->name().str() + "'");
    } else {
      const auto* composite = call.op().as<ir::FunctionObj>();
      std::optional<Any> pattern =
          composite != nullptr ? composite->attrs().Get(ir::attr::kComposite) : std::nullopt;
      KILN_CHECK(pattern.has_value(), NotImplementedError)
          << Where() << "a call of a " << call.op()->GetTypeKey()
          << " that is neither an op nor a composite function cannot be serialized";
      node["op"] = pattern->cast<String>().str();
      node["composite"] = true;
      node["attrs"] = CompositeAttrs(*composite, node["op"].get<std::string>());
    }
    for (const Expr& arg : call.args()) {
      for (const Json& entry : EntriesOf(arg)) node["inputs"].push_back(entry);
    }
    const std::string what = "the call of '" + node["op"].get<std::string>() + "'";
    return AddNode(std::move(node), SpecsJson(expr->checked_type(), what));
  }

  /// Each inner op's attributes keyed by op name, in call order; repeats get "#1", "#2", ...
  Json CompositeAttrs(const ir::FunctionObj& composite, const std::string& pattern) const {
    Json attrs = Json::object();
    std::unordered_map<std::string, int> seen;
    ir::PostOrderVisit(composite.body(), [&](const Expr& expr) {
      KILN_CHECK(expr.as<ir::ConstantObj>() == nullptr, NotImplementedError)
          << Where() << "composite '" << pattern << "' has a constant inside its body; the JSON "
          << "graph runtime takes constants as arguments of the composite call";
      const auto* call = expr.as<ir::CallObj>();
      if (call == nullptr) return;
      const auto* op = call->op().as<ir::OpObj>();
      KILN_CHECK(op != nullptr, NotImplementedError)
          << Where() << "composite '" << pattern << "' calls something other than an op";
      const std::string name = op->name().str();
      const int repeat = seen[name]++;
      const std::string key = repeat == 0 ? name : name + "#" + std::to_string(repeat);
      attrs[key] = runtime::tagged_attrs::EncodeAll(call->attrs(), "op '" + name + "'");
    });
    return attrs;
  }

  Entries FieldEntries(const ir::TupleGetItemObj& item) const {
    const Entries& all = EntriesOf(item.tuple());
    const auto* tuple_type = item.tuple()->checked_type().as<ir::TupleTypeObj>();
    KILN_CHECK(tuple_type != nullptr, ValueError)
        << Where() << "a tuple field access on a value that is not a typed tuple (run "
        << "InferType first)";
    size_t start = 0;
    for (int64_t i = 0; i < item.index(); ++i) {
      start += SpecsJson(tuple_type->fields()[i], "a tuple field").size();
    }
    const size_t count = SpecsJson(tuple_type->fields()[item.index()], "a tuple field").size();
    return Entries(all.begin() + static_cast<int64_t>(start),
                   all.begin() + static_cast<int64_t>(start + count));
  }

  Entries AddNode(Json node, Json outputs) {
    const size_t index = nodes_.size();
    Entries entries;
    for (size_t i = 0; i < outputs.size(); ++i) entries.push_back(Json::array({index, i}));
    node["outputs"] = std::move(outputs);
    nodes_.push_back(std::move(node));
    return entries;
  }

  const Entries& EntriesOf(const Expr& expr) const {
    auto found = entries_.find(expr.get());
    KILN_ICHECK(found != entries_.end()) << "a node was serialized before its operand";
    return found->second;
  }

  /// The specs of `type` flattened: [{"shape": [...], "dtype": "..."}, ...].
  Json SpecsJson(const ir::Type& type, const std::string& what) const {
    Json specs = Json::array();
    if (const auto* tuple = type.as<ir::TupleTypeObj>()) {
      for (const ir::Type& field : tuple->fields()) {
        for (const Json& spec : SpecsJson(field, what)) specs.push_back(spec);
      }
      return specs;
    }
    const auto* tensor = type.as<ir::TensorTypeObj>();
    KILN_CHECK(tensor != nullptr, ValueError)
        << Where() << what << " has no tensor type (run InferType first)";
    std::vector<int64_t> shape;
    for (const ir::Dim& dim : tensor->shape()) {
      KILN_CHECK(dim.as_static().has_value(), ValueError)
          << Where() << what << " has a dimension that is not static";
      shape.push_back(*dim.as_static());
    }
    specs.push_back({{"shape", shape}, {"dtype", DataTypeToString(tensor->dtype())}});
    return specs;
  }

  std::string Where() const { return "cannot serialize '" + symbol_ + "' as a JSON graph: "; }

  const ir::Function& function_;
  std::string symbol_;
  Json nodes_ = Json::array();
  Array<Tensor> constants_;
  std::unordered_map<const Object*, Entries> entries_;
  /// The const node of each tensor, by identity.
  std::unordered_map<const Object*, Entries> const_entries_;
};

}  // namespace

JsonGraphCode SerializeJsonGraph(const ir::Function& function) {
  std::optional<String> symbol = function.GetAttr<String>(ir::attr::kGlobalSymbol);
  KILN_CHECK(symbol.has_value(), ValueError)
      << "cannot serialize a function as a JSON graph: it has no '" << ir::attr::kGlobalSymbol
      << "' attribute (PartitionGraph sets it)";
  return JsonGraphBuilder(function, symbol->str()).Build();
}

Array<runtime::Module> CreateJsonModules(const Array<ir::Function>& functions,
                                         const JsonModuleFactory& factory) {
  Array<runtime::Module> modules;
  for (const ir::Function& function : functions) {
    const JsonGraphCode code = SerializeJsonGraph(function);
    try {
      modules.push_back(factory(code));
    } catch (const Error& error) {
      throw error.WithContext("while making the module of '" + code.symbol + "'");
    }
  }
  return modules;
}

Array<runtime::Module> CreateJsonModules(const Array<ir::Function>& functions,
                                         const std::string& plugin) {
  const std::string name = "runtime.module.create." + plugin + "_json";
  const std::string library = "libkiln_runtime_" + plugin + ".so";
  std::optional<Function> create = Function::GetGlobal(name.c_str());
  std::optional<std::string> why_missing;
  if (!create.has_value()) {
    // Loaded by name from the backend search path as it is now, not as backend discovery saw
    // it: a package may add its folder to KILN_RUNTIME_PATH after discovery ran.
    why_missing = runtime::LoadRuntimeLibrary(library);
    create = Function::GetGlobal(name.c_str());
  }
  KILN_CHECK(create.has_value(), RuntimeError)
      << "the JSON graph runtime of '" << plugin << "' (" << name << ") is not registered: "
      << why_missing.value_or(library + " loaded but did not register it");
  return CreateJsonModules(functions, [&](const JsonGraphCode& code) {
    return (*create)(String(code.graph_json), code.constants).cast<runtime::Module>();
  });
}

}  // namespace codegen
}  // namespace kiln
