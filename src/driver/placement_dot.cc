// @main of a built module as a Graphviz digraph coloured by compiler
// (kiln/driver/placement.h).
#include <kiln/driver/placement.h>
#include <kiln/ffi/registry.h>
#include <kiln/ir/expr_functor.h>
#include <kiln/ir/function.h>

#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace kiln {
namespace {

constexpr const char* kHostColour = "#d9d9d9";
/// Fill colours for external compilers, in the order they first appear (then reused).
constexpr const char* kCompilerColours[] = {"#8ecae6", "#ffb703", "#90be6d",
                                            "#f28482", "#b5a8d6", "#f9c74f"};

std::string Quoted(const std::string& text) {
  std::string quoted = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') quoted += '\\';
    quoted += c;
  }
  return quoted + "\"";
}

/// The op names a function calls (nested functions included), in post-order.
std::vector<std::string> OpsOf(const ir::Function& func) {
  std::vector<std::string> ops;
  ir::PostOrderVisit(func->body(), [&ops](const ir::Expr& expr) {
    const auto* call = expr.as<ir::CallObj>();
    const auto* op = call != nullptr ? call->op().as<ir::OpObj>() : nullptr;
    if (op != nullptr) ops.push_back(op->name().str());
  });
  return ops;
}

class DotWriter {
 public:
  explicit DotWriter(ir::IRModule mod) : mod_(std::move(mod)) {}

  std::string Write() {
    const ir::Function main = mod_.Lookup("main");
    out_ << "digraph kiln {\n  rankdir=TB;\n"
         << "  node [shape=box, style=filled, fontname=\"monospace\", fontsize=10];\n";
    for (const ir::Var& param : main->params()) {
      const std::string id = "input_" + std::to_string(sources_.size());
      out_ << "  " << id
           << " [shape=ellipse, fillcolor=white, label=" << Quoted(param->name_hint().str())
           << "];\n";
      sources_[param.get()] = {id};
    }
    for (const ir::Expr& expr : ir::DataflowPostOrder(main->body())) Visit(expr);
    WriteLegend();
    out_ << "}\n";
    return out_.str();
  }

 private:
  void Visit(const ir::Expr& expr) {
    if (const auto* tuple = expr.as<ir::TupleObj>()) {
      std::set<std::string> fields;
      for (const ir::Expr& field : tuple->fields()) {
        fields.insert(sources_[field.get()].begin(), sources_[field.get()].end());
      }
      sources_[expr.get()] = fields;
    } else if (const auto* item = expr.as<ir::TupleGetItemObj>()) {
      sources_[expr.get()] = sources_[item->tuple().get()];
    } else if (const auto* call = expr.as<ir::CallObj>()) {
      VisitCall(expr, *call);
    }
  }

  void VisitCall(const ir::Expr& expr, const ir::CallObj& call) {
    const std::string id = "n" + std::to_string(num_nodes_++);
    std::string label;
    std::string colour = kHostColour;
    if (const auto* op = call.op().as<ir::OpObj>()) {
      label = op->name().str();
    } else {
      const ir::Function callee = Callee(call);
      const std::vector<std::string> ops = OpsOf(callee);
      std::optional<String> compiler = callee.GetAttr<String>(ir::attr::kCompiler);
      if (compiler.has_value()) {
        colour = ColourOf(compiler->str());
        label = callee.GetAttr<String>(ir::attr::kGlobalSymbol).value_or(String("?")).str() +
                "\\n" + compiler->str() + ": " + std::to_string(ops.size()) + " ops";
      } else {
        for (const std::string& name : ops) label += (label.empty() ? "" : "\\n") + name;
      }
    }
    out_ << "  " << id << " [label=\"" << label << "\", fillcolor=" << Quoted(colour) << "];\n";
    for (const ir::Expr& arg : call.args()) {
      for (const std::string& source : sources_[arg.get()]) {
        out_ << "  " << source << " -> " << id << ";\n";
      }
    }
    sources_[expr.get()] = {id};
  }

  ir::Function Callee(const ir::CallObj& call) const {
    if (const auto* gvar = call.op().as<ir::GlobalVarObj>()) {
      return mod_.Lookup(gvar->name_hint().str());
    }
    return Downcast<ir::Function>(call.op());
  }

  std::string ColourOf(const std::string& compiler) {
    auto [it, inserted] = colours_.emplace(compiler, "");
    if (inserted) {
      constexpr size_t kCount = sizeof(kCompilerColours) / sizeof(kCompilerColours[0]);
      it->second = kCompilerColours[(colours_.size() - 1) % kCount];
    }
    return it->second;
  }

  void WriteLegend() {
    out_ << "  subgraph cluster_legend {\n    label=\"legend\";\n"
         << "    legend_host [label=\"host (Kiln CPU)\", fillcolor=" << Quoted(kHostColour)
         << "];\n";
    for (const auto& [compiler, colour] : colours_) {
      out_ << "    " << Quoted("legend_" + compiler) << " [label=" << Quoted(compiler)
           << ", fillcolor=" << Quoted(colour) << "];\n";
    }
    out_ << "  }\n";
  }

  ir::IRModule mod_;
  std::ostringstream out_;
  std::map<const Object*, std::set<std::string>> sources_;
  std::map<std::string, std::string> colours_;
  int64_t num_nodes_ = 0;
};

}  // namespace

std::string PlacementDot(const ir::IRModule& built) { return DotWriter(built).Write(); }

KILN_REGISTER_GLOBAL("driver.PlacementDot").set_body_typed([](const ir::IRModule& built) {
  return PlacementDot(built);
});

}  // namespace kiln
