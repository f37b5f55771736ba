#include "graph_importer.h"

#include <kiln/arith/size_expr.h>
#include <kiln/ffi/error.h>
#include <kiln/ir/control_flow.h>
#include <kiln/ir/type.h>
#include <kiln/transform/infer_type.h>

#include <cctype>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <unordered_map>
#include <vector>

#include "converter.h"
#include "custom_domain.h"
#include "shape_propagation.h"
#include "tensor_proto.h"

namespace kiln {
namespace frontend {
namespace onnx_import {
namespace {

constexpr DLDataType kInt64{kDLInt, 64, 1};
constexpr DLDataType kBool{kDLUInt, 1, 1};

/// The opset version the model imports for each domain ("" for the default domain).
std::map<std::string, int64_t> DomainOpsets(const onnx::ModelProto& model) {
  std::map<std::string, int64_t> opsets;
  for (const onnx::OperatorSetIdProto& opset : model.opset_import()) {
    opsets[opset.domain() == "ai.onnx" ? "" : opset.domain()] = opset.version();
  }
  return opsets;
}

/// The version of `node`'s domain the model imports; 0 when it imports none.
int64_t NodeOpset(const onnx::NodeProto& node, const std::map<std::string, int64_t>& opsets) {
  auto opset = opsets.find(NodeDomain(node));
  return opset == opsets.end() ? 0 : opset->second;
}

/// Fails with one error listing every op of the graph without a converter (a built-in one at
/// the model's opset for the default domain, a registered global function for other domains),
/// so a user sees all that is missing at once rather than one op per attempt.
/// ONNX ops whose graph attributes become bodies of the IR's control flow
/// (include/kiln/ir/control_flow.h): the importer converts them itself, importing each body with
/// the enclosing graph's values in scope.
bool IsControlFlow(const onnx::NodeProto& node) {
  return NodeDomain(node).empty() &&
         (node.op_type() == "If" || node.op_type() == "Loop" || node.op_type() == "Scan");
}

/// Adds to `first_node` ("op (opset N)" -> where it is first used) each op of `graph` and of
/// its subgraphs that has no converter.
void CollectUnsupported(const onnx::GraphProto& graph, const std::map<std::string, int64_t>& opsets,
                        std::map<std::string, std::string>& first_node) {
  for (const onnx::NodeProto& node : graph.node()) {
    if (IsControlFlow(node)) {
      for (const onnx::AttributeProto& attr : node.attribute()) {
        if (attr.type() == onnx::AttributeProto::GRAPH) {
          CollectUnsupported(attr.g(), opsets, first_node);
        }
      }
      continue;
    }
    const std::string domain = NodeDomain(node);
    const int64_t version = NodeOpset(node, opsets);
    const std::string op = (domain.empty() ? "" : domain + ".") + node.op_type() + " (opset " +
                           std::to_string(version) + ")";
    if (domain.empty() ? FindConverter(node.op_type(), version) == nullptr
                       : !FindCustomConverter(node).has_value()) {
      first_node.emplace(op, "first at node " + NodeName(node) +
                                 (domain.empty() ? "" : "; " + MissingCustomConverterHint(node)));
    }
  }
}

void CheckSupported(const onnx::GraphProto& graph, const std::map<std::string, int64_t>& opsets) {
  std::map<std::string, std::string> first_node;
  CollectUnsupported(graph, opsets, first_node);
  if (first_node.empty()) return;
  std::ostringstream message;
  message << "the model uses " << first_node.size()
          << " unsupported ONNX op(s) (Kiln imports opsets " << kMinOpset << "-" << kMaxOpset
          << "; docs/onnx.md lists the ops):";
  for (const auto& [op, where] : first_node) message << "\n  " << op << ", " << where;
  throw Error("NotImplementedError", message.str());
}

/// The size variables of the graph inputs' symbolic and unknown dimensions (docs/design.md §20):
/// a dim_param names its variable, so inputs sharing a dim_param share it, as ONNX means; an
/// unknown dimension gets a fresh `<input>_<axis>`. A size variable is its name, so a made-up
/// name (a sanitized dim_param, `<input>_<axis>`) must not be a name the model means otherwise:
/// every dim_param the model spells as an identifier is reserved up front, and a made-up name
/// that is taken gets a numeric suffix. Each variable remembers the first input it sized.
class SizeVarNames {
 public:
  explicit SizeVarNames(const onnx::GraphProto& graph) {
    for (const auto* values : {&graph.input(), &graph.value_info(), &graph.output()}) {
      for (const onnx::ValueInfoProto& value : *values) {
        for (const onnx::TensorShapeProto::Dimension& dim :
             value.type().tensor_type().shape().dim()) {
          if (IsSizeVarName(dim.dim_param())) taken_.insert(dim.dim_param());
        }
      }
    }
  }

  arith::SizeVar ForDimParam(const std::string& dim_param, const std::string& input) {
    auto [it, inserted] = dim_params_.emplace(dim_param, dim_param);
    if (inserted && !IsSizeVarName(dim_param)) it->second = Unused(SanitizeSizeVarName(dim_param));
    return Sizing(it->second, input);
  }

