#include <unistd.h>

#include <kiln/ffi/map.h>
#include <kiln/runtime/artifact.h>
#include <kiln/runtime/graph_executor.h>
#include <kiln/runtime/memory.h>
#include <gtest/gtest.h>

#include "testing/expect_error.h"

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

namespace kiln {
namespace runtime {
namespace {

namespace fs = std::filesystem;

constexpr DLDevice kCpu{kDLCPU, 0};
constexpr DLDataType kFloat32{kDLFloat, 32, 1};

// ---------------------------------------------------------------------------------------------
// The graph under test: out = relu(x + y) + x over (2, 3) float32 tensors
// ---------------------------------------------------------------------------------------------

// Storages 0 and 1 hold the inputs. Storage 2 holds t0 at 0 and t1 at 24; `out` reuses t0's
// bytes, since t0 is last read by relu0 and `out` is first written by add1, a node later.
constexpr const char* kGraph = R"({
  "version": 1,
  "storages": [{"bytes": 24}, {"bytes": 24}, {"bytes": 48}],
  "entries": [
    {"storage": 0, "offset": 0, "shape": [2, 3], "dtype": "float32"},
    {"storage": 1, "offset": 0, "shape": [2, 3], "dtype": "float32"},
    {"storage": 2, "offset": 0, "shape": [2, 3], "dtype": "float32"},
    {"storage": 2, "offset": 24, "shape": [2, 3], "dtype": "float32"},
    {"storage": 2, "offset": 0, "shape": [2, 3], "dtype": "float32"}
  ],
  "inputs": [{"name": "x", "entry": 0}, {"name": "y", "entry": 1}],
  "nodes": [
    {"name": "add0", "func": "add", "inputs": [0, 1], "outputs": [2]},
    {"name": "relu0", "func": "relu", "inputs": [2], "outputs": [3]},
    {"name": "add1", "func": "add", "inputs": [3, 0], "outputs": [4]}
  ],
  "outputs": [4]
})";

const std::vector<float> kX = {-3.0f, -1.0f, 0.0f, 1.0f, 2.0f, 3.5f};
const std::vector<float> kY = {1.0f, -2.0f, 0.5f, -4.0f, 1.0f, 0.25f};

/// The reference: the same arithmetic written out in the test, not through Kiln.
std::vector<float> Expected(const std::vector<float>& x, const std::vector<float>& y) {
  std::vector<float> out(x.size());
  for (size_t i = 0; i < x.size(); ++i) out[i] = std::max(x[i] + y[i], 0.0f) + x[i];
  return out;
}

/// `text` with the one occurrence of `from` replaced by `to` (the test fails if it is absent).
std::string Replace(std::string text, const std::string& from, const std::string& to) {
  const size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << "'" << from << "' is not in the graph";
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

// ---------------------------------------------------------------------------------------------
// Kernels: C++ functions over DLTensor* in a test-only module
// ---------------------------------------------------------------------------------------------

float* Floats(DLTensor* tensor) {
  KILN_CHECK(tensor->dtype.code == kDLFloat && tensor->dtype.bits == 32, TypeError)
      << "test kernels take float32";
  return reinterpret_cast<float*>(static_cast<char*>(tensor->data) + tensor->byte_offset);
}

int64_t Count(const DLTensor* tensor) {
  int64_t n = 1;
  for (int32_t i = 0; i < tensor->ndim; ++i) n *= tensor->shape[i];
  return n;
}

class CpuKernelsObj : public ModuleObj {
 public:
  std::string kind() const override { return "testing_cpu_kernels"; }
  std::optional<Function> GetFunction(const std::string& name) override {
    if (name == "add") {
      return Function::FromTyped(
          [](DLTensor* a, DLTensor* b, DLTensor* out) {
            for (int64_t i = 0; i < Count(out); ++i) Floats(out)[i] = Floats(a)[i] + Floats(b)[i];
          },
          "add");
    }
    if (name == "relu") {
      return Function::FromTyped(
          [](DLTensor* a, DLTensor* out) {
            for (int64_t i = 0; i < Count(out); ++i) Floats(out)[i] = std::max(Floats(a)[i], 0.0f);
          },
          "relu");
    }
    if (name == "fail") {
      return Function::FromTyped(
          [](DLTensor* /*a*/, DLTensor* /*out*/) { KILN_THROW(RuntimeError) << "kernel failed"; },
          "fail");
    }
    return std::nullopt;
  }
  std::vector<std::string> ListFunctions() const override { return {"add", "relu", "fail"}; }
};

Module CpuKernels() { return Module(make_object<CpuKernelsObj>()); }

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

/// A CPU tensor over `values` (not owned: the vector must outlive it).
Tensor Over(std::vector<float>& values, std::vector<int64_t> shape = {2, 3}) {
  return Tensor::FromMemory(values.data(), shape, kFloat32, kCpu, nullptr);
}

std::vector<float> Values(const Tensor& tensor) {
  const auto* begin = reinterpret_cast<const float*>(static_cast<char*>(tensor.data()) +
                                                     tensor.dl_tensor().byte_offset);
  return std::vector<float>(begin, begin + tensor.NumElements());
}

using ::kiln::test_util::ExpectError;

void ExpectCreateError(const std::string& json, const std::vector<std::string>& parts) {
  ExpectError([&] { GraphExecutorCreate(json, CpuKernels(), kCpu); }, "ValueError", parts);
}

/// Sets both inputs (x by name, y by index), runs, returns output 0.
std::vector<float> RunGraph(const Module& executor, std::vector<float> x, std::vector<float> y) {
  executor.GetFunctionRequired("set_input")("x", Over(x));
  executor.GetFunctionRequired("set_input")(1, Over(y));
  executor.GetFunctionRequired("run")();
  return Values(executor.GetFunctionRequired("get_output")(0).cast<Tensor>());
}

// ---------------------------------------------------------------------------------------------
// Running
// ---------------------------------------------------------------------------------------------

TEST(GraphExecutorTest, RunsAddReluAddOverSharedStorages) {
  Module executor = GraphExecutorCreate(kGraph, CpuKernels(), kCpu);
  EXPECT_EQ(executor->kind(), "graph_executor");
  EXPECT_EQ(RunGraph(executor, kX, kY), Expected(kX, kY));

  Tensor out = executor.GetFunctionRequired("get_output")(0).cast<Tensor>();
  EXPECT_EQ(out.shape(), Shape({2, 3}));
  EXPECT_EQ(DataTypeToString(out.dtype()), "float32");
  EXPECT_EQ(out.device().device_type, kDLCPU);

  auto plan = executor.GetFunctionRequired("memory_plan")().cast<Map<String, Any>>();
  EXPECT_EQ(plan.at("total_bytes").cast<int64_t>(), 96);
  EXPECT_EQ(plan.at("bytes_without_sharing").cast<int64_t>(), 120);
  auto storages = plan.at("storage_bytes").cast<Array<int64_t>>();
  EXPECT_EQ(std::vector<int64_t>(storages.begin(), storages.end()),
            (std::vector<int64_t>{24, 24, 48}));
}

TEST(GraphExecutorTest, RunsAgainWithoutSettingInputsAndGetsTheSameResult) {
  // Inputs are never overwritten by the plan, so a second run reads the same values.
  Module executor = GraphExecutorCreate(kGraph, CpuKernels(), kCpu);
  const std::vector<float> first = RunGraph(executor, kX, kY);
  executor.GetFunctionRequired("run")();
  EXPECT_EQ(Values(executor.GetFunctionRequired("get_output")(0).cast<Tensor>()), first);
}

TEST(GraphExecutorTest, OutputIsAViewThatTheNextRunOverwrites) {
  Module executor = GraphExecutorCreate(kGraph, CpuKernels(), kCpu);
  RunGraph(executor, kX, kY);
  Tensor out = executor.GetFunctionRequired("get_output")(0).cast<Tensor>();
  const std::vector<float> y2 = {5.0f, 5.0f, 5.0f, 5.0f, 5.0f, 5.0f};
  RunGraph(executor, kX, y2);
  EXPECT_EQ(Values(out), Expected(kX, y2));
  // The view keeps its storage alive: reading it after the executor is gone is still safe.
  executor = Module();
  EXPECT_EQ(Values(out), Expected(kX, y2));
}

TEST(GraphExecutorTest, CreatesThroughTheGlobalFunction) {
  Module executor =
      Function::GetGlobalRequired("runtime.GraphExecutorCreate")(String(kGraph), CpuKernels(), kCpu)
          .cast<Module>();
  EXPECT_EQ(RunGraph(executor, kX, kY), Expected(kX, kY));
  ASSERT_EQ(executor.imports().size(), 1u);
  EXPECT_EQ(executor.imports()[0]->kind(), "testing_cpu_kernels");
}

TEST(GraphExecutorTest, KernelErrorsNameTheNode) {
  const std::string graph = Replace(kGraph, R"("func": "relu")", R"("func": "fail")");
  Module executor = GraphExecutorCreate(graph, CpuKernels(), kCpu);
  try {
    RunGraph(executor, kX, kY);
    FAIL() << "expected the kernel's error";
  } catch (const Error& error) {
    EXPECT_EQ(error.message(), "kernel failed");
    EXPECT_NE(error.context().find("while running nodes[1] ('relu0'), which calls 'fail'"),
              std::string::npos)
        << error.context();
  }
}

// ---------------------------------------------------------------------------------------------
// Inputs and outputs
// ---------------------------------------------------------------------------------------------

TEST(GraphExecutorTest, InputsAreFoundByNameAndByIndex) {
  Module executor = GraphExecutorCreate(kGraph, CpuKernels(), kCpu);
  EXPECT_EQ(executor.GetFunctionRequired("get_num_inputs")().cast<int64_t>(), 2);
  EXPECT_EQ(executor.GetFunctionRequired("get_num_outputs")().cast<int64_t>(), 1);
  Function index = executor.GetFunctionRequired("get_input_index");
  EXPECT_EQ(index("x").cast<int64_t>(), 0);
  EXPECT_EQ(index("y").cast<int64_t>(), 1);
  EXPECT_EQ(index("z").cast<int64_t>(), -1);

  // The same values set by index and by name give the same result.
  std::vector<float> x = kX;
  std::vector<float> y = kY;
  Function set_input = executor.GetFunctionRequired("set_input");
  set_input(0, Over(x));
  set_input("y", Over(y));
  executor.GetFunctionRequired("run")();
  EXPECT_EQ(Values(executor.GetFunctionRequired("get_output")(0).cast<Tensor>()), Expected(kX, kY));

  ExpectError([&] { set_input("z", Over(x)); }, "KeyError",
              {"set_input", "no input named 'z'", "inputs: x, y"});
  ExpectError([&] { set_input(2, Over(x)); }, "IndexError",
              {"input index 2 is out of range", "2 inputs"});
  ExpectError([&] { set_input(-1, Over(x)); }, "IndexError", {"input index -1"});
  ExpectError([&] { set_input(1.5, Over(x)); }, "TypeError",
              {"input name (str) or index (int)", "float"});
  ExpectError([&] { executor.GetFunctionRequired("get_output")(1); }, "IndexError",
              {"output index 1 is out of range", "1 output"});
}

TEST(GraphExecutorTest, ReportsInputAndOutputInfo) {
  Module executor = GraphExecutorCreate(kGraph, CpuKernels(), kCpu);
  auto inputs = executor.GetFunctionRequired("get_input_info")().cast<Map<String, Any>>();
  auto names = inputs.at("names").cast<Array<String>>();
  ASSERT_EQ(names.size(), 2);
  EXPECT_EQ(names[0], "x");
  EXPECT_EQ(names[1], "y");
  EXPECT_EQ(inputs.at("shapes").cast<Array<Shape>>()[1], Shape({2, 3}));
  EXPECT_EQ(DataTypeToString(inputs.at("dtypes").cast<Array<DLDataType>>()[0]), "float32");
  auto outputs = executor.GetFunctionRequired("get_output_info")().cast<Map<String, Any>>();
  EXPECT_EQ(outputs.at("shapes").cast<Array<Shape>>().size(), 1);
  EXPECT_EQ(outputs.at("shapes").cast<Array<Shape>>()[0], Shape({2, 3}));
  EXPECT_EQ(DataTypeToString(outputs.at("dtypes").cast<Array<DLDataType>>()[0]), "float32");
}

TEST(GraphExecutorTest, ZeroCopyInputReadsTheCallersBufferOnEveryRun) {
  Module executor = GraphExecutorCreate(kGraph, CpuKernels(), kCpu);
  std::vector<float> x = kX;
  std::vector<float> y = kY;
  executor.GetFunctionRequired("set_input_zero_copy")("x", Over(x));
  executor.GetFunctionRequired("set_input")("y", Over(y));
  Function run = executor.GetFunctionRequired("run");
  Function get_output = executor.GetFunctionRequired("get_output");
  run();
  EXPECT_EQ(Values(get_output(0).cast<Tensor>()), Expected(x, y));

  // Written between runs, without set_input: the next run sees it.
  x = {10.0f, -10.0f, 1.0f, 2.0f, -0.5f, 0.0f};
  run();
  EXPECT_EQ(Values(get_output(0).cast<Tensor>()), Expected(x, y));

  // set_input goes back to the planned buffer: the caller's later writes no longer count.
  executor.GetFunctionRequired("set_input")("x", Over(x));
  const std::vector<float> copied = x;
  std::fill(x.begin(), x.end(), 100.0f);
  run();
  EXPECT_EQ(Values(get_output(0).cast<Tensor>()), Expected(copied, y));
}

TEST(GraphExecutorTest, ZeroCopyInputMustMatchShapeDtypeDeviceAndLayout) {
  Module executor = GraphExecutorCreate(kGraph, CpuKernels(), kCpu);
  Function zero_copy = executor.GetFunctionRequired("set_input_zero_copy");
  std::vector<float> values(6);
  ExpectError(
      [&] {
        zero_copy("x", Over(values, {3, 2}));
      },
      "ValueError",
      {"set_input_zero_copy", "input 'x'", "expects (2, 3) float32", "got (3, 2) float32"});
  // Only the descriptor is looked at: the memory of this "cuda" tensor is never touched.
  Tensor on_cuda = Tensor::FromMemory(values.data(), {2, 3}, kFloat32, {kDLCUDA, 0}, nullptr);
  ExpectError([&] { zero_copy("y", on_cuda); }, "ValueError",
              {"input 'y' lives on cpu:0", "got a tensor on cuda:0"});
  Tensor strided = Tensor::FromMemory(values.data(), {2, 3}, kFloat32, kCpu, nullptr, {1, 2});
  ExpectError([&] { zero_copy("x", strided); }, "ValueError", {"input 'x'", "compact"});
}

TEST(GraphExecutorTest, SetInputChecksShapeAndDtype) {
  Module executor = GraphExecutorCreate(kGraph, CpuKernels(), kCpu);
  Function set_input = executor.GetFunctionRequired("set_input");
  std::vector<float> values(6);
  ExpectError(
      [&] {
        set_input("x", Over(values, {3, 2}));
      },
      "ValueError", {"set_input: input 'x' expects (2, 3) float32, got (3, 2) float32"});
  std::vector<int32_t> ints(6);
  Tensor int_tensor =
      Tensor::FromMemory(ints.data(), {2, 3}, DLDataType{kDLInt, 32, 1}, kCpu, nullptr);
  ExpectError([&] { set_input(1, int_tensor); }, "ValueError",
              {"set_input: input 'y' expects (2, 3) float32, got (2, 3) int32"});
}

// ---------------------------------------------------------------------------------------------
// Validation on create
// ---------------------------------------------------------------------------------------------

TEST(GraphExecutorValidationTest, UnknownFunctionIsNamedWithWhatTheLibHas) {
  ExpectCreateError(
      Replace(kGraph, R"("func": "relu")", R"("func": "relu6")"),
      {"nodes[1] ('relu0') calls 'relu6'", "lib does not have", "it has: add, relu, fail"});
}

TEST(GraphExecutorValidationTest, EntryIdsOutOfRangeAreNamed) {
  ExpectCreateError(Replace(kGraph, R"("inputs": [3, 0])", R"("inputs": [3, 9])"),
                    {"nodes[2] ('add1').inputs[1] is entry 9, but the graph has 5 entries"});
  ExpectCreateError(Replace(kGraph, R"("outputs": [4]
})",
                            R"("outputs": [5]
})"),
                    {"outputs[0] is entry 5"});
  ExpectCreateError(
      Replace(kGraph, R"({"name": "y", "entry": 1})", R"({"name": "y", "entry": -1})"),
      {"inputs[1].entry must be at least 0, got -1"});
  ExpectCreateError(Replace(kGraph, R"({"storage": 1, )", R"({"storage": 3, )"),
                    {"entries[1].storage is storage 3, but the graph has 3 storages"});
}

