// Shared by the core-op tests: infer the type of a Call as InferType would, and check it.
#ifndef KILN_TESTS_CPP_OP_OP_TEST_UTIL_H_
#define KILN_TESTS_CPP_OP_OP_TEST_UTIL_H_

#include <kiln/arith/size_expr.h>
#include <kiln/ir/expr.h>
#include <kiln/ir/structural_equal.h>
#include <kiln/ir/text_format.h>
#include <kiln/ir/type_relation.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "testing/expect_error.h"

namespace kiln {
namespace op {
namespace testing {

using ir::Type;

inline DLDataType DType(const char* name) { return *ParseDataType(name); }

inline Type T(const std::vector<int64_t>& shape, const char* dtype = "float32") {
  return ir::TensorType::Static(shape, DType(dtype));
}

/// A tensor type whose dimensions are written as the text format writes them, each a size
/// expression: S({"batch", "3", "seq * 2"}) is Tensor[(batch, 3, seq * 2), float32].
inline Type S(const std::vector<std::string>& dims, const char* dtype = "float32") {
  Array<ir::Dim> shape;
  for (const std::string& dim : dims)
    shape.push_back(ir::Dim::FromSizeExpr(arith::ParseSizeExpr(dim)));
  return ir::TensorType(shape, DType(dtype));
}

/// The result type of `op_name` applied to arguments of `arg_types` with `attrs`, the attributes
/// first normalized by building the Call (schema check, defaults), as a real Call holds them.
inline Type Infer(const std::string& op_name, const std::vector<Type>& arg_types,
                  const Map<String, Any>& attrs = {}) {
  const ir::Op op = ir::Op::Get(op_name);
  Array<ir::Expr> args;
  for (const Type& type : arg_types) args.push_back(ir::Var("arg", type));
  const ir::Call call(op, args, attrs);
  return ir::InferCallType(op, Array<Type>(arg_types.begin(), arg_types.end()), call->attrs());
}

inline void ExpectType(const Type& expected, const std::string& op_name,
                       const std::vector<Type>& arg_types, const Map<String, Any>& attrs = {}) {
  const Type actual = Infer(op_name, arg_types, attrs);
  EXPECT_TRUE(ir::StructuralEqual(actual, expected))
      << op_name << ": got " << ir::AsText(actual) << ", expected " << ir::AsText(expected);
}

/// Expects a TypeError whose message names the op and contains every one of `parts` (the
/// argument and the shapes).
inline void ExpectTypeError(const std::string& op_name, const std::vector<Type>& arg_types,
                            const Map<String, Any>& attrs, std::vector<std::string> parts) {
  parts.push_back(op_name + ": ");
  test_util::ExpectError([&] { Infer(op_name, arg_types, attrs); }, "TypeError", parts);
}

/// Expects `op_name` to type as `expected` by deferring one constraint to run time: a check
/// whose text ("n == m") and message contain `parts`.
inline void ExpectDeferred(const Type& expected, const std::string& op_name,
                           const std::vector<Type>& arg_types, const Map<String, Any>& attrs,
                           const std::vector<std::string>& parts) {
  ir::SizeCheckCollector collector;
  ExpectType(expected, op_name, arg_types, attrs);
  ASSERT_EQ(collector.checks().size(), 1U) << op_name << ": expected one deferred check";
  const ir::SizeCheck& check = collector.checks()[0];
  const std::string text = check.lhs.ToString() + " " + check.relation + " " +
                           check.rhs.ToString() + ": " + check.message;
  for (const std::string& part : parts) {
    EXPECT_NE(text.find(part), std::string::npos) << "'" << part << "' not in: " << text;
  }
}

}  // namespace testing
}  // namespace op
}  // namespace kiln

#endif  // KILN_TESTS_CPP_OP_OP_TEST_UTIL_H_