  arith::SizeVar ForUnknown(const std::string& input, size_t axis) {
    return Sizing(Unused(SanitizeSizeVarName(input) + "_" + std::to_string(axis)), input);
  }

  const SizeVarInputs& inputs() const { return inputs_; }

 private:
  /// `name`, or `name_2`, `name_3`, ... the first that is not taken; taken from then on.
  std::string Unused(const std::string& name) {
    std::string candidate = name;
    for (int suffix = 2; !taken_.insert(candidate).second; ++suffix) {
      candidate = name + "_" + std::to_string(suffix);
    }
    return candidate;
  }

  arith::SizeVar Sizing(const std::string& var, const std::string& input) {
    inputs_.emplace(var, input);
    return arith::SizeVar(var);
  }

  std::set<std::string> taken_;
  std::map<std::string, std::string> dim_params_;  ///< dim_param -> its variable's name
  SizeVarInputs inputs_;
};

/// The annotated parameter for graph input `input`: a static dimension keeps its extent, a
/// symbolic or unknown one becomes a size variable (`names`); shapes= has already written static
/// extents into the inputs it specializes.
ir::Var MakeParam(const onnx::ValueInfoProto& input, SizeVarNames& names) {
  const std::string what = "input '" + input.name() + "'";
  const std::string name = input.name().empty() ? "input" : input.name();
  KILN_CHECK(input.type().has_tensor_type(), NotImplementedError)
      << what << " is not a tensor; Kiln imports tensor inputs only";
  const onnx::TypeProto::Tensor& tensor = input.type().tensor_type();
  const DLDataType dtype = DTypeFromOnnx(tensor.elem_type(), what);
  KILN_ICHECK(tensor.has_shape()) << what << " has no shape, which LoadModel refuses";
  Array<ir::Dim> shape;
  for (const onnx::TensorShapeProto::Dimension& dim : tensor.shape().dim()) {
    const auto axis = static_cast<size_t>(shape.size());
    if (dim.has_dim_value()) {
      KILN_CHECK(dim.dim_value() >= 0, ValueError)
          << what << " has the negative extent " << dim.dim_value() << " at index " << axis;
      shape.push_back(ir::IntDim(dim.dim_value()));
    } else if (!dim.dim_param().empty()) {
      shape.push_back(ir::Dim::FromSizeExpr(names.ForDimParam(dim.dim_param(), input.name())));
    } else {
      shape.push_back(ir::Dim::FromSizeExpr(names.ForUnknown(input.name(), axis)));
    }
  }
  return ir::Var(name, ir::TensorType(shape, dtype));
}

/// The value of `name` as ONNX's data propagation computed it, when every element is known and
/// `value` (what Kiln has for it) is an int64 tensor of as many elements.
std::optional<Tensor> PropagatedValue(const PropagatedValues& shape_values, const std::string& name,
                                      const ir::Expr& value) {
  auto it = shape_values.find(name);
  const auto* type = value->checked_type().as<ir::TensorTypeObj>();
  if (it == shape_values.end() || type == nullptr ||
      !DataTypeEqual(type->dtype(), DLDataType{kDLInt, 64, 1})) {
    return std::nullopt;
  }
  std::vector<int64_t> elements;
  for (const onnx::TensorShapeProto::Dimension& dim : it->second.dim()) {
    if (!dim.has_dim_value()) return std::nullopt;
    elements.push_back(dim.dim_value());
  }
  std::vector<int64_t> shape;
  int64_t count = 1;
  for (const ir::Dim& dim : type->shape()) {
    shape.push_back(dim.as_static().value_or(0));
    count *= shape.back();
  }
  if (count != static_cast<int64_t>(elements.size())) return std::nullopt;
  return Int64Tensor(elements, shape);
}

/// A shape value computed from symbolic sizes, which has no expression (yet): what it is and
/// which node computed it, for the error where a tensor is needed.
struct SymbolicValue {
  ShapeValue value;
  std::string producer;  ///< NodeContext::Describe of the node that computed it
};

class GraphImporter {
 public:
  GraphImporter(std::map<std::string, int64_t> opsets, const PropagatedValues& shape_values)
      : opsets_(std::move(opsets)), shape_values_(shape_values) {}

  ir::Function Import(const onnx::GraphProto& graph) {
    for (const onnx::TensorProto& initializer : graph.initializer()) {
      Define(initializer.name(), ir::Constant(TensorFromProto(initializer)));
    }
    Array<ir::Var> params;
    SizeVarNames size_vars(graph);
    for (const onnx::ValueInfoProto& input : graph.input()) {
      if (values_.count(input.name()) != 0) continue;  // an initializer: a constant
      ir::Var param = MakeParam(input, size_vars);
      params.push_back(param);
      Define(input.name(), param);
    }
    sizes_.inputs = size_vars.inputs();
    // Sizes are at least 1, as type relations assume and the runtime checks (docs/design.md
    // §20): shape values are simplified and decided under the same assumption.
    for (const auto& [var, input] : sizes_.inputs) sizes_.analyzer.Bind(arith::SizeVar(var), 1);
    for (const onnx::NodeProto& node : graph.node()) ConvertNode(node);
    Array<ir::Expr> outputs;
    for (const onnx::ValueInfoProto& output : graph.output()) {
      outputs.push_back(OutputValue(output.name()));
    }
    ir::Expr body = outputs.size() == 1 ? outputs[0] : ir::Expr(ir::Tuple(outputs));
    return ir::Function(params, body);
  }

