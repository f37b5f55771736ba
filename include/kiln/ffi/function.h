/// Function: a callable object with the one calling convention of the C ABI, typed wrappers that
/// convert arguments with clear errors, and access to the global function registry.
#ifndef KILN_FFI_FUNCTION_H_
#define KILN_FFI_FUNCTION_H_

#include <kiln/ffi/any.h>
#include <kiln/ffi/array.h>

#include <functional>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace kiln {

/// Layout matches KilnFunctionObject.
class FunctionObj : public Object {
 public:
  static constexpr const char* _type_key = "kiln.Function";
  static constexpr bool _type_final = true;
  KILN_DECLARE_STATIC_OBJECT_INFO(FunctionObj, Object, kKilnTypeFunction);

  KilnSafeCall safe_call = nullptr;

 protected:
  FunctionObj() = default;
};

namespace detail {

/// A function object that runs a C++ callable `void(const AnyView*, int32_t, Any*)`.
template <typename Callable>
class PackedFunctionObj : public FunctionObj {
 public:
  explicit PackedFunctionObj(Callable callable) : callable_(std::move(callable)) {
    safe_call = &SafeCall;
  }

 private:
  // The C ABI boundary: nothing thrown escapes; errors go to the thread-local slot.
  static int SafeCall(void* self, const KilnAny* args, int32_t num_args, KilnAny* result) {
    try {
      auto* func =
          static_cast<PackedFunctionObj*>(ObjectUnsafe::FromHeader(static_cast<KilnObject*>(self)));
      func->callable_(reinterpret_cast<const AnyView*>(args), num_args,
                      reinterpret_cast<Any*>(result));
      return 0;
    } catch (...) {
      SetRaisedFromCurrentException();
      return -1;
    }
  }
  Callable callable_;
};

template <typename F>
struct FunctionSignature : FunctionSignature<decltype(&F::operator())> {};
template <typename R, typename... Args>
struct FunctionSignature<R (*)(Args...)> {
  using Return = R;
  using ArgTypes = std::tuple<std::decay_t<Args>...>;
};
template <typename C, typename R, typename... Args>
struct FunctionSignature<R (C::*)(Args...) const> : FunctionSignature<R (*)(Args...)> {};
template <typename C, typename R, typename... Args>
struct FunctionSignature<R (C::*)(Args...)> : FunctionSignature<R (*)(Args...)> {};

template <typename... Args>
std::string SignatureStr(const std::string& name, std::tuple<Args...>* /*tag*/) {
  std::string result = name + "(";
  std::string sep;
  ((result += sep + TypeTraits<Args>::TypeStr(), sep = ", "), ...);
  return result + ")";
}

template <typename ArgTuple>
[[noreturn]] void ThrowArgumentCountError(const std::string& name, int32_t given) {
  throw Error("TypeError", "`" + SignatureStr(name, static_cast<ArgTuple*>(nullptr)) +
                               "` expects " + std::to_string(std::tuple_size_v<ArgTuple>) +
                               " arguments, but " + std::to_string(given) + " were given");
}

template <typename ArgTuple, typename T>
[[noreturn]] void ThrowArgumentTypeError(const std::string& name, int32_t index,
                                         const AnyView& arg) {
  throw Error("TypeError",
              "mismatched type on argument #" + std::to_string(index) + " when calling `" +
                  SignatureStr(name, static_cast<ArgTuple*>(nullptr)) + "`: expected " +
                  TypeTraits<T>::TypeStr() + ", got " + arg.type_str());
}

template <typename ArgTuple, size_t kIndex>
std::tuple_element_t<kIndex, ArgTuple> CastArgument(const std::string& name, const AnyView* args) {
  using T = std::tuple_element_t<kIndex, ArgTuple>;
  std::optional<T> value = TypeTraits<T>::TryCastFromAnyView(args[kIndex].raw());
  if (KILN_UNLIKELY(!value.has_value())) {
    ThrowArgumentTypeError<ArgTuple, T>(name, static_cast<int32_t>(kIndex), args[kIndex]);
  }
  return *std::move(value);
}

/// Unpacks, type-checks and forwards the arguments of a typed callable.
template <typename F, size_t... kIndex>
void CallTyped(const F& f, const std::string& name, const AnyView* args, int32_t num_args,
               Any* result, std::index_sequence<kIndex...> /*indices*/) {
  using Signature = FunctionSignature<F>;
  using ArgTuple = typename Signature::ArgTypes;
  if (KILN_UNLIKELY(num_args != static_cast<int32_t>(sizeof...(kIndex)))) {
    ThrowArgumentCountError<ArgTuple>(name, num_args);
  }
  if constexpr (std::is_void_v<typename Signature::Return>) {
    f(CastArgument<ArgTuple, kIndex>(name, args)...);
  } else {
    *result = Any(f(CastArgument<ArgTuple, kIndex>(name, args)...));
  }
}

}  // namespace detail

