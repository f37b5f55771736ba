// C code generation for the tensor-level IR (docs/design.md §21): a prim_func becomes one C
// function in Kiln's calling convention (a KilnSafeCall taking one tensor per buffer parameter:
// DLTensor* from the graph executor, Tensor objects from a direct call), compiled by the host
// compiler through a "c_source" module, as export_library compiles host code. Its size
// variables are read from the arguments' shapes, and every extent is checked before any store.
// `tir.BuildC(prim_func)` returns the module; `tir.GenerateC(prim_func)` the source.
#include <kiln/arith/analyzer.h>
#include <kiln/ffi/registry.h>
#include <kiln/runtime/module.h>
#include <kiln/tir/builtin_nodes.h>
#include <kiln/tir/codegen_c.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iterator>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "node_internal.h"

namespace kiln {
namespace tir {
namespace {

const char* kPrelude =
    R"(/* Compiled as Kiln's CPU kernels are: GCC 12 vectorizes loops only from -O3 (the host
 * compiler runs -O2 -fno-math-errno), and loops with float compares only when floating-point
 * exception flags need not be kept, which generated code never reads. A multiply and an add
 * contract into a fused multiply-add, as in the kernels (C++ in GNU mode; ISO C's -std=c11
 * would turn contraction off). Each function also gets an AVX-512 clone, chosen when the
 * library loads, beside the x86-64 baseline. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("O3", "no-trapping-math", "fp-contract=fast")
#endif
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define KILN_TIR_CLONES __attribute__((target_clones("arch=x86-64-v4", "default")))
#else
#define KILN_TIR_CLONES
#endif
#include <kiln/ffi/c_api.h>
#include <kiln/runtime/fast_math.h>
#include <kiln/runtime/tile_callback.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

/* The data of tensor argument `arg` when it is a compact CPU tensor of rank `ndim` and the
 * dtype (code, bits); otherwise NULL, with a ValueError naming the parameter raised. */
static void* kiln_tir_tensor(const KilnAny* arg, int32_t ndim, uint8_t code, uint8_t bits,
                             const char* what, const DLTensor** out) {
  const DLTensor* t = NULL;
  if (arg->type_index == kKilnTypeDLTensorPtr) t = (const DLTensor*)arg->v_ptr;
  if (arg->type_index == kKilnTypeTensor) t = &((KilnTensorObject*)arg->v_obj)->dl_tensor;
  int ok = t != NULL && t->device.device_type == kDLCPU && t->dtype.code == code &&
           t->dtype.bits == bits && t->dtype.lanes == 1 && t->ndim == ndim;
  int64_t stride = 1;
  for (int32_t d = ndim - 1; ok && d >= 0; --d) {
    ok = t->strides == NULL || t->shape[d] == 1 || t->strides[d] == stride;
    stride *= t->shape[d];
  }
  if (!ok) {
    kiln_error_set_raised_from_cstr("ValueError", what);
    return NULL;
  }
  *out = t;
  return (char*)t->data + t->byte_offset;
}
/* Runs body(begin, end, closure) over chunks of [0, extent) on Kiln's thread pool (the global
 * runtime.ParallelForC), each of at least `grain` iterations; 0, or -1 with the error raised. */
typedef int (*kiln_tir_body)(int64_t begin, int64_t end, void* closure);
static int kiln_tir_parallel_for(int64_t extent, int64_t grain, kiln_tir_body body, void* closure) {
  KilnObjectHandle pool = NULL;
  if (kiln_func_get_global_required("runtime.ParallelForC", &pool) != 0) return -1;
  KilnAny args[5];
  const int64_t ints[3] = {0, extent, grain};
  for (int i = 0; i < 3; ++i) {
    args[i].type_index = kKilnTypeInt;
    args[i].zero_padding = 0;
    args[i].v_int64 = ints[i];
  }
  args[3].type_index = kKilnTypeOpaquePtr;
  args[3].zero_padding = 0;
  args[3].v_ptr = (void*)body;
  args[4].type_index = kKilnTypeOpaquePtr;
  args[4].zero_padding = 0;
  args[4].v_ptr = closure;
  KilnAny result;
  result.type_index = kKilnTypeNone;
  result.zero_padding = 0;
  result.v_int64 = 0;
  const int rc = kiln_function_call(pool, args, 5, &result);
  kiln_object_dec_ref(pool);
  return rc;
}
/* Calls the global function `name`, looked up once into *cache (a reference the library keeps),
 * with `args`; 0, or -1 with the callee's error raised. */
static int kiln_tir_call_packed(KilnObjectHandle* cache, const char* name, const KilnAny* args,
                                int32_t num_args) {
  KilnObjectHandle func = __atomic_load_n(cache, __ATOMIC_ACQUIRE);
  if (func == NULL) {
    if (kiln_func_get_global_required(name, &func) != 0) return -1;
    KilnObjectHandle expected = NULL;
    if (!__atomic_compare_exchange_n(cache, &expected, func, 0, __ATOMIC_ACQ_REL,
                                     __ATOMIC_ACQUIRE)) {
      kiln_object_dec_ref(func); /* another thread cached it first */
      func = expected;
    }
  }
  KilnAny result;
  result.type_index = kKilnTypeNone;
  result.zero_padding = 0;
  result.v_int64 = 0;
  const int rc = kiln_function_call(func, args, num_args, &result);
  if (rc == 0 && result.type_index >= kKilnTypeStaticObjectBegin) kiln_object_dec_ref(result.v_obj);
  return rc;
}
/* Chunks of about 16384 innermost iterations, when each outer iteration runs `inner`. */
static inline int64_t kiln_tir_grain(int64_t inner) {
  return inner >= 16384 ? 1 : 16384 / (inner > 0 ? inner : 1);
}
#define KILN_TIR_INLINE static inline
)";

/// The CUDA translation unit's start: NVRTC has no C library headers, so the fixed-width types
/// and the macros the shared value printer uses are defined here.
const char* kCudaPrelude = R"(typedef signed char int8_t;
typedef short int16_t;
typedef int int32_t;
typedef long long int64_t;
typedef unsigned char uint8_t;
typedef unsigned short uint16_t;
typedef unsigned int uint32_t;
typedef unsigned long long uint64_t;
#define INT64_C(c) c##LL
#define INFINITY __int_as_float(0x7f800000)
#define NAN __int_as_float(0x7fffffff)
#define KILN_TIR_INLINE __device__ inline
)";