 private:
  /// An importer for a body graph of a node of `parent`'s graph: it sees the values of the
  /// graphs around it, and its own names shadow theirs.
  explicit GraphImporter(const GraphImporter* parent)
      : opsets_(parent->opsets_), shape_values_(parent->shape_values_), parent_(parent) {}

  /// What the graph input sizes are (the outermost graph's: bodies add none).
  const GraphSizes& Sizes() const { return parent_ == nullptr ? sizes_ : parent_->Sizes(); }

  /// The values of `graph`'s outputs, its inputs bound to `inputs` (one each).
  std::vector<ir::Expr> ImportBodyGraph(const onnx::GraphProto& graph,
                                        const std::vector<ir::Expr>& inputs) const {
    KILN_CHECK(graph.input_size() == static_cast<int>(inputs.size()), ValueError)
        << "the body graph '" << graph.name() << "' has " << graph.input_size()
        << " inputs, but it is given " << inputs.size();
    GraphImporter body(this);
    for (int i = 0; i < graph.input_size(); ++i) {
      body.Define(graph.input(i).name(), inputs[static_cast<size_t>(i)]);
    }
    for (const onnx::TensorProto& initializer : graph.initializer()) {
      body.Define(initializer.name(), ir::Constant(TensorFromProto(initializer)));
    }
    for (const onnx::NodeProto& node : graph.node()) body.ConvertNode(node);
    std::vector<ir::Expr> outputs;
    for (const onnx::ValueInfoProto& output : graph.output()) {
      outputs.push_back(body.OutputValue(output.name()));
    }
    return outputs;
  }

  /// Parameters named after `graph`'s inputs from `first` on, one per type.
  static std::vector<ir::Expr> BodyParams(const onnx::GraphProto& graph, int first,
                                          const std::vector<ir::Type>& types) {
    std::vector<ir::Expr> params;
    for (size_t i = 0; i < types.size(); ++i) {
      const int input = first + static_cast<int>(i);
      const std::string name = input < graph.input_size() ? graph.input(input).name() : "";
      params.push_back(ir::Var(name.empty() ? "input" : name, types[i]));
    }
    return params;
  }

  static ir::Function BodyFunction(const std::vector<ir::Expr>& params,
                                   const Array<ir::Expr>& result) {
    Array<ir::Var> vars;
    for (const ir::Expr& param : params) vars.push_back(Downcast<ir::Var>(param));
    return ir::Function(vars, ir::Tuple(result));
  }

  /// If: each branch a function of no parameters.
  ir::Expr ConvertIf(const NodeContext& node) const {
    auto branch = [&](const char* name) {
      const std::vector<ir::Expr> outputs = ImportBodyGraph(node.GraphAttr(name), {});
      return ir::Function({},
                          outputs.size() == 1 ? outputs[0] : ir::Tuple(Array<ir::Expr>(outputs)));
    };
    const ir::Function then_branch = branch("then_branch");
    const ir::Function else_branch = branch("else_branch");
    // ONNX lets the branches' extents differ: each such extent becomes a size the run defines.
    const size_t disagreeing =
        transform::CountDisagreeingExtents(transform::InferNodeType(then_branch->body()),
                                           transform::InferNodeType(else_branch->body()));
    const std::vector<arith::SizeExpr> sizes = node.NewSizes(disagreeing);
    return ir::If(node.Input(0), then_branch, else_branch,
                  Array<arith::SizeExpr>(sizes.begin(), sizes.end()));
  }

  /// Loop: an omitted trip count is the largest int64, an omitted condition true.
  ir::Expr ConvertLoop(const NodeContext& node) const {
    const ir::Expr trip_count = node.HasInput(0) ? node.Input(0) : ScalarInt64(INT64_MAX);
    const ir::Expr condition = node.HasInput(1) ? node.Input(1) : ScalarTrue();
    std::vector<ir::Type> param_types{ir::TensorType::Static({}, kInt64),
                                      ir::TensorType::Static({}, kBool)};
    Array<ir::Expr> initial;
    for (size_t i = 2; i < static_cast<size_t>(node.proto().input().size()); ++i) {
      initial.push_back(node.Input(i));
      param_types.push_back(node.Input(i)->checked_type());
    }
    const onnx::GraphProto& graph = node.GraphAttr("body");
    std::vector<ir::Expr> params = BodyParams(graph, 0, param_types);
    std::vector<ir::Expr> outputs = ImportBodyGraph(graph, params);
    KILN_CHECK(outputs.size() > static_cast<size_t>(initial.size()), ValueError)
        << node.Describe() << ": the body must return the condition and the " << initial.size()
        << " carried values first, but it has " << outputs.size() << " outputs";
    if (GeneralizeChangingExtents(node, outputs, param_types)) {
      params = BodyParams(graph, 0, param_types);
      outputs = ImportBodyGraph(graph, params);
    }
    const ir::Function body = BodyFunction(params, Array<ir::Expr>(outputs));
    return ir::Loop(trip_count, condition, initial, body, Iterations(node, body, trip_count));
  }

