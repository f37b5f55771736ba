// Test helper shared by the C++ suites: assert that code fails with a given kiln::Error.
#ifndef KILN_TESTS_CPP_TESTING_EXPECT_ERROR_H_
#define KILN_TESTS_CPP_TESTING_EXPECT_ERROR_H_

#include <kiln/ffi/error.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace kiln {
namespace test_util {

/// Runs `body`, expecting a kiln::Error of `kind` whose message contains every one of `parts`.
template <typename Body>
void ExpectError(Body body, const std::string& kind, const std::vector<std::string>& parts) {
  try {
    body();
    ADD_FAILURE() << "expected a " << kind;
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), kind) << error.what();
    for (const std::string& part : parts) {
      EXPECT_NE(error.message().find(part), std::string::npos)
          << "'" << part << "' not in: " << error.message();
    }
  }
}

}  // namespace test_util
}  // namespace kiln

#endif  // KILN_TESTS_CPP_TESTING_EXPECT_ERROR_H_
