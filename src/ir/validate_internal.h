// Checks shared by the constructors of IR nodes.
#ifndef KILN_SRC_IR_VALIDATE_INTERNAL_H_
#define KILN_SRC_IR_VALIDATE_INTERNAL_H_

#include <kiln/ffi/array.h>

namespace kiln {
namespace ir {

/// ValueError "<node>: <what> <i> is null" for the first null element. A null ObjectRef is
/// stored as None, which reading the element as T would report as a confusing TypeError.
template <typename T>
void CheckNoNullElement(const Array<T>& items, const char* node, const char* what) {
  for (int64_t i = 0; i < items.size(); ++i) {
    KILN_CHECK(!items.get()->items()[i].is_none(), ValueError)
        << node << ": " << what << " " << i << " is null";
  }
}

}  // namespace ir
}  // namespace kiln

#endif  // KILN_SRC_IR_VALIDATE_INTERNAL_H_
