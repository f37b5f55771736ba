/// PassInfo: what the pass manager needs to know about a pass before running it.
#ifndef KILN_TRANSFORM_PASS_INFO_H_
#define KILN_TRANSFORM_PASS_INFO_H_

#include <cstdint>
#include <string>

namespace kiln {
namespace transform {

/// The name a pass is registered under (`transform.DeadCodeElimination`, `my_ext.transform.Foo`),
/// the lowest PassContext opt_level that runs it, and whether it runs whatever the opt_level or
/// the disabled list say (a pass later passes depend on for correctness, such as InferType).
struct PassInfo {
  std::string name;
  int64_t opt_level = 0;
  bool required = false;
};

}  // namespace transform
}  // namespace kiln

#endif  // KILN_TRANSFORM_PASS_INFO_H_
