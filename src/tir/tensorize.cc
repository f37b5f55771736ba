// Tensorize (kiln/tir/schedule.h, docs/design.md §28): a loop nest is matched against a tensor
// intrinsic's description and replaced by what the intrinsic's implementation builds, typically
// the call of a hand-written micro-kernel on the regions of the buffers the nest reads and writes.
//
// The match is structural, walking both trees by their registered field lists (so plugin nodes
// take part): the same kinds, loops paired in order (the description's loop variable stands for
// the nest's), extents equal once the description's sizes are bound, and every buffer access of
// the description found in the nest at an offset that does not vary inside the nest:
//   nest index = offset + description index (its loop variables renamed).
#include <kiln/arith/analyzer.h>
#include <kiln/ffi/map.h>
#include <kiln/ffi/registry.h>
#include <kiln/tir/builtin_nodes.h>
#include <kiln/tir/schedule.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "schedule_internal.h"

namespace kiln {
namespace tir {
namespace {

constexpr const char* kIntrinPrefix = "tir.intrin.";
constexpr const char* kDescSuffix = ".desc";

/// Why a nest does not match the description; Tensorize's error adds what was tensorized.
struct Mismatch {
  std::string reason;
};

/// Where one of the description's buffers lies in the function: a buffer of the function and the
/// indices of the region's first element.
struct Region {
  Node buffer;
  std::vector<arith::SizeExpr> offset;
};

std::string NameOf(const Node& buffer) { return buffer.field_as<String>("name").str(); }

/// A node that accesses a buffer element: load, store, address, and any plugin kind with the
/// same two fields.
bool IsAccess(const Node& node) {
  bool buffer = false;
  bool indices = false;
  for (const FieldInfo& field : node->info().fields) {
    buffer = buffer || (field.name == "buffer" && field.kind == FieldKind::kBufferRef);
    indices = indices || (field.name == "indices" && field.kind == FieldKind::kIndices);
  }
  return buffer && indices;
}

/// Whether two fields that hold a name, a dtype or a number are equal.
bool SameScalar(const Any& a, const Any& b, FieldKind kind) {
  switch (kind) {
    case FieldKind::kDType: return DataTypeEqual(a.cast<DLDataType>(), b.cast<DLDataType>());
    case FieldKind::kInt: return a.cast<int64_t>() == b.cast<int64_t>();
    case FieldKind::kFloat: return a.cast<double>() == b.cast<double>();
    default: return a.cast<String>().str() == b.cast<String>().str();
  }
}

class NestMatcher {
 public:
  explicit NestMatcher(const Node& desc) {
    for (const Any& param : desc.field_as<Array<Any>>("params")) {
      const auto buffer = param.cast<Node>();
      desc_buffers_.push_back(NameOf(buffer));
      for (const Any& extent : buffer.field_as<Array<Any>>("shape")) {
        for (const std::string& var : arith::FreeSizeVars(extent.cast<arith::SizeExpr>())) {
          desc_sizes_.insert(var);
        }
      }
    }
  }

  void Match(const Node& desc, const Node& code) {
    if (desc->name() != code->name()) {
      throw Mismatch{"the description has '" + desc->name() + "' where the nest has '" +
                     code->name() + "'"};
    }
    if (desc.is("for")) return MatchLoop(desc, code);
    if (IsAccess(desc)) return MatchAccess(desc, code);
    MatchFields(desc, code, {});
  }

  /// Every buffer and size of the description is bound, else a Mismatch naming it.
  void CheckAllBound() const {
    for (const std::string& name : desc_buffers_) {
      if (regions_.count(name) == 0) {
        throw Mismatch{"the description's buffer '" + name + "' is not accessed in the nest"};
      }
    }
    for (const std::string& name : desc_sizes_) {
      if (sizes_.count(name) == 0) {
        throw Mismatch{"no loop extent binds the description's size '" + name + "'"};
      }
    }
  }