  /// Whether a carried value's extents change from one iteration to the next (a generation
  /// loop's concatenation): `outputs` (the body's, typed with `param_types`) return it with
  /// other extents than it entered with. If so, each changing axis of its parameter type becomes
  /// a size of its own, so that the body is imported again for any extent and the loop's
  /// result has the extents the run gives it.
  static bool GeneralizeChangingExtents(const NodeContext& node,
                                        const std::vector<ir::Expr>& outputs,
                                        std::vector<ir::Type>& param_types) {
    std::vector<std::pair<size_t, int64_t>> changing;  // (carried parameter, axis)
    for (size_t p = 2; p < param_types.size(); ++p) {
      const auto* entering = param_types[p].as<ir::TensorTypeObj>();
      const auto* returned = transform::InferNodeType(outputs[p - 1]).as<ir::TensorTypeObj>();
      if (entering == nullptr || returned == nullptr ||
          entering->shape().size() != returned->shape().size()) {
        continue;  // type inference names the mismatch
      }
      for (int64_t axis = 0; axis < entering->shape().size(); ++axis) {
        if (!arith::StructuralEqual(entering->shape()[axis].AsSizeExpr(),
                                    returned->shape()[axis].AsSizeExpr())) {
          changing.emplace_back(p, axis);
        }
      }
    }
    const std::vector<arith::SizeExpr> sizes = node.NewSizes(changing.size());
    for (size_t c = 0; c < changing.size(); ++c) {
      const auto [p, axis] = changing[c];
      const auto* type = param_types[p].as<ir::TensorTypeObj>();
      Array<ir::Dim> shape = type->shape();
      shape.Set(axis, ir::Dim::FromSizeExpr(sizes[c]));
      param_types[p] = ir::TensorType(shape, type->dtype());
    }
    return !changing.empty();
  }

  /// Scan as a Loop over the scan axis (ScanLoop). Before opset 9, every input has a leading
  /// batch axis that the body does not see: that Scan is a Loop over the batch entries, each
  /// iteration scanning its entry and returning the final states and the scanned values as
  /// rows, which stack into the batch axis.
  ir::Expr ConvertScan(const NodeContext& node) const {
    const bool batched = node.opset() < 9;
    const size_t first = batched ? 1 : 0;  // Scan-8's first input is sequence_lens
    const size_t num_inputs = node.proto().input().size();
    const int64_t num_scan_inputs = node.Int("num_scan_inputs", 0);
    KILN_CHECK(num_scan_inputs >= 1 && first + static_cast<size_t>(num_scan_inputs) <= num_inputs,
               ValueError)
        << node.Describe() << ": num_scan_inputs is " << num_scan_inputs << " but the node has "
        << num_inputs - first << " states and scan inputs";
    const size_t num_states = num_inputs - first - static_cast<size_t>(num_scan_inputs);
    // Scan-8 scans axis 1 (after the batch axis) in its `directions`.
    ScanAxes scan{
        node.Ints("scan_input_axes").value_or(std::vector<int64_t>(num_scan_inputs, batched)),
        node.Ints(batched ? "directions" : "scan_input_directions")
            .value_or(std::vector<int64_t>(num_scan_inputs, 0)),
        arith::IntImm(0)};
    KILN_CHECK(scan.axes.size() == static_cast<size_t>(num_scan_inputs) &&
                   scan.directions.size() == static_cast<size_t>(num_scan_inputs),
               ValueError)
        << node.Describe() << ": the scan axes and directions need one entry per scan input ("
        << num_scan_inputs << ")";
    for (size_t k = 0; k < scan.axes.size(); ++k) {
      scan.length = CheckedScanLength(node, first + num_states + k, scan);
      if (batched) --scan.axes[k];  // once the batch entry is taken
    }
    std::vector<ir::Expr> states;
    std::vector<ir::Expr> scanned;
    for (size_t i = first; i < num_inputs; ++i) {
      (i < first + num_states ? states : scanned).push_back(node.Input(i));
    }
    if (batched) return BatchLoop(node, states, scanned, scan, EntryLengths(node));
    return PlaceScanOutputs(node, ScanLoop(node, states, scanned, scan), num_states);
  }

  /// Scan-8's sequence_lens, an int64 vector of one length per batch entry; null when absent.
  static ir::Expr EntryLengths(const NodeContext& node) {
    if (!node.HasInput(0)) return {};
    KILN_CHECK(node.InputRank(0) == 1 && DataTypeEqual(node.InputDType(0), kInt64), TypeError)
        << node.Describe() << ": sequence_lens must be an int64 vector, got rank "
        << node.InputRank(0) << " " << DataTypeToString(node.InputDType(0));
    return node.Input(0);
  }

