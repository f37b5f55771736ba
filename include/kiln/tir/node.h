/// The tensor-level IR (docs/design.md §21): loops, buffers and scalar arithmetic under the graph,
/// where fused kernels are generated and plugins add loop-level nodes and passes.
///
/// Every node, built-in or from a plugin, is a `Node`: a registered kind (NodeInfo: its name in
/// the text format, its role and an ordered list of typed fields) and the values of those
/// fields. Structural equality, hashing, the text printer and parser, and the generic visitor
/// and mutator walk the field lists, so a plugin that registers a kind (a number format, a
/// hardware intrinsic) gets all of them without a core rebuild:
///
///   RegisterNode({"my_ext.fp8_cast", NodeRole::kValue,
///                 {{"value", FieldKind::kValue}},
///                 [](const std::vector<Any>&) { return DLDataType{kDLUInt, 8, 1}; }});
///   Node cast = MakeNode("my_ext.fp8_cast", {load});
///   AsText(cast);  // "my_ext.fp8_cast(value=load(buffer=%a, indices=[i]))"
///
/// Index positions (loop extents, buffer shapes, load and store indices) hold arith::SizeExpr,
/// so the analyzer that proves shapes proves loop bounds; loop variables are size variables,
/// matched by name. Values are typed scalar expressions. The built-in kinds are listed in
/// builtin_nodes.h.
#ifndef KILN_TIR_NODE_H_
#define KILN_TIR_NODE_H_