/// The index and min/max helpers the value printer calls, for both targets (each prelude
/// defines KILN_TIR_INLINE). Floor division and modulo follow the size expressions'; min and
/// max propagate NaN from either side, as the CPU kernels' do.
const char* kHelpers = R"(KILN_TIR_INLINE int64_t kiln_tir_floordiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
KILN_TIR_INLINE int64_t kiln_tir_floormod(int64_t a, int64_t b) {
  int64_t r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
KILN_TIR_INLINE int64_t kiln_tir_min(int64_t a, int64_t b) { return a < b ? a : b; }
KILN_TIR_INLINE int64_t kiln_tir_max(int64_t a, int64_t b) { return a > b ? a : b; }
KILN_TIR_INLINE float kiln_tir_minf(float a, float b) { return a != a ? a : b != b ? b : a < b ? a : b; }
KILN_TIR_INLINE float kiln_tir_maxf(float a, float b) { return a != a ? a : b != b ? b : a > b ? a : b; }
KILN_TIR_INLINE double kiln_tir_mind(double a, double b) { return a != a ? a : b != b ? b : a < b ? a : b; }
KILN_TIR_INLINE double kiln_tir_maxd(double a, double b) { return a != a ? a : b != b ? b : a > b ? a : b; }
)";

/// Where generated code runs: the host (a C function in Kiln's calling convention) or a CUDA
/// device (a __global__ kernel of the "cuda" module kind).
enum class Target { kHostC, kCuda };

const char* kGpuLoopKinds[] = {"block_x", "block_y", "block_z", "thread_x", "thread_y", "thread_z"};

bool IsGpuLoop(const std::string& kind) {
  return std::find(std::begin(kGpuLoopKinds), std::end(kGpuLoopKinds), kind) !=
         std::end(kGpuLoopKinds);
}

/// The CUDA index a loop kind binds its variable to: "blockIdx.x", "threadIdx.y", ...
std::string GpuIndex(const std::string& kind) {
  return (kind.rfind("block", 0) == 0 ? "blockIdx." : "threadIdx.") + kind.substr(kind.size() - 1);
}

/// The C type of `dtype`; NotImplementedError for one C has no plain type for.
std::string CType(DLDataType dtype) {
  if (dtype.lanes == 1) {
    if (dtype.code == kDLOpaqueHandle) return "void*";
    if (dtype.code == kDLFloat && dtype.bits == 32) return "float";
    if (dtype.code == kDLFloat && dtype.bits == 64) return "double";
    if (dtype.code == kDLUInt && dtype.bits == 1) return "uint8_t";  // bool
    if ((dtype.code == kDLInt || dtype.code == kDLUInt) &&
        (dtype.bits == 8 || dtype.bits == 16 || dtype.bits == 32 || dtype.bits == 64)) {
      return std::string(dtype.code == kDLInt ? "int" : "uint") + std::to_string(dtype.bits) + "_t";
    }
  }
  KILN_THROW(NotImplementedError) << "tir C codegen: no C type for " << DataTypeToString(dtype);
}