  /// What the implementation is given: for each of the description's buffers, the function's
  /// buffer, the region's offset and the buffer's row-major strides (elements) over the axes the
  /// description indexes; and each of the description's sizes.
  Map<String, Any> Buffers(const Node& desc) const {
    Map<String, Any> buffers;
    for (const Any& param : desc.field_as<Array<Any>>("params")) {
      const auto desc_buffer = param.cast<Node>();
      const Region& region = regions_.at(NameOf(desc_buffer));
      const auto shape = region.buffer.field_as<Array<Any>>("shape");
      const int64_t axes = desc_buffer.field_as<Array<Any>>("shape").size();
      std::vector<arith::SizeExpr> strides(static_cast<size_t>(axes), arith::IntImm(1));
      for (int64_t t = axes - 2; t >= 0; --t) {
        const int64_t next = shape.size() - axes + t + 1;
        strides[t] = analyzer_.Simplify(strides[t + 1] * shape[next].cast<arith::SizeExpr>());
      }
      Map<String, Any> entry;
      entry.Set(String("buffer"), region.buffer);
      entry.Set(String("offset"), Array<Any>(region.offset.begin(), region.offset.end()));
      entry.Set(String("strides"), Array<Any>(strides.begin(), strides.end()));
      buffers.Set(String(NameOf(desc_buffer)), entry);
    }
    return buffers;
  }

  Map<String, Any> Sizes() const {
    Map<String, Any> sizes;
    for (const auto& [name, value] : sizes_) sizes.Set(String(name), value);
    return sizes;
  }

 private:
  void MatchLoop(const Node& desc, const Node& code) {
    MatchIndex(desc.field_as<arith::SizeExpr>("extent"), code.field_as<arith::SizeExpr>("extent"),
               "the extent of loop '" + internal::LoopVar(code) + "'");
    const std::string var = internal::LoopVar(code);
    renames_[internal::LoopVar(desc)] = arith::SizeVar(String(var));
    nest_vars_[var] = arith::IntImm(0);
    Match(desc.field_as<Node>("body"), code.field_as<Node>("body"));
  }

  void MatchAccess(const Node& desc, const Node& code) {
    const auto desc_buffer = desc.field_as<Node>("buffer");
    const auto buffer = code.field_as<Node>("buffer");
    const std::string name = NameOf(desc_buffer);
    const std::string where = "buffer '" + NameOf(buffer) + "' (the description's '" + name + "')";
    if (!DataTypeEqual(desc_buffer.field_as<DLDataType>("dtype"),
                       buffer.field_as<DLDataType>("dtype"))) {
      throw Mismatch{where + " has dtype " +
                     DataTypeToString(buffer.field_as<DLDataType>("dtype")) + ", not " +
                     DataTypeToString(desc_buffer.field_as<DLDataType>("dtype"))};
    }
    const auto desc_indices = desc.field_as<Array<Any>>("indices");
    const auto indices = code.field_as<Array<Any>>("indices");
    if (indices.size() < desc_indices.size()) {
      throw Mismatch{where + " has fewer axes than the description indexes"};
    }
    const int64_t lead = indices.size() - desc_indices.size();
    std::vector<arith::SizeExpr> offset;
    for (int64_t d = 0; d < indices.size(); ++d) {
      const auto index = indices[d].cast<arith::SizeExpr>();
      const arith::SizeExpr start = analyzer_.Simplify(arith::Substitute(index, nest_vars_));
      if (d < lead
              ? !analyzer_.CanProveEqual(start, index)
              : !analyzer_.CanProveEqual(
                    index, start + Translate(desc_indices[d - lead].cast<arith::SizeExpr>()))) {
        throw Mismatch{where + " is read or written at index " + index.ToString() + " of axis " +
                       std::to_string(d) + ", which is not an offset plus the description's " +
                       (d < lead ? std::string("(the axis is not the description's)")
                                 : desc_indices[d - lead].cast<arith::SizeExpr>().ToString())};
      }
      offset.push_back(start);
    }
    BindRegion(name, where, Region{buffer, offset});
    MatchFields(desc, code, {"buffer", "indices"});
  }

