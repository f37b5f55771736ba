// Writing IR text files, shared by the dump instrument and the dump-on-error reproducer.
#ifndef KILN_SRC_TRANSFORM_IR_TEXT_INTERNAL_H_
#define KILN_SRC_TRANSFORM_IR_TEXT_INTERNAL_H_

#include <string>

namespace kiln {
namespace transform {
namespace detail {

/// Writes `text` to `path`, creating its folder; RuntimeError naming the path on failure.
void WriteTextFile(const std::string& path, const std::string& text);

}  // namespace detail
}  // namespace transform
}  // namespace kiln

#endif  // KILN_SRC_TRANSFORM_IR_TEXT_INTERNAL_H_