TEST(GraphExecutorValidationTest, StorageTooSmallForAnEntryIsNamed) {
  ExpectCreateError(Replace(kGraph, R"({"bytes": 48})", R"({"bytes": 40})"),
                    {"entries[3] (float32 (2, 3), 24 bytes at offset 24) does not fit in storage 2 "
                     "of 40 bytes"});
}

TEST(GraphExecutorValidationTest, MalformedDocumentsAreNamed) {
  ExpectCreateError("{\"version\": 1,", {"graph JSON does not parse"});
  ExpectCreateError("[1, 2]", {"the top level must be an object"});
  // Deep nesting is only named, never printed (printing would recurse that deep).
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  ExpectCreateError(Replace(kGraph, R"("version": 1)", "\"version\": " + deep),
                    {"version must be an integer, got an array"});
  ExpectCreateError(Replace(kGraph, R"("version": 1)", R"("version": 3)"),
                    {"format version 3 is not supported", "reads versions 1 to 2"});
  ExpectCreateError(Replace(kGraph, R"("version": 1,)", ""), {"version is missing"});
  ExpectCreateError(Replace(kGraph, R"("outputs": [4]
})",
                            R"("output": [4]
})"),
                    {"unknown field 'output'"});
  ExpectCreateError(Replace(kGraph, R"("name": "relu0", )", ""), {"nodes[1].name is missing"});
  ExpectCreateError(Replace(kGraph, R"("inputs": [2])", R"("inputs": 2)"),
                    {"nodes[1] ('relu0').inputs must be an array, got 2"});
  ExpectCreateError(Replace(kGraph, R"("offset": 24, "shape": [2, 3], "dtype": "float32")",
                            R"("offset": 24, "shape": [2, 3], "dtype": "float31x")"),
                    {"entries[3].dtype 'float31x' is not a data type"});
  ExpectCreateError(Replace(kGraph, R"("offset": 24,)", R"("offset": 22,)"),
                    {"entries[3]", "not aligned to its 4-byte elements"});
  ExpectCreateError(Replace(kGraph, R"("shape": [2, 3], "dtype": "float32"},
    {"storage": 1)",
                            R"("shape": [2, -3], "dtype": "float32"},
    {"storage": 1)"),
                    {"entries[0].shape[1] must be at least 0, got -3"});
  ExpectCreateError(Replace(kGraph, R"("version": 1,)", R"("version": 1, "device": "gpu:0",)"),
                    {"device 'gpu:0' is not a device"});
  ExpectError([] { GraphExecutorCreate(kGraph, Module(), kCpu); }, "ValueError", {"lib module"});
}