class Function : public ObjectRef {
 public:
  KILN_DEFINE_OBJECT_REF_METHODS(Function, ObjectRef, FunctionObj);

  /// Wraps `void(const AnyView* args, int32_t num_args, Any* result)`.
  template <typename Callable>
  static Function FromPacked(Callable callable) {
    return Function(make_object<detail::PackedFunctionObj<Callable>>(std::move(callable)));
  }

  /// Wraps a typed callable; `name` appears in argument errors.
  template <typename Callable>
  static Function FromTyped(Callable callable, std::string name = "<anonymous>") {
    constexpr size_t kNumArgs =
        std::tuple_size_v<typename detail::FunctionSignature<Callable>::ArgTypes>;
    return FromPacked([callable = std::move(callable), name = std::move(name)](
                          const AnyView* args, int32_t num_args, Any* result) {
      detail::CallTyped(callable, name, args, num_args, result,
                        std::make_index_sequence<kNumArgs>());
    });
  }

  template <typename... Args>
  Any operator()(Args&&... args) const {
    const AnyView views[sizeof...(Args) + 1] = {AnyView(std::forward<Args>(args))...};
    return CallPacked(views, static_cast<int32_t>(sizeof...(Args)));
  }

  Any CallPacked(const AnyView* args, int32_t num_args) const {
    Any result;
    KilnObject* self = detail::ObjectUnsafe::Header(get());
    if (KILN_UNLIKELY(get()->safe_call(self, reinterpret_cast<const KilnAny*>(args), num_args,
                                       result.ResetToRaw()) != 0)) {
      detail::ThrowRaised();
    }
    return result;
  }

  /// The registered function, or nullopt.
  static std::optional<Function> GetGlobal(const char* name) {
    KilnObjectHandle handle = nullptr;
    if (kiln_func_get_global(name, &handle) != 0) detail::ThrowRaised();
    if (handle == nullptr) return std::nullopt;
    return Function::FromUnchecked(
        ObjectPtr<Object>::FromOwned(detail::ObjectUnsafe::FromHeader(handle)));
  }
  /// The registered function; KeyError suggesting close names when there is none.
  static Function GetGlobalRequired(const char* name) {
    KilnObjectHandle handle = nullptr;
    if (kiln_func_get_global_required(name, &handle) != 0) detail::ThrowRaised();
    return Function::FromUnchecked(
        ObjectPtr<Object>::FromOwned(detail::ObjectUnsafe::FromHeader(handle)));
  }
  /// Registers `func` under `name`; the owner is this DSO. KeyError on a duplicate name
  /// unless `allow_override`.
  static void SetGlobal(const char* name, const Function& func, bool allow_override = false) {
    if (kiln_func_set_global(name, detail::ObjectUnsafe::Header(func.get()),
                             allow_override ? KILN_FUNC_OVERRIDE : 0, nullptr) != 0) {
      detail::ThrowRaised();
    }
  }
  static void RemoveGlobal(const char* name) {
    if (kiln_func_remove_global(name) != 0) detail::ThrowRaised();
  }
  static std::vector<std::string> ListGlobalNames() {
    KilnObjectHandle handle = nullptr;
    if (kiln_func_list_global(&handle) != 0) detail::ThrowRaised();
    auto names = Array<String>::FromUnchecked(
        ObjectPtr<Object>::FromOwned(detail::ObjectUnsafe::FromHeader(handle)));
    std::vector<std::string> result;
    result.reserve(names.size());
    for (const String& name : names) result.push_back(name.str());
    return result;
  }
};

/// A Function with a known C++ signature: `TypedFunction<int64_t(int64_t, int64_t)>`.
template <typename Signature>
class TypedFunction;

template <typename R, typename... Args>
class TypedFunction<R(Args...)> {
 public:
  TypedFunction() = default;
  explicit TypedFunction(Function func) : func_(std::move(func)) {}
  template <typename Callable>
  TypedFunction(Callable callable, std::string name)
      : func_(
            Function::FromTyped(std::function<R(Args...)>(std::move(callable)), std::move(name))) {}

  R operator()(Args... args) const {
    if constexpr (std::is_void_v<R>) {
      func_(std::forward<Args>(args)...);
    } else {
      return func_(std::forward<Args>(args)...).template cast<R>();
    }
  }
  const Function& function() const { return func_; }

 private:
  Function func_;
};

}  // namespace kiln

#endif  // KILN_FFI_FUNCTION_H_