/// Names in the generated C: every IR name gets a prefix, so none is a C keyword or clashes.
std::string VarName(const std::string& name) { return "v_" + name; }
std::string BufferName(const Node& buffer) { return "b_" + buffer.field_as<String>("name").str(); }

std::string IndexC(const arith::SizeExpr& expr) {
  if (std::optional<int64_t> value = expr.as_int())
    return "INT64_C(" + std::to_string(*value) + ")";
  if (const auto* var = expr.as<arith::SizeVarObj>()) return VarName(var->name().str());
  const auto* binary = expr.as<arith::BinaryObj>();
  KILN_ICHECK(binary != nullptr) << "tir C codegen: an index of an unknown kind";
  const std::string a = IndexC(binary->a());
  const std::string b = IndexC(binary->b());
  switch (binary->op()) {
    case arith::BinaryOp::kAdd: return "(" + a + " + " + b + ")";
    case arith::BinaryOp::kSub: return "(" + a + " - " + b + ")";
    case arith::BinaryOp::kMul: return "(" + a + " * " + b + ")";
    case arith::BinaryOp::kFloorDiv: return "kiln_tir_floordiv(" + a + ", " + b + ")";
    case arith::BinaryOp::kFloorMod: return "kiln_tir_floormod(" + a + ", " + b + ")";
    case arith::BinaryOp::kMin: return "kiln_tir_min(" + a + ", " + b + ")";
    case arith::BinaryOp::kMax: return "kiln_tir_max(" + a + ", " + b + ")";
  }
  return "";
}

/// The row-major offset of `indices` in `buffer` (RowMajorOffset: no division is left in the
/// loop where the per-axis indices split one position).
std::string OffsetC(const Node& buffer, const Array<Any>& indices) {
  return IndexC(RowMajorOffset(buffer, indices));
}

std::string Literal(double value, DLDataType dtype) {
  if (std::isnan(value)) return dtype.bits == 32 ? "NAN" : "((double)NAN)";
  if (std::isinf(value)) return value < 0 ? "(-INFINITY)" : "INFINITY";
  char text[48];
  std::snprintf(text, sizeof(text), "%a", value);  // exact
  return "((" + CType(dtype) + ")" + text + ")";
}

/// The C function a call names: a float32 intrinsic takes the float form (expf, tanhf, ...),
/// except that on the host float32 exp, erf and tanh are the CPU kernels' vectorizable ones
/// (kiln/runtime/fast_math.h), so that a generated loop computes what the kernels do and still
/// vectorizes; CUDA has its own (expf, erff).
std::string CalleeC(const std::string& name, DLDataType dtype, Target target) {
  const bool is_float32 = dtype.code == kDLFloat && dtype.bits == 32;
  if (target == Target::kHostC && is_float32 && name == "exp") return "kiln_fast_expf";
  if (target == Target::kHostC && is_float32 && name == "erf") return "kiln_fast_erff";
  if (target == Target::kHostC && is_float32 && name == "tanh") return "kiln_fast_tanhf";
  static const std::set<std::string> kIntrinsics{
      "exp",  "expm1", "log",  "log1p", "sqrt", "erf",  "sin",   "cos",      "tan",
      "asin", "acos",  "atan", "sinh",  "cosh", "tanh", "asinh", "acosh",    "atanh",
      "fabs", "floor", "ceil", "fma",   "pow",  "fmod", "rint",  "nearbyint"};
  if (kIntrinsics.count(name) != 0 && is_float32) return name + "f";
  return name;
}

class CodeGen {
 public:
  explicit CodeGen(Target target) : target_(target) {}

  std::string Function(const Node& func) {
    KILN_CHECK(func.is("prim_func"), ValueError)
        << "tir C codegen takes a prim_func, got " << func->name();
    const std::string name = func.field_as<String>("name").str();
    name_ = name;
    const auto params = func.field_as<Array<Any>>("params");
    if (target_ == Target::kCuda) return Kernel(name, params, func.field_as<Node>("body"));
    *out_ << "\nKILN_TIR_CLONES int " << name
          << "(void* self, const KilnAny* args, int32_t num_args, KilnAny* result) {\n";
    Line(1, "(void)self; (void)result;");
    Line(1, "if (num_args != " + std::to_string(params.size()) +
                ") { kiln_error_set_raised_from_cstr(\"ValueError\", \"" + name + " takes " +
                std::to_string(params.size()) + " tensors\"); return -1; }");
    for (int64_t i = 0; i < params.size(); ++i) Param(name, params[i].cast<Node>(), i);
    ReadSizes(name, params);
    Stmt(func.field_as<Node>("body"), 1, 0);
    Line(1, "return 0;");
    *out_ << "}\n";
    return helpers_.str() + main_.str();
  }

