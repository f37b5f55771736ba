// annotation.compiler_begin / annotation.compiler_end: the boundary markers of BYOC regions
// (design §17). They pass their input through unchanged, tensor or tuple, and exist only
// between AnnotateTarget (or a hand-written annotation) and PartitionGraph, which removes them;
// so they are opaque to fusion and have no CPU kernel.
#include <kiln/ir/type_relation.h>

namespace kiln {
namespace op {
namespace {

ir::Type PassThroughRelation(const ir::TypeRelationContext& ctx) {
  ctx.CheckNumArgs(1);
  return ctx.arg_type(0);
}

#define KILN_REGISTER_COMPILER_ANNOTATION(Name)    \
  KILN_REGISTER_OP(Name)                           \
      .add_input("data")                           \
      .add_attr("compiler", ir::AttrKind::kString) \
      .set_pattern(ir::OpPattern::kOpaque)         \
      .set_type_relation(PassThroughRelation)

KILN_REGISTER_COMPILER_ANNOTATION("annotation.compiler_begin");
KILN_REGISTER_COMPILER_ANNOTATION("annotation.compiler_end");

#undef KILN_REGISTER_COMPILER_ANNOTATION

}  // namespace
}  // namespace op
}  // namespace kiln