  /// The Scan's outputs from `loop`'s, whose scanned values stack along axis 0 in iteration
  /// order: each reversed where its scan_output_directions entry is 1, and its stacking axis
  /// moved to its scan_output_axes entry.
  static ir::Expr PlaceScanOutputs(const NodeContext& node, const ir::Expr& loop,
                                   size_t num_states) {
    const auto* type = transform::InferNodeType(loop).as<ir::TupleTypeObj>();
    const size_t num_scans = static_cast<size_t>(type->fields().size()) - num_states;
    const std::vector<int64_t> axes =
        node.Ints("scan_output_axes").value_or(std::vector<int64_t>(num_scans, 0));
    const std::vector<int64_t> directions =
        node.Ints("scan_output_directions").value_or(std::vector<int64_t>(num_scans, 0));
    KILN_CHECK(axes.size() == num_scans && directions.size() == num_scans, ValueError)
        << node.Describe() << ": scan_output_axes and scan_output_directions need one entry per "
        << "scan output (" << num_scans << ")";
    auto is_zero = [](int64_t v) { return v == 0; };
    if (std::all_of(axes.begin(), axes.end(), is_zero) &&
        std::all_of(directions.begin(), directions.end(), is_zero)) {
      return loop;
    }
    Array<ir::Expr> outputs;
    for (size_t i = 0; i < num_states + num_scans; ++i) {
      ir::Expr output = ir::TupleGetItem(loop, static_cast<int64_t>(i));
      if (i < num_states) {
        outputs.push_back(output);
        continue;
      }
      const size_t j = i - num_states;
      if (directions[j] != 0) {
        output = MakeCall("strided_slice", {output},
                          {{"begin", Array<int64_t>{-1}},
                           {"end", Array<int64_t>{std::numeric_limits<int64_t>::min()}},
                           {"axes", Array<int64_t>{0}},
                           {"strides", Array<int64_t>{-1}}});
      }
      const auto rank = static_cast<int64_t>(
          type->fields()[static_cast<int64_t>(i)].as<ir::TensorTypeObj>()->shape().size());
      const int64_t axis = axes[j] < 0 ? axes[j] + rank : axes[j];
      KILN_CHECK(axis >= 0 && axis < rank, ValueError)
          << node.Describe() << ": scan_output_axes[" << j << "] = " << axes[j]
          << " is out of range for rank " << rank;
      if (axis != 0) {
        Array<int64_t> order;  // the stacking axis, 0, goes to `axis`
        for (int64_t k = 0; k < rank; ++k) order.push_back(k < axis ? k + 1 : k == axis ? 0 : k);
        output = MakeCall("transpose", {output}, {{"axes", order}});
      }
      outputs.push_back(output);
    }
    return ir::Tuple(outputs);
  }

  /// The scan axis of each scan input, its direction (1: from the end), and their one length.
  struct ScanAxes {
    std::vector<int64_t> axes;
    std::vector<int64_t> directions;
    arith::SizeExpr length;
  };

  /// The length (static or symbolic) of the scan axis of input `input`, that axis normalized
  /// in place; a ValueError when it differs from the length found so far.
  static arith::SizeExpr CheckedScanLength(const NodeContext& node, size_t input, ScanAxes& scan) {
    const size_t k = input - (node.proto().input().size() - scan.axes.size());
    const int64_t rank = static_cast<int64_t>(node.InputRank(input));
    int64_t& axis = scan.axes[k];
    KILN_CHECK(axis >= -rank && axis < rank, ValueError)
        << node.Describe() << ": scan axis " << axis << " of input " << input
        << " is out of range for rank " << rank;
    if (axis < 0) axis += rank;
    arith::SizeExpr length = ExtentOf(node.Input(input), axis);
    KILN_CHECK(k == 0 || scan.length.ToString() == length.ToString(), ValueError)
        << node.Describe() << ": the scan inputs have lengths " << scan.length.ToString() << " and "
        << length.ToString();
    return length;
  }

  /// Extent `axis` of typed tensor `value`.
  static arith::SizeExpr ExtentOf(const ir::Expr& value, int64_t axis) {
    return value->checked_type().as<ir::TensorTypeObj>()->shape()[axis].AsSizeExpr();
  }

  /// `length` as an int64 scalar: a constant, or computed at run time from the extents of
  /// `carrier` (size_values), which has it as an extent.
  static ir::Expr LengthValue(const arith::SizeExpr& length, const ir::Expr& carrier) {
    if (std::optional<int64_t> value = length.as_int()) return ScalarInt64(*value);
    ir::Expr computed = MakeCall("size_values", {ir::Tuple({carrier})},
                                 {{"sizes", SizesAttr({length})}, {"scalar", true}});
    transform::InferNodeType(computed);
    return computed;
  }