 private:
  /// A __global__ kernel: one pointer per buffer parameter (the tensors' data), then one int64
  /// per size variable, in name order (CudaSizeParams).
  std::string Kernel(const std::string& name, const Array<Any>& params, const Node& body) {
    std::string signature;
    for (const Any& param : params) {
      const auto buffer = param.cast<Node>();
      signature += (signature.empty() ? "" : ", ") + CType(buffer.field_as<DLDataType>("dtype")) +
                   "* __restrict__ " + BufferName(buffer);
    }
    for (const std::string& size : CudaSizeParams(params)) {
      signature += (signature.empty() ? "" : ", ") + std::string("int64_t ") + VarName(size);
    }
    *out_ << "\nextern \"C\" __global__ void " << name << "(" << signature << ") {\n";
    Stmt(body, 1, 0);
    *out_ << "}\n";
    return main_.str();
  }

  /// A C variable in scope where a statement is generated: what a parallel loop's body,
  /// outlined into a function of its own, must be handed.
  struct ScopedVar {
    std::string type;
    std::string name;
  };

  void Line(int indent, const std::string& text) {
    *out_ << std::string(static_cast<size_t>(indent) * 2, ' ') << text << "\n";
  }

  /// Runs `emit` with `var` in scope.
  template <typename Emit>
  void InScope(const std::string& type, const std::string& var, Emit emit) {
    scope_.push_back({type, var});
    emit();
    scope_.pop_back();
  }

  void Param(const std::string& func, const Node& buffer, int64_t i) {
    const auto dtype = buffer.field_as<DLDataType>("dtype");
    const auto rank = buffer.field_as<Array<Any>>("shape").size();
    const std::string name = BufferName(buffer);
    const std::string what = func + ": argument " + std::to_string(i) + " ('" +
                             buffer.field_as<String>("name").str() + "') must be a compact CPU " +
                             DataTypeToString(dtype) + " tensor of rank " + std::to_string(rank);
    Line(1, "const DLTensor* t_" + name + ";");
    Line(1, CType(dtype) + "* " + name + " = (" + CType(dtype) + "*)kiln_tir_tensor(&args[" +
                std::to_string(i) + "], " + std::to_string(rank) + ", " +
                std::to_string(dtype.code) + ", " + std::to_string(dtype.bits) + ", \"" + what +
                "\", &t_" + name + ");");
    Line(1, "if (" + name + " == NULL) return -1;");
    scope_.push_back({CType(dtype) + "*", name});
  }

  /// Each size variable from the first extent that is the variable alone; then every extent
  /// checked against its expression.
  void ReadSizes(const std::string& func, const Array<Any>& params) {
    std::set<std::string> known;
    for (const Any& param : params) {
      const auto buffer = param.cast<Node>();
      const auto shape = buffer.field_as<Array<Any>>("shape");
      for (int64_t d = 0; d < shape.size(); ++d) {
        const auto* var = shape[d].cast<arith::SizeExpr>().as<arith::SizeVarObj>();
        if (var == nullptr || !known.insert(var->name().str()).second) continue;
        Line(1, "const int64_t " + VarName(var->name().str()) + " = t_" + BufferName(buffer) +
                    "->shape[" + std::to_string(d) + "];");
        scope_.push_back({"int64_t", VarName(var->name().str())});
      }
    }
    for (const Any& param : params) {
      const auto buffer = param.cast<Node>();
      const auto shape = buffer.field_as<Array<Any>>("shape");
      for (int64_t d = 0; d < shape.size(); ++d) {
        const auto extent = shape[d].cast<arith::SizeExpr>();
        for (const std::string& var : arith::FreeSizeVars(extent)) {
          KILN_CHECK(known.count(var) != 0, ValueError)
              << "tir C codegen: " << func << "'s size '" << var
              << "' is no parameter's extent alone, so no argument gives it";
        }
        const std::string what = func + ": argument '" + buffer.field_as<String>("name").str() +
                                 "' has the wrong extent at axis " + std::to_string(d) +
                                 " (the function needs " + extent.ToString() + ")";
        Line(1, "if (t_" + BufferName(buffer) + "->shape[" + std::to_string(d) + "] != " +
                    IndexC(extent) + ") { kiln_error_set_raised_from_cstr(\"ValueError\", \"" +
                    what + "\"); return -1; }");
      }
    }
  }