TEST(GraphExecutorValidationTest, DataflowErrorsAreNamed) {
  // relu0 reads an entry that only a later node writes.
  ExpectCreateError(
      Replace(kGraph, R"("inputs": [2], "outputs": [3])", R"("inputs": [4], "outputs": [3])"),
      {"nodes[1] ('relu0') reads entry 4 before any node writes it"});
  // An empty entry holds nothing to write: a size carrier ((n, 0), from which a kernel program
  // reads n) is read unwritten. The same read of a non-empty entry is the error above.
  const std::string reads_empty = Replace(
      Replace(kGraph, R"("inputs": [2], "outputs": [3])", R"("inputs": [2, 5], "outputs": [3])"),
      R"("shape": [2, 3], "dtype": "float32"}
  ],)",
      R"("shape": [2, 3], "dtype": "float32"},
    {"storage": 2, "offset": 0, "shape": [2, 0], "dtype": "float32"}
  ],)");
  EXPECT_NO_THROW(GraphExecutorCreate(reads_empty, CpuKernels(), kCpu));
  ExpectCreateError(Replace(reads_empty, R"("shape": [2, 0])", R"("shape": [2, 1])"),
                    {"nodes[1] ('relu0') reads entry 5 before any node writes it"});
  ExpectCreateError(Replace(kGraph, R"("outputs": [3])", R"("outputs": [2])"),
                    {"nodes[1] ('relu0') writes entry 2, which is already written by nodes[0] "
                     "('add0')"});
  ExpectCreateError(Replace(kGraph, R"("outputs": [3])", R"("outputs": [1])"),
                    {"nodes[1] ('relu0') writes entry 1, which is an input"});
  ExpectCreateError(Replace(kGraph, R"({"name": "y", "entry": 1})", R"({"name": "x", "entry": 1})"),
                    {"inputs[0] and inputs[1] are both named 'x'"});
  ExpectCreateError(Replace(kGraph, R"({"name": "y", "entry": 1})", R"({"name": "y", "entry": 0})"),
                    {"inputs 'x' and 'y' are both entry 0"});
}