  /// A Loop over the scan axis of `scanned`: the body takes row i of each (row length - 1 - i
  /// in reverse), carries `states`, and its scanned values stack along axis 0, which is where
  /// Scan puts them by default.
  ///
  /// With `length` (a Scan-8 entry's sequence_lens, an int64 scalar), the entry's steps past its
  /// length keep its states and scan zeros, as ONNX Runtime's Scan-8 does, and a reverse scan
  /// starts at the entry's own last step. The lengths are taken within [0, the scan's length]: a
  /// longer one runs the whole sequence, a negative one none of it.
  ir::Expr ScanLoop(const NodeContext& node, const std::vector<ir::Expr>& states,
                    const std::vector<ir::Expr>& scanned, const ScanAxes& scan,
                    const ir::Expr& length = {}) const {
    std::vector<ir::Type> state_types;
    state_types.reserve(states.size());
    for (const ir::Expr& state : states) state_types.push_back(state->checked_type());
    const onnx::GraphProto& graph = node.GraphAttr("body");
    std::vector<ir::Expr> inputs = BodyParams(graph, 0, state_types);
    std::vector<ir::Expr> params{ir::Var("iteration", ir::TensorType::Static({}, kInt64)),
                                 ir::Var("condition", ir::TensorType::Static({}, kBool))};
    params.insert(params.end(), inputs.begin(), inputs.end());
    const ir::Expr full = LengthValue(scan.length, scanned[0]);
    const ir::Expr steps =
        length.defined()
            ? MakeCall("minimum", {MakeCall("maximum", {length, ScalarInt64(0)}), full})
            : full;
    // Past a short entry's length the index would go below 0; any row will do, as it is dropped.
    ir::Expr reversed =
        MakeCall("subtract", {MakeCall("subtract", {steps, ScalarInt64(1)}), params[0]});
    if (length.defined()) reversed = MakeCall("maximum", {reversed, ScalarInt64(0)});
    for (size_t k = 0; k < scanned.size(); ++k) {
      const ir::Expr row =
          MakeCall("take", {scanned[k], scan.directions[k] != 0 ? reversed : params[0]},
                   {{"axis", scan.axes[k]}});
      transform::InferNodeType(row);
      inputs.push_back(row);
    }
    std::vector<ir::Expr> outputs = ImportBodyGraph(graph, inputs);
    if (length.defined()) {
      const ir::Expr running = MakeCall("less", {params[0], steps});
      for (size_t k = 0; k < outputs.size(); ++k) {
        const ir::Expr otherwise =
            k < states.size()
                ? inputs[k]
                : MakeScalar(0, outputs[k]->checked_type().as<ir::TensorTypeObj>()->dtype());
        outputs[k] = MakeCall("where", {running, outputs[k], otherwise});
      }
    }
    Array<ir::Expr> result{params[1]};
    for (const ir::Expr& output : outputs) result.push_back(output);
    return ir::Loop(full, ScalarTrue(), Array<ir::Expr>(states.begin(), states.end()),
                    BodyFunction(params, result), scan.length);
  }

  /// Scan-8: a Loop over the batch axis whose body scans entry b of the states and scan inputs
  /// (ScanLoop, for entry b's length when `lengths` is given) and returns its final states and
  /// scanned values, as rows of the outputs.
  ir::Expr BatchLoop(const NodeContext& node, const std::vector<ir::Expr>& states,
                     const std::vector<ir::Expr>& scanned, const ScanAxes& scan,
                     const ir::Expr& lengths) const {
    const arith::SizeExpr batch = ExtentOf(scanned[0], 0);
    const ir::Var entry("entry", ir::TensorType::Static({}, kInt64));
    const ir::Var condition("condition", ir::TensorType::Static({}, kBool));
    auto entry_of = [&entry](const ir::Expr& value) {
      ir::Expr row = MakeCall("take", {value, entry}, {{"axis", int64_t{0}}});
      transform::InferNodeType(row);
      return row;
    };
    std::vector<ir::Expr> entry_states;
    std::vector<ir::Expr> entry_scanned;
    entry_states.reserve(states.size());
    entry_scanned.reserve(scanned.size());
    for (const ir::Expr& state : states) entry_states.push_back(entry_of(state));
    for (const ir::Expr& input : scanned) entry_scanned.push_back(entry_of(input));
    const ir::Expr inner = ScanLoop(node, entry_states, entry_scanned, scan,
                                    lengths.defined() ? entry_of(lengths) : ir::Expr());
    const ir::Type inner_type = transform::InferNodeType(inner);
    Array<ir::Expr> result{condition};
    const auto* fields = inner_type.as<ir::TupleTypeObj>();
    for (int64_t i = 0; i < fields->fields().size(); ++i) {
      result.push_back(ir::TupleGetItem(inner, i));
    }
    return ir::Loop(LengthValue(batch, scanned[0]), ScalarTrue(), {},
                    BodyFunction({entry, condition}, result), batch);
  }

  static ir::Expr ScalarInt64(int64_t value) {
    return ir::Constant(Int64Tensor({value}, std::vector<int64_t>{}));
  }
  static ir::Expr ScalarTrue() { return ir::Constant(FilledTensor({}, kBool, 1)); }