  void Stmt(const Node& stmt, int indent, int depth) {
    KILN_CHECK(depth < internal::kMaxDepth, ValueError)
        << "tir: nodes nest deeper than " << internal::kMaxDepth << " levels";
    const std::string& kind = stmt->name();
    if (kind == "seq") {
      for (const Any& item : stmt.field_as<Array<Any>>("stmts")) {
        Stmt(item.cast<Node>(), indent, depth + 1);
      }
    } else if (kind == "for") {
      const std::string var = VarName(stmt.field_as<String>("var").str());
      const std::string loop_kind = stmt.field_as<String>("kind").str();
      if (IsGpuLoop(loop_kind)) {
        GpuLoop(stmt, indent, depth);
        return;
      }
      if (loop_kind == "parallel") {
        KILN_CHECK(target_ == Target::kHostC, NotImplementedError)
            << "tir CUDA codegen: loop '" << stmt.field_as<String>("var").str() << "' of " << name_
            << " is parallel; bind it to blocks or threads (block_x, thread_x)";
        ParallelLoop(stmt, indent, depth);
        return;
      }
      // Vectorized and unrolled loops tell the compiler so.
      if (loop_kind == "vectorized") Line(indent, "#pragma GCC ivdep");
      if (loop_kind == "unrolled") Line(indent, "#pragma GCC unroll 8");
      Line(indent, "for (int64_t " + var + " = 0; " + var + " < " +
                       IndexC(stmt.field_as<arith::SizeExpr>("extent")) + "; ++" + var + ") {");
      InScope("int64_t", var, [&] { Stmt(stmt.field_as<Node>("body"), indent + 1, depth + 1); });
      Line(indent, "}");
    } else if (kind == "store") {
      const auto buffer = stmt.field_as<Node>("buffer");
      Line(indent, BufferName(buffer) + "[" +
                       OffsetC(buffer, stmt.field_as<Array<Any>>("indices")) +
                       "] = " + Value(stmt.field_as<Node>("value"), depth + 1) + ";");
    } else if (kind == "if") {
      Line(indent, "if (" + Value(stmt.field_as<Node>("cond"), depth + 1) + ") {");
      Stmt(stmt.field_as<Node>("then"), indent + 1, depth + 1);
      const Any& otherwise = stmt.field("else");
      if (!otherwise.is_none()) {
        Line(indent, "} else {");
        Stmt(otherwise.cast<Node>(), indent + 1, depth + 1);
      }
      Line(indent, "}");
    } else if (kind == "let") {
      const auto var = stmt.field_as<Node>("var");
      Line(indent, "{");
      const std::string name = VarName(var.field_as<String>("name").str());
      Line(indent + 1, "const " + CType(var->dtype()) + " " + name + " = " +
                           Value(stmt.field_as<Node>("value"), depth + 1) + ";");
      InScope(CType(var->dtype()), name,
              [&] { Stmt(stmt.field_as<Node>("body"), indent + 1, depth + 1); });
      Line(indent, "}");
    } else if (kind == "allocate") {
      Allocate(stmt, indent, depth);
    } else if (kind == "evaluate" && stmt.field_as<Node>("value").is("call_packed")) {
      Line(indent, "{");
      const std::string call = CallPacked(stmt.field_as<Node>("value"), indent + 1, depth + 1);
      Line(indent + 1, "if (" + call + " != 0) return -1;");
      Line(indent, "}");
    } else if (kind == "evaluate") {
      Line(indent, "(void)(" + Value(stmt.field_as<Node>("value"), depth + 1) + ");");
    } else {
      KILN_THROW(NotImplementedError) << "tir C codegen: no C for the statement '" << kind
                                      << "' (lower it to built-in statements first)";
    }
  }

  /// A local or global buffer of `allocate`: on the stack when small and of a static size, else
  /// on the heap (a NULL from malloc is a MemoryError), freed when its body is done.
  void Allocate(const Node& stmt, int indent, int depth) {
    const std::string scope = stmt.field_as<String>("scope").str();
    KILN_CHECK(scope == "local" || scope == "global", NotImplementedError)
        << "tir C codegen: no C for an allocation in scope '" << scope << "' (a GPU scope)";
    const auto buffer = stmt.field_as<Node>("buffer");
    const std::string type = CType(buffer.field_as<DLDataType>("dtype"));
    const std::string name = BufferName(buffer);
    arith::SizeExpr count = arith::IntImm(1);
    for (const Any& extent : buffer.field_as<Array<Any>>("shape")) {
      count = count * extent.cast<arith::SizeExpr>();
    }
    constexpr int64_t kMaxStackElements = 1024;
    Line(indent, "{");
    const std::optional<int64_t> constant = count.as_int();
    const bool on_stack = constant.has_value() && *constant <= kMaxStackElements;
    KILN_CHECK(on_stack || target_ == Target::kHostC, NotImplementedError)
        << "tir CUDA codegen: buffer '" << buffer.field_as<String>("name").str() << "' of " << name_
        << " (" << count.ToString()
        << " elements) is too large for a thread; compute its stage in a kernel of its own";
    if (on_stack) {
      Line(indent + 1,
           type + " " + name + "[" + std::to_string(std::max<int64_t>(*constant, 1)) + "];");
    } else {
      Line(indent + 1, type + "* " + name + " = (" + type + "*)malloc(sizeof(" + type +
                           ") * (size_t)" + IndexC(count) + " + 1);");
      Line(indent + 1, "if (" + name +
                           " == NULL) { kiln_error_set_raised_from_cstr(\"MemoryError\", \"out of "
                           "memory for buffer '" +
                           buffer.field_as<String>("name").str() + "'\"); return -1; }");
    }
    InScope(type + "*", name, [&] { Stmt(stmt.field_as<Node>("body"), indent + 1, depth + 1); });
    if (!on_stack) Line(indent + 1, "free(" + name + ");");
    Line(indent, "}");
  }