  void BindRegion(const std::string& name, const std::string& where, const Region& region) {
    auto [it, inserted] = regions_.emplace(name, region);
    if (inserted) return;
    bool same = NameOf(it->second.buffer) == NameOf(region.buffer);
    for (size_t d = 0; same && d < region.offset.size(); ++d) {
      same = analyzer_.CanProveEqual(it->second.offset[d], region.offset[d]);
    }
    if (!same) throw Mismatch{where + " is accessed as two different regions"};
  }

  void MatchFields(const Node& desc, const Node& code, const std::set<std::string>& skip) {
    const std::vector<FieldInfo>& fields = desc->info().fields;
    for (size_t i = 0; i < fields.size(); ++i) {
      const FieldInfo& field = fields[i];
      if (skip.count(field.name) != 0) continue;
      const Any& a = desc->fields()[i];
      const Any& b = code->fields()[i];
      if (a.is_none() || b.is_none()) {
        if (a.is_none() != b.is_none()) {
          throw Mismatch{"field '" + field.name + "' of '" + desc->name() + "' is empty in one"};
        }
        continue;
      }
      MatchField(desc->name(), field, a, b);
    }
  }

  void MatchField(const std::string& kind, const FieldInfo& field, const Any& a, const Any& b) {
    switch (field.kind) {
      case FieldKind::kValue:
      case FieldKind::kStmt: return Match(a.cast<Node>(), b.cast<Node>());
      case FieldKind::kValues:
      case FieldKind::kStmts:
      case FieldKind::kIndices: {
        const auto xs = a.cast<Array<Any>>();
        const auto ys = b.cast<Array<Any>>();
        if (xs.size() != ys.size()) {
          throw Mismatch{"'" + kind + "' has " + std::to_string(ys.size()) + " " + field.name +
                         " in the nest and " + std::to_string(xs.size()) + " in the description"};
        }
        for (int64_t j = 0; j < xs.size(); ++j) {
          if (field.kind == FieldKind::kIndices) {
            MatchIndex(xs[j].cast<arith::SizeExpr>(), ys[j].cast<arith::SizeExpr>(), field.name);
          } else {
            Match(xs[j].cast<Node>(), ys[j].cast<Node>());
          }
        }
        return;
      }
      case FieldKind::kIndex:
        return MatchIndex(a.cast<arith::SizeExpr>(), b.cast<arith::SizeExpr>(), field.name);
      case FieldKind::kBuffer:
      case FieldKind::kBuffers:
      case FieldKind::kBufferRef:
        throw Mismatch{"the description's '" + kind +
                       "' declares or names a buffer outside an access, which tensorize cannot "
                       "match"};
      default:
        if (!SameScalar(a, b, field.kind)) {
          throw Mismatch{"field '" + field.name + "' of '" + kind + "' differs"};
        }
    }
  }

  /// An index of the description, a size variable not yet bound binding to the nest's.
  void MatchIndex(const arith::SizeExpr& desc, const arith::SizeExpr& code,
                  const std::string& what) {
    if (const auto* var = desc.as<arith::SizeVarObj>()) {
      const std::string name = var->name().str();
      if (desc_sizes_.count(name) != 0 && sizes_.count(name) == 0) {
        sizes_.emplace(name, code);
        return;
      }
    }
    const arith::SizeExpr expected = Translate(desc);
    if (!analyzer_.CanProveEqual(expected, code)) {
      throw Mismatch{what + " is " + code.ToString() + " where the description has " +
                     desc.ToString() + " (here " + analyzer_.Simplify(expected).ToString() + ")"};
    }
  }

  /// A description's index in the nest's terms: its loop variables renamed, its sizes bound.
  arith::SizeExpr Translate(const arith::SizeExpr& desc) const {
    std::map<std::string, arith::SizeExpr> values = renames_;
    for (const std::string& var : arith::FreeSizeVars(desc)) {
      if (values.count(var) != 0) continue;
      auto size = sizes_.find(var);
      if (size == sizes_.end()) {
        throw Mismatch{"the description uses '" + var + "' before a loop extent binds it"};
      }
      values.emplace(var, size->second);
    }
    return arith::Substitute(desc, values);
  }