  /// A Loop's iteration count: its trip count when that is constant and nothing can stop it
  /// early (its condition is constant true on entry and passed through, or returned constant
  /// true, by the body), else a size of its own that the run defines.
  static arith::SizeExpr Iterations(const NodeContext& node, const ir::Function& body,
                                    const ir::Expr& trip_count) {
    const std::optional<int64_t> trips = ConstantScalar(trip_count);
    const ir::Expr& returned = body->body().as<ir::TupleObj>()->fields()[0];
    const bool never_stops = (!node.HasInput(1) || IsTrue(node.Input(1))) &&
                             (returned.same_as(body->params()[1]) || IsTrue(returned));
    if (node.HasInput(0) && trips.has_value() && *trips >= 0 && never_stops) {
      return arith::IntImm(*trips);
    }
    return node.NewSizes(1)[0];
  }

  /// The value of a constant of one element; nullopt for anything else.
  static std::optional<int64_t> ConstantScalar(const ir::Expr& value) {
    const auto* constant = value.as<ir::ConstantObj>();
    if (constant == nullptr) return std::nullopt;
    const std::vector<int64_t> elements = TensorAsInts(constant->data());
    if (elements.size() != 1) return std::nullopt;
    return elements[0];
  }

  static bool IsTrue(const ir::Expr& value) { return ConstantScalar(value).value_or(0) != 0; }

  void Define(const std::string& name, ir::Expr value) {
    transform::InferNodeType(value);
    NoteCarriedSizes(value);
    values_[name] = std::move(value);
  }

  /// Records `value` as the carrier of each size variable that is one of its dimensions and that
  /// no graph input's shape gives (a size computed from tensor values, docs/design.md §22), so
  /// that a shape value using the size can be computed from `value`'s shape at run time.
  void NoteCarriedSizes(const ir::Expr& value) {
    const auto* tensor = value->checked_type().as<ir::TensorTypeObj>();
    if (tensor == nullptr) return;
    for (const ir::Dim& dim : tensor->shape()) {
      const auto* var = dim.AsSizeExpr().as<arith::SizeVarObj>();
      if (var == nullptr || Sizes().inputs.count(var->name().str()) != 0 ||
          FindCarrier(var->name().str()).defined()) {
        continue;
      }
      carriers_.emplace(var->name().str(), value);
    }
  }

  /// The value whose shape gives size variable `var` (a graph input's, or a carrier noted in
  /// this graph or one around it); null when there is none.
  ir::Expr FindCarrier(const std::string& var) const {
    auto input = Sizes().inputs.find(var);
    if (input != Sizes().inputs.end()) return Lookup(input->second);
    auto carrier = carriers_.find(var);
    if (carrier != carriers_.end()) return carrier->second;
    return parent_ == nullptr ? ir::Expr() : parent_->FindCarrier(var);
  }

  ir::Expr Lookup(const std::string& name) const {
    auto it = values_.find(name);
    if (it != values_.end()) return it->second;
    KILN_CHECK(parent_ != nullptr && FindSymbolic(name) == nullptr, ValueError)
        << "value '" << name << "' is never defined";
    return parent_->Lookup(name);
  }

  /// The symbolic shape value named `name` in this graph or a graph around it, or nullptr; a
  /// name this graph defines as a tensor hides an outer one.
  const SymbolicValue* FindSymbolic(const std::string& name) const {
    auto it = symbolic_values_.find(name);
    if (it != symbolic_values_.end()) return &it->second;
    if (values_.count(name) != 0 || parent_ == nullptr) return nullptr;
    return parent_->FindSymbolic(name);
  }

  /// Graph output `name`, which must be a tensor: NotImplementedError for a symbolic shape value.
  ir::Expr OutputValue(const std::string& name) const {
    const SymbolicValue* symbolic = FindSymbolic(name);
    if (symbolic != nullptr) {
      if (ir::Expr tensor = MaterializedValue(symbolic->value); tensor.defined()) {
        return tensor;
      }
    }
    KILN_CHECK(symbolic == nullptr, NotImplementedError)
        << "graph output '" << name << "' is computed from symbolic sizes at run time (its value "
        << symbolic->value.ToString() << ", by " << symbolic->producer
        << "), and Kiln does not materialize run-time shape values as tensors yet; "
        << SpecializeHint(Sizes().inputs, symbolic->value.elements);
    return Lookup(name);
  }

  /// `value` as a tensor computed at run time (size_values), for a converter that needs it as
  /// one; null when a size in it has no carrier (FindCarrier).
  ir::Expr MaterializedValue(const ShapeValue& value) const {
    Array<ir::Expr> carriers;
    std::set<const Object*> carrying;
    for (const arith::SizeExpr& element : value.elements) {
      for (const std::string& var : arith::FreeSizeVars(element)) {
        const ir::Expr carrier = FindCarrier(var);
        if (!carrier.defined()) return ir::Expr();
        if (carrying.insert(carrier.get()).second) carriers.push_back(carrier);
      }
    }
    ir::Expr tensor = MakeCall("size_values", {ir::Tuple(carriers)},
                               {{"sizes", SizesAttr(value.elements)}, {"scalar", value.scalar}});
    if (!DataTypeEqual(value.dtype, DLDataType{kDLInt, 64, 1})) {
      tensor = MakeCall("cast", {tensor}, {{"dtype", String(DataTypeToString(value.dtype))}});
    }
    transform::InferNodeType(tensor);
    return tensor;
  }