  /// A loop bound to a GPU index: its variable is that index, and iterations past the extent
  /// (a grid rounded up) do nothing.
  void GpuLoop(const Node& stmt, int indent, int depth) {
    const std::string var = VarName(stmt.field_as<String>("var").str());
    const std::string loop_kind = stmt.field_as<String>("kind").str();
    KILN_CHECK(target_ == Target::kCuda, NotImplementedError)
        << "tir C codegen: loop '" << stmt.field_as<String>("var").str() << "' of " << name_
        << " is bound to " << loop_kind << "; only CUDA code binds loops to GPU indices";
    Line(indent, "{");
    Line(indent + 1, "const int64_t " + var + " = (int64_t)" + GpuIndex(loop_kind) + ";");
    Line(indent + 1,
         "if (" + var + " < " + IndexC(stmt.field_as<arith::SizeExpr>("extent")) + ") {");
    InScope("int64_t", var, [&] { Stmt(stmt.field_as<Node>("body"), indent + 2, depth + 1); });
    Line(indent + 1, "}");
    Line(indent, "}");
  }

  /// Emits `body` as the static function `id(<params>, void* kiln_c)` before the current one,
  /// every variable in scope handed to it through a closure struct `struct <id>_closure`;
  /// returns that struct's initializer, to be declared where the function is called from.
  template <typename Body>
  std::string Outline(const std::string& id, const std::string& params, Body body) {
    std::string fields;
    std::string values;
    std::string unpack;
    for (const ScopedVar& scoped : scope_) {
      fields += "  " + scoped.type + " " + scoped.name + ";\n";
      values += scoped.name + ", ";
      unpack += "  " + scoped.type + " " + scoped.name + " = c->" + scoped.name + "; (void)" +
                scoped.name + ";\n";
    }
    if (fields.empty()) fields = "  int unused;\n", values = "0";
    std::ostringstream code;
    std::ostringstream* enclosing = out_;
    out_ = &code;
    body();
    out_ = enclosing;
    helpers_ << "struct " << id << "_closure {\n"
             << fields << "};\n"
             << "KILN_TIR_CLONES static int " << id << "(" << params << ", void* kiln_c) {\n"
             << "  const struct " << id << "_closure* c = (const struct " << id
             << "_closure*)kiln_c;\n"
             << unpack << code.str() << "  return 0;\n}\n";
    return "{" + values + "}";
  }

  /// A parallel loop: its body becomes a function of a chunk of iterations, run by
  /// kiln_tir_parallel_for.
  void ParallelLoop(const Node& stmt, int indent, int depth) {
    const std::string id = name_ + "_parallel" + std::to_string(outlined_++);
    const std::string var = VarName(stmt.field_as<String>("var").str());
    const std::string closure = Outline(id, "int64_t kiln_begin, int64_t kiln_end", [&] {
      Line(1, "for (int64_t " + var + " = kiln_begin; " + var + " < kiln_end; ++" + var + ") {");
      InScope("int64_t", var, [&] { Stmt(stmt.field_as<Node>("body"), 2, depth + 1); });
      Line(1, "}");
    });
    Line(indent, "{");
    Line(indent + 1, "struct " + id + "_closure kiln_c = " + closure + ";");
    Line(indent + 1, "if (kiln_tir_parallel_for(" +
                         IndexC(stmt.field_as<arith::SizeExpr>("extent")) + ", kiln_tir_grain(" +
                         IndexC(InnerIterations(stmt.field_as<Node>("body"))) + "), " + id +
                         ", &kiln_c) != 0) return -1;");
    Line(indent, "}");
  }