/// kGraph with relu0's and add1's outputs placed over their first inputs, all three in the
/// bytes of add0's output, as "in_place" pairs allow.
std::string InPlaceGraph() {
  std::string graph = Replace(kGraph, R"("offset": 24,)", R"("offset": 0,)");
  graph = Replace(graph, R"("inputs": [2], "outputs": [3]})",
                  R"("inputs": [2], "outputs": [3], "in_place": [{"output": 0, "input": 0}]})");
  return Replace(graph, R"("inputs": [3, 0], "outputs": [4]})",
                 R"("inputs": [3, 0], "outputs": [4], "in_place": [{"output": 0, "input": 0}]})");
}

TEST(GraphExecutorTest, RunsNodesWhoseOutputsArePlacedOverTheirInputs) {
  Module executor = GraphExecutorCreate(InPlaceGraph(), CpuKernels(), kCpu);
  EXPECT_EQ(RunGraph(executor, kX, kY), Expected(kX, kY));
  // The text written back keeps the pairs.
  const std::string saved(executor->SaveToBytes()->view());
  EXPECT_NE(saved.find(R"("in_place":[{"output":0,"input":0}])"), std::string::npos) << saved;
}

TEST(GraphExecutorValidationTest, InPlacePairsAreChecked) {
  // Declared, but t0 is read again by add1: it does not die where t1 is written over it.
  ExpectCreateError(Replace(InPlaceGraph(), R"("inputs": [3, 0])", R"("inputs": [3, 2])"),
                    {"memory plan: entries 2 and 3 share bytes [0, 24) of storage 2"});
  ExpectCreateError(
      Replace(InPlaceGraph(), R"({"output": 0, "input": 0}]})", R"({"output": 0, "input": 1}]})"),
      {"nodes[1] ('relu0').in_place[0] places output 0 over input 1"});
  ExpectCreateError(
      Replace(InPlaceGraph(), R"([{"output": 0, "input": 0}]})", R"([{"output": 1, "input": 0}]})"),
      {"nodes[1] ('relu0').in_place[0] places output 1 over input 0",
       "the node has 1 input and 1 output"});
  ExpectCreateError(
      Replace(InPlaceGraph(), R"({"storage": 2, "offset": 0, "shape": [2, 3], "dtype": "float32"},
    {"storage": 2, "offset": 0, "shape": [2, 3])",
              R"({"storage": 2, "offset": 0, "shape": [2, 3], "dtype": "float32"},
    {"storage": 2, "offset": 0, "shape": [3, 2])"),
      {"nodes[1] ('relu0') places output 0 (float32 (3, 2)", "over input 0 (float32 (2, 3)",
       "one input of its shape and dtype"});
  ExpectCreateError(Replace(InPlaceGraph(), R"("inputs": [3, 0])", R"("inputs": [3, 3])"),
                    {"nodes[2] ('add1') places output 0", "which the node is passed once"});
  ExpectCreateError(
      Replace(InPlaceGraph(), R"({"output": 0, "input": 0}]})", R"({"output": 0, "inputs": 0}]})"),
      {"unknown field 'inputs'"});
}

TEST(GraphExecutorValidationTest, EntriesSharingBytesWhileLiveAreRejected) {
  // t1 over t0's bytes: relu0 would overwrite its own input.
  ExpectCreateError(Replace(kGraph, R"("offset": 24,)", R"("offset": 0,)"),
                    {"memory plan: entries 2 and 3 share bytes [0, 24) of storage 2 while both "
                     "are live",
                     "written by nodes[0] ('add0'), live until nodes[1] ('relu0')"});
  // Partial overlap is caught too (t1 at 20 overlaps t0's last 4 bytes).
  ExpectCreateError(Replace(Replace(kGraph, R"("offset": 24,)", R"("offset": 20,)"),
                            R"({"bytes": 48})", R"({"bytes": 44})"),
                    {"entries 2 and 3 share bytes [20, 24) of storage 2"});
  // An input's bytes are never reused: y in storage 2 would be clobbered by add0's output.
  ExpectCreateError(Replace(kGraph, R"({"storage": 1, )", R"({"storage": 2, )"),
                    {"entries 1 and 2 share bytes [0, 24) of storage 2", "an input"});
}

// ---------------------------------------------------------------------------------------------
// Serialization: export with C kernels, load back
// ---------------------------------------------------------------------------------------------

// The same kernels in C, as generated code would be: the Kiln calling convention, DLTensor
// arguments either borrowed (kKilnTypeDLTensorPtr) or as Tensor objects.
constexpr const char* kKernelSource = R"(
#include <kiln/ffi/c_api.h>

static DLTensor* tensor_arg(const KilnAny* arg) {
  if (arg->type_index == kKilnTypeDLTensorPtr) return (DLTensor*)arg->v_ptr;
  if (arg->type_index == kKilnTypeTensor) return &((KilnTensorObject*)arg->v_obj)->dl_tensor;
  return 0;
}
static float* floats(DLTensor* t) { return (float*)((char*)t->data + t->byte_offset); }
static int64_t count(const DLTensor* t) {
  int64_t n = 1;
  for (int32_t i = 0; i < t->ndim; ++i) n *= t->shape[i];
  return n;
}

int add(void* self, const KilnAny* args, int32_t num_args, KilnAny* result) {
  if (num_args != 3) return kiln_error_set_raised_from_cstr("TypeError", "add takes a, b, out");
  DLTensor* a = tensor_arg(&args[0]);
  DLTensor* b = tensor_arg(&args[1]);
  DLTensor* out = tensor_arg(&args[2]);
  if (!a || !b || !out) return kiln_error_set_raised_from_cstr("TypeError", "add takes tensors");
  for (int64_t i = 0; i < count(out); ++i) floats(out)[i] = floats(a)[i] + floats(b)[i];
  return 0;
}

int relu(void* self, const KilnAny* args, int32_t num_args, KilnAny* result) {
  if (num_args != 2) return kiln_error_set_raised_from_cstr("TypeError", "relu takes a, out");
  DLTensor* a = tensor_arg(&args[0]);
  DLTensor* out = tensor_arg(&args[1]);
  if (!a || !out) return kiln_error_set_raised_from_cstr("TypeError", "relu takes tensors");
  for (int64_t i = 0; i < count(out); ++i) floats(out)[i] = floats(a)[i] > 0 ? floats(a)[i] : 0;
  return 0;
}
)";

class GraphExecutorExportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("kiln-graph-executor-test-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path dir_;
};

TEST_F(GraphExecutorExportTest, ExportsWithCKernelsAndRunsAfterReload) {
  Module executor =
      GraphExecutorCreate(kGraph, CSourceModuleCreate(kKernelSource, {"add", "relu"}), kCpu);
  // C source runs before export too: the module compiles it into a temporary library.
  EXPECT_EQ(executor.GetFunctionRequired("get_num_inputs")().cast<int64_t>(), 2);
  EXPECT_EQ(RunGraph(executor, kX, kY), Expected(kX, kY));

  const fs::path path = dir_ / "graph.so";
  ExportLibrary(executor, path.string());
  Module loaded = LoadModule(path.string());
  EXPECT_EQ(loaded->kind(), "graph_executor");
  ASSERT_EQ(loaded.imports().size(), 1u);
  EXPECT_EQ(loaded.imports()[0]->kind(), "host_library");
  EXPECT_EQ(RunGraph(loaded, kX, kY), Expected(kX, kY));
  EXPECT_EQ(*loaded->SaveToBytes(), *executor->SaveToBytes());

  // The kernels also take Tensor objects, as the calling convention allows.
  std::vector<float> x = kX;
  std::vector<float> y = kY;
  std::vector<float> out(6);
  loaded.GetFunctionRequired("add")(Over(x), Over(y), Over(out));
  EXPECT_EQ(out[1], kX[1] + kY[1]);
}

