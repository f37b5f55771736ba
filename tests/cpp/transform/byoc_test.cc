// AnnotateTarget, MergeCompilerRegions and PartitionGraph beyond the golden files: answers of
// AskCompilers, graph-level partition functions, names, errors of predicates.
#include <kiln/ir/text_format.h>
#include <kiln/transform/byoc.h>
#include <gtest/gtest.h>

#include "golden_ops.h"

namespace kiln {
namespace transform {
namespace {

}  // namespace
}  // namespace transform
}  // namespace kiln
