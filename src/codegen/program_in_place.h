// Which outputs of a kernel program function may be placed over which of its inputs: the
// graph JSON's "in_place" pairs (kiln/runtime/graph_executor.h, docs/design.md §41).
#ifndef KILN_SRC_CODEGEN_PROGRAM_IN_PLACE_H_
#define KILN_SRC_CODEGEN_PROGRAM_IN_PLACE_H_

#include <nlohmann/json.hpp>

#include <cstdint>
#include <utility>
#include <vector>

namespace kiln {
namespace codegen {

/// The (output, input) positions of a kernel program function (its description's JSON, as
/// kiln/runtime/kernel_program.h gives it) whose output the program writes over that input:
/// an input of the output's shape and dtype that one step reads, an `add` of it and the
/// product of a conv2d, dense or matmul step (or that product plus a constant bias), written
/// to the output directly or through one activation. The program merges that chain into the
/// product's step, whose GEMM adds into the output holding the residual; a chain the program
/// does not merge after all reads a copy of the input, so the prediction is only about speed.
std::vector<std::pair<int64_t, int64_t>> OutputsOverInputs(const nlohmann::json& function);

}  // namespace codegen
}  // namespace kiln

#endif  // KILN_SRC_CODEGEN_PROGRAM_IN_PLACE_H_