TEST(GraphExecutorSerializationTest, SavesTheGraphWithItsDevice) {
  Module executor = GraphExecutorCreate(kGraph, CpuKernels(), kCpu);
  const std::string saved(executor->SaveToBytes()->view());
  EXPECT_NE(saved.find(R"("device":"cpu:0")"), std::string::npos) << saved;
  // Saving what was loaded gives the same bytes: the format has one spelling per graph.
  Module reloaded =
      Function::GetGlobalRequired("runtime.module.load_bytes.graph_executor")(Bytes(saved))
          .cast<Module>();
  EXPECT_EQ(std::string(reloaded->SaveToBytes()->view()), saved);
}

TEST(GraphExecutorSerializationTest, LoadedGraphRunsOnCpuAndFindsKernelsInItsImports) {
  Function load = Function::GetGlobalRequired("runtime.module.load_bytes.graph_executor");
  Module loaded = load(Bytes(kGraph)).cast<Module>();  // no "device": cpu:0
  ExpectError([&] { loaded.GetFunctionRequired("run"); }, "ValueError",
              {"nodes[0] ('add0') calls 'add'", "imports no module"});
  loaded.Import(CpuKernels());  // as LoadModule does once every module is loaded
  EXPECT_EQ(RunGraph(loaded, kX, kY), Expected(kX, kY));
  EXPECT_EQ(loaded.GetFunctionRequired("get_output")(0).cast<Tensor>().device().device_type,
            kDLCPU);

  try {
    load(Bytes(Replace(kGraph, R"("version": 1)", R"("version": 7)")));
    FAIL() << "expected a ValueError";
  } catch (const Error& error) {
    EXPECT_NE(error.message().find("format version 7"), std::string::npos) << error.message();
    EXPECT_NE(error.context().find("while loading a graph_executor module"), std::string::npos);
  }
}

}  // namespace
}  // namespace runtime
}  // namespace kiln
