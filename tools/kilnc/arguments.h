// Command-line values shared by kilnc's subcommands.
#ifndef KILN_TOOLS_KILNC_ARGUMENTS_H_
#define KILN_TOOLS_KILNC_ARGUMENTS_H_

#include <kiln/frontend/onnx.h>

#include <string>
#include <vector>

namespace kilnc {

/// "name=1,3,224,224" into `shapes`; false when it is not of that form.
bool ParseShape(const std::string& text, kiln::frontend::InputShapes* shapes);

/// Splits "name=value" at the first '='; false when there is none or the name is empty.
bool SplitAssignment(const std::string& text, std::string* name, std::string* value);

/// "dnnl,blas" -> {"dnnl", "blas"} (empty items dropped).
std::vector<std::string> SplitNames(const std::string& text);

}  // namespace kilnc

#endif  // KILN_TOOLS_KILNC_ARGUMENTS_H_