  /// A callback: its body becomes a function of the parameters' values, and the value is the
  /// address of a KilnTileCallback declared (at `indent`) before the call that passes it.
  std::string CallbackC(const Node& callback, int indent, int depth) {
    const std::string id = name_ + "_callback" + std::to_string(outlined_++);
    const auto params = callback.field_as<Array<Any>>("params");
    const std::string closure = Outline(id, "const int64_t* kiln_params", [&] {
      const size_t scoped = scope_.size();
      for (int64_t p = 0; p < params.size(); ++p) {
        const std::string var =
            VarName(params[p].cast<arith::SizeExpr>().as<arith::SizeVarObj>()->name().str());
        Line(1, "const int64_t " + var + " = kiln_params[" + std::to_string(p) + "];");
        scope_.push_back({"int64_t", var});
      }
      Stmt(callback.field_as<Node>("body"), 1, depth + 1);
      scope_.resize(scoped);
    });
    Line(indent, "struct " + id + "_closure " + id + "_c = " + closure + ";");
    Line(indent, "const KilnTileCallback " + id + "_cb = {" + id + ", &" + id + "_c};");
    return "(void*)&" + id + "_cb";
  }

  /// About how many innermost iterations one iteration of a loop with this `body` runs: the
  /// loops' extents multiplied, the statements of a sequence added (a row's statistics, then
  /// its elements), for sizing a parallel loop's chunks.
  static arith::SizeExpr InnerIterations(const Node& body) {
    if (body.is("for")) {
      return body.field_as<arith::SizeExpr>("extent") *
             InnerIterations(body.field_as<Node>("body"));
    }
    if (body.is("allocate") || body.is("let")) return InnerIterations(body.field_as<Node>("body"));
    if (body.is("seq")) {
      arith::SizeExpr sum = arith::IntImm(0);
      for (const Any& stmt : body.field_as<Array<Any>>("stmts")) {
        sum = sum + InnerIterations(stmt.cast<Node>());
      }
      return sum;
    }
    return arith::IntImm(1);
  }

  /// A call through the FFI: each argument a KilnAny (ints as int64, floats as double, handles
  /// as opaque pointers), the function looked up once per call site.
  std::string CallPacked(const Node& call, int indent, int depth) {
    const std::string name = call.field_as<String>("name").str();
    KILN_CHECK(target_ == Target::kHostC, NotImplementedError)
        << "tir CUDA codegen: " << name_ << " calls '" << name
        << "' through the FFI (call_packed), which only host code can";
    const std::string cache = name_ + "_global" + std::to_string(packed_calls_++);
    helpers_ << "static KilnObjectHandle " << cache << ";\n";
    std::string args;
    const auto values = call.field_as<Array<Any>>("args");
    for (const Any& arg : values) {
      const Node value = arg.cast<Node>();
      const DLDataType dtype = value->dtype();
      const std::string c =
          value.is("callback") ? CallbackC(value, indent, depth + 1) : Value(value, depth + 1);
      std::string any;
      if (dtype.code == kDLOpaqueHandle) {
        any = "kKilnTypeOpaquePtr, 0, {.v_ptr = " + c + "}";
      } else if (dtype.code == kDLFloat) {
        any = "kKilnTypeFloat, 0, {.v_float64 = (double)" + c + "}";
      } else if (dtype.bits == 1) {
        any = "kKilnTypeBool, 0, {.v_int64 = (int64_t)" + c + "}";
      } else {
        any = "kKilnTypeInt, 0, {.v_int64 = (int64_t)" + c + "}";
      }
      args += (args.empty() ? "" : ", ") + std::string("{") + any + "}";
    }
    return "kiln_tir_call_packed(&" + cache + ", \"" + name + "\", " +
           (values.size() == 0 ? std::string("NULL") : "(const KilnAny[]){" + args + "}") + ", " +
           std::to_string(values.size()) + ")";
  }