  arith::Analyzer analyzer_;
  std::vector<std::string> desc_buffers_;
  std::set<std::string> desc_sizes_;
  std::map<std::string, arith::SizeExpr> renames_;    ///< description loop var -> the nest's
  std::map<std::string, arith::SizeExpr> nest_vars_;  ///< the nest's loop vars -> 0
  std::map<std::string, arith::SizeExpr> sizes_;      ///< description size -> the nest's
  std::map<std::string, Region> regions_;             ///< description buffer -> its region
};

/// The registered intrinsics' names.
std::string ListIntrins() {
  std::string names;
  for (const std::string& name : Function::ListGlobalNames()) {
    const size_t prefix = std::string(kIntrinPrefix).size();
    const size_t suffix = std::string(kDescSuffix).size();
    if (name.rfind(kIntrinPrefix, 0) == 0 && name.size() > prefix + suffix &&
        name.compare(name.size() - suffix, suffix, kDescSuffix) == 0) {
      names += (names.empty() ? "" : ", ") + name.substr(prefix, name.size() - prefix - suffix);
    }
  }
  return names.empty() ? "none" : names;
}

Node IntrinDesc(const std::string& intrin, const std::string& func_name) {
  const std::optional<Function> desc =
      Function::GetGlobal((kIntrinPrefix + intrin + kDescSuffix).c_str());
  KILN_CHECK(desc.has_value(), ValueError)
      << "tir schedule Tensorize: " << func_name << ": no tensor intrinsic '" << intrin
      << "' is registered (registered: " << ListIntrins() << ")";
  return (*desc)().cast<Node>();
}

}  // namespace

void RegisterTensorIntrin(const std::string& name, const Node& desc, const Function& impl) {
  KILN_CHECK(desc.is("prim_func") && desc.field_as<Node>("body").is("for"), ValueError)
      << "RegisterTensorIntrin('" << name
      << "'): the description must be a prim_func whose body is the loop nest it computes";
  Function::SetGlobal((kIntrinPrefix + name + kDescSuffix).c_str(),
                      Function::FromTyped([desc]() { return desc; }), /*allow_override=*/true);
  Function::SetGlobal((kIntrinPrefix + name).c_str(), impl, /*allow_override=*/true);
}

Node Tensorize(const Node& func, const std::string& loop, const std::string& intrin) {
  const std::string name = internal::FuncName(func);
  const Node nest = internal::FindLoop(func, loop, "Tensorize");
  const Node desc = IntrinDesc(intrin, name);
  NestMatcher matcher(desc);
  try {
    matcher.Match(desc.field_as<Node>("body"), nest);
    matcher.CheckAllBound();
  } catch (const Mismatch& mismatch) {
    KILN_THROW(ValueError) << "tir schedule Tensorize: loop '" << loop << "' of " << name
                           << " does not compute what intrinsic '" << intrin
                           << "' describes: " << mismatch.reason;
  }
  const Any built = Function::GetGlobalRequired((kIntrinPrefix + intrin).c_str())(
      matcher.Buffers(desc), matcher.Sizes());
  const std::optional<Node> stmt = built.as<Node>();
  KILN_CHECK(stmt.has_value() && (*stmt)->role() == NodeRole::kStmt, TypeError)
      << "tir schedule Tensorize: intrinsic '" << intrin << "' must build a statement, got "
      << built.type_str();
  return internal::Replace(func, nest, *stmt);
}

KILN_REGISTER_GLOBAL("tir.schedule.Tensorize").set_body_typed(Tensorize);
KILN_REGISTER_GLOBAL("tir.RegisterTensorIntrin").set_body_typed(RegisterTensorIntrin);

}  // namespace tir
}  // namespace kiln
