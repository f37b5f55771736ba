// The text printer of the tensor-level IR (kiln/tir/node.h): every node as
// `kind(field=value, ...)`, over its registered fields; a statement field starts a new, deeper
// line, so loop nests read top to bottom.
#include <cmath>
#include <cstdio>
#include <sstream>

#include "node_internal.h"

namespace kiln {
namespace tir {
namespace {

class Printer {
 public:
  std::string Print(const Node& node) {
    PrintNode(node, 0, 0);
    return out_.str();
  }

 private:
  void PrintNode(const Node& node, int indent, int depth) {
    KILN_CHECK(depth < internal::kMaxDepth, ValueError)
        << "tir: nodes nest deeper than " << internal::kMaxDepth << " levels";
    out_ << node->name() << "(";
    const std::vector<FieldInfo>& fields = node->info().fields;
    for (size_t i = 0; i < fields.size(); ++i) {
      if (i > 0) out_ << ", ";
      out_ << fields[i].name << "=";
      PrintField(node->fields()[i], fields[i].kind, indent, depth + 1);
    }
    out_ << ")";
  }

  void NewLine(int indent) { out_ << "\n" << std::string(static_cast<size_t>(indent), ' '); }

  void PrintField(const Any& value, FieldKind kind, int indent, int depth) {
    if (value.is_none()) {
      out_ << "none";
      return;
    }
    switch (kind) {
      case FieldKind::kIndex: out_ << value.cast<arith::SizeExpr>(); return;
      case FieldKind::kIndices:
      case FieldKind::kValues:
      case FieldKind::kBuffers: PrintInline(value.cast<Array<Any>>(), kind, indent, depth); return;
      case FieldKind::kStmts: {
        out_ << "[";
        for (const Any& item : value.cast<Array<Any>>()) {
          NewLine(indent + 2);
          PrintNode(item.cast<Node>(), indent + 2, depth);
          out_ << ",";
        }
        NewLine(indent);
        out_ << "]";
        return;
      }
      case FieldKind::kStmt:
        NewLine(indent + 2);
        PrintNode(value.cast<Node>(), indent + 2, depth);
        return;
      case FieldKind::kValue:
      case FieldKind::kBuffer: PrintNode(value.cast<Node>(), indent, depth); return;
      case FieldKind::kBufferRef:
        out_ << "%" << value.cast<Node>().field_as<String>("name").str();
        return;
      case FieldKind::kIdent: out_ << value.cast<std::string>(); return;
      case FieldKind::kString: PrintString(value.cast<std::string>()); return;
      case FieldKind::kDType: out_ << DataTypeToString(value.cast<DLDataType>()); return;
      case FieldKind::kInt: out_ << value.cast<int64_t>(); return;
      case FieldKind::kFloat: PrintFloat(value.cast<double>()); return;
    }
  }

  /// [a, b, c] on one line: indices, values and declared buffers.
  void PrintInline(const Array<Any>& items, FieldKind kind, int indent, int depth) {
    const FieldKind item_kind = kind == FieldKind::kIndices  ? FieldKind::kIndex
                                : kind == FieldKind::kValues ? FieldKind::kValue
                                                             : FieldKind::kBuffer;
    out_ << "[";
    for (int64_t i = 0; i < items.size(); ++i) {
      if (i > 0) out_ << ", ";
      PrintField(items[i], item_kind, indent, depth);
    }
    out_ << "]";
  }

  /// Enough digits to read back the same double; inf and nan as the lexer reads them.
  void PrintFloat(double value) {
    if (std::isnan(value)) {
      out_ << "nan";
    } else if (std::isinf(value)) {
      out_ << (value < 0 ? "-inf" : "inf");
    } else {
      char text[32];
      std::snprintf(text, sizeof(text), "%.17g", value);
      out_ << text;
      if (std::string(text).find_first_of(".en") == std::string::npos) out_ << ".0";
    }
  }

  void PrintString(const std::string& text) {
    out_ << '"';
    for (char c : text) {
      if (c == '"' || c == '\\') out_ << '\\';
      if (c == '\n') {
        out_ << "\\n";
        continue;
      }
      out_ << c;
    }
    out_ << '"';
  }

  std::ostringstream out_;
};

}  // namespace

std::string AsText(const Node& node) { return Printer().Print(node); }

}  // namespace tir
}  // namespace kiln