  std::string Value(const Node& value, int depth) {
    KILN_CHECK(depth < internal::kMaxDepth, ValueError)
        << "tir: nodes nest deeper than " << internal::kMaxDepth << " levels";
    static const std::map<std::string, std::string> kOperators{
        {"add", "+"}, {"sub", "-"}, {"mul", "*"}, {"div", "/"}, {"eq", "=="},  {"ne", "!="},
        {"lt", "<"},  {"le", "<="}, {"gt", ">"},  {"ge", ">="}, {"and", "&&"}, {"or", "||"}};
    const std::string& kind = value->name();
    auto child = [&](const char* field) { return Value(value.field_as<Node>(field), depth + 1); };
    if (auto op = kOperators.find(kind); op != kOperators.end()) {
      return "(" + child("a") + " " + op->second + " " + child("b") + ")";
    }
    if (kind == "int") {
      return "((" + CType(value->dtype()) + ")INT64_C(" +
             std::to_string(value.field_as<int64_t>("value")) + "))";
    }
    if (kind == "float") return Literal(value.field_as<double>("value"), value->dtype());
    if (kind == "var") return VarName(value.field_as<String>("name").str());
    if (kind == "index") {
      return "((" + CType(value->dtype()) + ")" + IndexC(value.field_as<arith::SizeExpr>("index")) +
             ")";
    }
    if (kind == "min" || kind == "max") {
      const DLDataType dtype = value->dtype();
      if (dtype.code == kDLFloat) {
        return "kiln_tir_" + kind + (dtype.bits == 32 ? "f(" : "d(") + child("a") + ", " +
               child("b") + ")";
      }
      // Integer operands have no side effects, so each may be written twice.
      const std::string a = child("a");
      const std::string b = child("b");
      return "(" + a + (kind == "min" ? " < " : " > ") + b + " ? " + a + " : " + b + ")";
    }
    if (kind == "mod") {
      if (value->dtype().code == kDLFloat) {
        return CalleeC("fmod", value->dtype(), target_) + "(" + child("a") + ", " + child("b") +
               ")";
      }
      return "(" + child("a") + " % " + child("b") + ")";
    }
    if (kind == "not") return "(!" + child("a") + ")";
    if (kind == "select")
      return "(" + child("cond") + " ? " + child("a") + " : " + child("b") + ")";
    if (kind == "cast") return "((" + CType(value->dtype()) + ")" + child("value") + ")";
    if (kind == "load") {
      const auto buffer = value.field_as<Node>("buffer");
      return BufferName(buffer) + "[" + OffsetC(buffer, value.field_as<Array<Any>>("indices")) +
             "]";
    }
    if (kind == "address") {
      const auto buffer = value.field_as<Node>("buffer");
      return "((void*)(" + BufferName(buffer) + " + " +
             OffsetC(buffer, value.field_as<Array<Any>>("indices")) + "))";
    }
    KILN_CHECK(kind != "callback", ValueError)
        << "tir C codegen: " << name_
        << " uses a callback outside the arguments of a call_packed, the only place it can be";
    KILN_CHECK(kind != "call_packed", ValueError)
        << "tir C codegen: " << name_ << " uses call_packed('"
        << value.field_as<String>("name").str()
        << "') inside a value; it must be an evaluate statement's whole value";
    if (kind == "call") {
      std::string args;
      for (const Any& arg : value.field_as<Array<Any>>("args")) {
        args += (args.empty() ? "" : ", ") + Value(arg.cast<Node>(), depth + 1);
      }
      return CalleeC(value.field_as<String>("name").str(), value->dtype(), target_) + "(" + args +
             ")";
    }
    KILN_THROW(NotImplementedError)
        << "tir C codegen: no C for the value '" << kind << "' (lower it to built-in values first)";
  }

  Target target_;
  std::string name_;
  std::ostringstream main_;
  std::ostringstream helpers_;  ///< outlined parallel loop bodies, defined before main_
  std::ostringstream* out_ = &main_;
  std::vector<ScopedVar> scope_;
  int outlined_ = 0;  ///< parallel loop bodies and callbacks
  int packed_calls_ = 0;
};

}  // namespace

std::string GenerateC(const std::vector<Node>& funcs) {
  std::string code = std::string(kPrelude) + kHelpers;
  for (const Node& func : funcs) code += CodeGen(Target::kHostC).Function(func);
  return code;
}

std::string GenerateCuda(const std::vector<Node>& funcs) {
  std::string code = std::string(kCudaPrelude) + kHelpers;
  for (const Node& func : funcs) code += CodeGen(Target::kCuda).Function(func);
  return code;
}

std::vector<std::string> CudaSizeParams(const Array<Any>& params) {
  std::set<std::string> sizes;
  for (const Any& param : params) {
    for (const Any& extent : param.cast<Node>().field_as<Array<Any>>("shape")) {
      for (const std::string& var : arith::FreeSizeVars(extent.cast<arith::SizeExpr>())) {
        sizes.insert(var);
      }
    }
  }
  return {sizes.begin(), sizes.end()};
}

runtime::Module BuildC(const std::vector<Node>& funcs) {
  Array<String> names;
  for (const Node& func : funcs) names.push_back(func.field_as<String>("name"));
  return Function::GetGlobalRequired("runtime.CSourceModuleCreate")(String(GenerateC(funcs)), names)
      .cast<runtime::Module>();
}

KILN_REGISTER_GLOBAL("tir.GenerateC").set_body_typed([](const Node& func) {
  return GenerateC({func});
});

KILN_REGISTER_GLOBAL("tir.BuildC").set_body_typed([](const Node& func) { return BuildC({func}); });

KILN_REGISTER_GLOBAL("tir.GenerateCuda").set_body_typed([](const Node& func) {
  return GenerateCuda({func});
});

KILN_REGISTER_GLOBAL("tir.CudaSizeParams").set_body_typed([](const Node& func) {
  const std::vector<std::string> sizes = CudaSizeParams(func.field_as<Array<Any>>("params"));
  return Array<String>(sizes.begin(), sizes.end());
});

}  // namespace tir
}  // namespace kiln