  /// What the importer has for value `name` as a node's input.
  NodeInput InputValue(const std::string& name) const {
    if (name.empty()) return {};  // an omitted optional input
    if (const SymbolicValue* symbolic = FindSymbolic(name)) {
      const ShapeValue& value = symbolic->value;
      return {ir::Expr(), std::nullopt, value, [this, value] { return MaterializedValue(value); }};
    }
    ir::Expr expr = Lookup(name);
    std::optional<Tensor> propagated = PropagatedValue(shape_values_, name, expr);
    return {std::move(expr), std::move(propagated), std::nullopt, nullptr};
  }

  void ConvertNode(const onnx::NodeProto& node) {
    std::vector<NodeInput> inputs;
    for (const std::string& name : node.input()) inputs.push_back(InputValue(name));
    const int64_t opset = NodeOpset(node, opsets_);
    NodeContext context(node, opset, std::move(inputs), Sizes());
    try {
      if (std::optional<ShapeValue> shape_value = PropagateShapeValue(context)) {
        DefineShapeValue(context, std::move(*shape_value));
        return;
      }
      ir::Expr value = !IsControlFlow(node)       ? Convert(context)
                       : node.op_type() == "If"   ? ConvertIf(context)
                       : node.op_type() == "Loop" ? ConvertLoop(context)
                                                  : ConvertScan(context);
      transform::InferNodeType(value);
      DefineOutputs(context, value);
    } catch (const Error& error) {
      const std::string domain = NodeDomain(node);
      throw error.WithContext("while importing " + context.Describe() +
                              (domain.empty() ? "" : " of domain '" + domain + "'") + " (opset " +
                              std::to_string(opset) + ")");
    }
  }

  /// Names the node's one output: the Constant of an all-constant shape value (what the
  /// converters made of such values before shape values existed), else the symbolic value.
  void DefineShapeValue(const NodeContext& node, ShapeValue value) {
    const std::string& name = node.proto().output(0);
    if (value.IsSymbolic()) {
      symbolic_values_[name] = {std::move(value), node.Describe()};
    } else {
      Define(name, ir::Constant(ShapeValueTensor(value)));
    }
  }

  /// The node's value from its converter, which CheckSupported made sure exists.
  static ir::Expr Convert(const NodeContext& node) {
    const onnx::NodeProto& proto = node.proto();
    if (!NodeDomain(proto).empty()) {
      // Looked up per node, never cached (a converter may have been removed since the check).
      std::optional<Function> convert = FindCustomConverter(proto);
      KILN_CHECK(convert.has_value(), NotImplementedError)
          << node.Describe() << ": " << MissingCustomConverterHint(proto);
      return ConvertCustomNode(*convert, node, node.opset());
    }
    const Converter* convert = FindConverter(proto.op_type(), node.opset());
    KILN_ICHECK(convert != nullptr) << proto.op_type();
    return (*convert)(node);
  }

  /// Names the node's outputs: the value itself, or the fields of a tuple-typed value.
  void DefineOutputs(const NodeContext& node, const ir::Expr& value) {
    const auto* tuple = value->checked_type().as<ir::TupleTypeObj>();
    const onnx::NodeProto& proto = node.proto();
    if (tuple == nullptr || (NodeDomain(proto).empty() && ProducesSequence(proto.op_type()))) {
      KILN_CHECK(node.NumOutputs() <= 1, NotImplementedError)
          << node.Describe() << ": only the first output is supported";
      if (node.NumOutputs() == 1) Define(proto.output(0), value);
      return;
    }
    KILN_CHECK(node.NumOutputs() <= static_cast<size_t>(tuple->fields().size()), InternalError)
        << node.Describe() << " has more outputs than its converter made";
    for (size_t i = 0; i < node.NumOutputs(); ++i) {
      const std::string& name = proto.output(static_cast<int>(i));
      if (!name.empty()) Define(name, ir::TupleGetItem(value, static_cast<int64_t>(i)));
    }
  }

  std::map<std::string, int64_t> opsets_;
  const PropagatedValues& shape_values_;
  std::unordered_map<std::string, ir::Expr> values_;
  std::unordered_map<std::string, SymbolicValue> symbolic_values_;
  std::unordered_map<std::string, ir::Expr> carriers_;  ///< NoteCarriedSizes
  GraphSizes sizes_;
  const GraphImporter* parent_ = nullptr;  ///< the graph around this body graph, if any
};

}  // namespace

ir::IRModule ImportGraph(const LoadedModel& loaded) {
  const onnx::ModelProto& model = loaded.model;
  const std::map<std::string, int64_t> opsets = DomainOpsets(model);
  CheckSupported(model.graph(), opsets);
  ir::IRModule module = ir::IRModule::Create();
  module.Add(ir::GlobalVar("main"),
             GraphImporter(opsets, loaded.shape_values).Import(model.graph()));
  return module;
}

}  // namespace onnx_import
}  // namespace frontend
}  // namespace kiln