#include <kiln/arith/size_expr.h>
#include <kiln/ffi/any.h>
#include <kiln/ffi/array.h>
#include <kiln/ffi/tensor.h>

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kiln {
namespace tir {

/// What a field holds, which decides how it is checked, compared, printed and parsed.
enum class FieldKind : int32_t {
  kIndex,      ///< an arith::SizeExpr: `n * 64 + 1` (given as one, an integer or its text)
  kIndices,    ///< Array of arith::SizeExpr: `[i, j + 1]`
  kValue,      ///< a value node
  kValues,     ///< Array of value nodes
  kStmt,       ///< a statement node
  kStmts,      ///< Array of statement nodes
  kBuffer,     ///< a buffer declared here (a function parameter, an allocation): printed whole
  kBuffers,    ///< Array of buffers declared here
  kBufferRef,  ///< a buffer declared around this node: printed `%name`
  kIdent,      ///< a name (String) that is an identifier: a variable, a loop kind
  kDType,      ///< a data type
  kInt,        ///< an integer
  kFloat,      ///< a float
  kString,     ///< any string, printed quoted
};

struct FieldInfo {
  FieldInfo(std::string field_name, FieldKind field_kind, bool may_be_none = false)
      : name(std::move(field_name)), kind(field_kind), optional(may_be_none) {}

  std::string name;
  FieldKind kind;
  bool optional;  ///< may be None (printed `none`)
};

/// What a node is: a scalar value, a statement, a buffer or a function.
enum class NodeRole : int32_t { kValue, kStmt, kBuffer, kFunc };

/// A registered kind of node.
struct NodeInfo {
  using DTypeRule = std::function<DLDataType(const std::vector<Any>&)>;
  using Check = std::function<void(const std::vector<Any>&)>;
  NodeInfo(std::string kind_name, NodeRole kind_role, std::vector<FieldInfo> kind_fields,
           DTypeRule dtype_rule = nullptr, Check extra_check = nullptr)
      : name(std::move(kind_name)),
        role(kind_role),
        fields(std::move(kind_fields)),
        dtype(std::move(dtype_rule)),
        check(std::move(extra_check)) {}

  std::string name;  ///< its text-format name: "for", "add", "my_ext.fp8_cast"
  NodeRole role;
  std::vector<FieldInfo> fields;
  /// Values only: the dtype of a node with these fields; a TypeError (naming the node) when the
  /// fields disagree (an add of float32 and int32).
  DTypeRule dtype;
  /// Optional further checks of the fields (a loop kind is one of the known ones); throws.
  Check check;
};

/// Registers a kind; a ValueError when the name is taken or not a name the text format reads
/// (identifiers joined by dots), or a value kind has no dtype rule.
KILN_API void RegisterNode(NodeInfo info);
/// The kind named `name`, or nullptr.
KILN_API const NodeInfo* FindNode(std::string_view name);
/// The names of every registered kind, sorted.
KILN_API std::vector<std::string> ListNodes();

class NodeObj : public Object {
 public:
  static constexpr const char* _type_key = "kiln.tir.Node";
  static constexpr bool _type_final = true;
  KILN_DECLARE_OBJECT_INFO(NodeObj, Object);

  NodeObj(const NodeInfo* info, std::vector<Any> fields, DLDataType dtype)
      : info_(info), fields_(std::move(fields)), dtype_(dtype) {}

  const NodeInfo& info() const { return *info_; }
  const std::string& name() const { return info_->name; }
  NodeRole role() const { return info_->role; }
  const std::vector<Any>& fields() const { return fields_; }
  /// The value's dtype; meaningless for other roles.
  DLDataType dtype() const { return dtype_; }

 private:
  const NodeInfo* info_;  // registered kinds live as long as the process
  std::vector<Any> fields_;
  DLDataType dtype_;
};

/// A node of the tensor-level IR; null when default-constructed.
class Node : public ObjectRef {
 public:
  KILN_DEFINE_OBJECT_REF_METHODS(Node, ObjectRef, NodeObj);

  /// Whether the node is of kind `name`.
  bool is(std::string_view name) const { return defined() && get()->name() == name; }
  /// Field `name`; a KeyError naming the node's kind and its fields when it has none.
  KILN_API const Any& field(std::string_view name) const;
  template <typename T>
  T field_as(std::string_view name) const {
    return field(name).cast<T>();
  }
};

/// A node of kind `name` with `fields` in its registered order. Each field is checked against
/// its kind, and the kind's own checks run; a ValueError (TypeError for mismatched dtypes) names
/// the kind and the field.
KILN_API Node MakeNode(std::string_view name, std::vector<Any> fields);

/// `node` with the fields in `changes` (by name) replaced, checked as MakeNode checks.
KILN_API Node WithFields(const Node& node, const std::vector<std::pair<std::string, Any>>& changes);

/// True when `a` and `b` are of the same kinds with equal fields, recursively. Size expressions
/// compare structurally (arith::StructuralEqual), buffers by their fields, buffer references by
/// name, floats by bits.
KILN_API bool StructuralEqual(const Node& a, const Node& b);
/// A hash consistent with StructuralEqual.
KILN_API uint64_t StructuralHash(const Node& node);

/// Calls `visit` on `node` and every node under it, parents first; `visit` returns false to skip
/// a node's children.
KILN_API void Visit(const Node& node, const std::function<bool(const Node&)>& visit);
/// `node` rebuilt bottom up: each node's children are mutated first, then `rewrite` may replace
/// the node (it returns nullopt to keep it). Unchanged subtrees are shared, not copied.
KILN_API Node Mutate(const Node& node,
                     const std::function<std::optional<Node>(const Node&)>& rewrite);

/// `node` with the size variables named in `values` replaced in every index under it (loop
/// extents, load and store indices, buffer shapes): how a loop variable is rewritten when loops
/// are split or fused, or values inlined. Nodes without such a variable are shared, not copied.
KILN_API Node SubstituteIndices(const Node& node,
                                const std::map<std::string, arith::SizeExpr>& values);

/// The text ParseText reads back: `kind(field=value, ...)`, statements one per line.
KILN_API std::string AsText(const Node& node);
/// The node `text` writes; a ValueError with the line, the column and a caret otherwise. A
/// buffer reference `%name` must name a buffer declared around it (a function parameter, an
/// allocation).
KILN_API Node ParseText(std::string_view text);

}  // namespace tir
}  // namespace kiln

#endif  // KILN_TIR_NODE_H_
