/// kiln::Error, the one exception type of Kiln, and the KILN_THROW / KILN_CHECK macros.
///
/// An Error wraps an Error object (kind, message, context chain) so that it crosses the C ABI
/// unchanged: a C++ throw becomes a -1 return plus the object in the thread-local slot, and the
/// caller on the other side rethrows the same object.
#ifndef KILN_FFI_ERROR_H_
#define KILN_FFI_ERROR_H_

#include <kiln/ffi/object.h>

#include <exception>
#include <sstream>
#include <string>
#include <string_view>

namespace kiln {

/// The Error object; its layout after the header matches KilnErrorObject.
class ErrorObj : public Object {
 public:
  static constexpr const char* _type_key = "kiln.Error";
  static constexpr bool _type_final = true;
  KILN_DECLARE_STATIC_OBJECT_INFO(ErrorObj, Object, kKilnTypeError);

  ErrorObj(std::string kind, std::string message, std::string context)
      : kind_str_(std::move(kind)),
        message_str_(std::move(message)),
        context_str_(std::move(context)) {
    Sync();
  }
  ErrorObj(const ErrorObj& other)
      : Object(other),
        kind_str_(other.kind_str_),
        message_str_(other.message_str_),
        context_str_(other.context_str_) {
    Sync();
  }
  ErrorObj& operator=(const ErrorObj&) = delete;

  const std::string& kind() const { return kind_str_; }
  const std::string& message() const { return message_str_; }
  const std::string& context() const { return context_str_; }

 private:
  void Sync() {
    kind_ = {kind_str_.data(), kind_str_.size()};
    message_ = {message_str_.data(), message_str_.size()};
    context_ = {context_str_.data(), context_str_.size()};
  }
  // Read through the C layout (KilnErrorObject) by other languages; must come first.
  KilnByteArray kind_;
  KilnByteArray message_;
  KilnByteArray context_;
  std::string kind_str_;
  std::string message_str_;
  std::string context_str_;
};

/// The exception Kiln code throws. `kind` mirrors Python's exception names ("TypeError",
/// "ValueError", "KeyError", "IndexError", "RuntimeError", "InternalError", ...). Default
/// visibility keeps its type_info shared, so it can be caught across Kiln's own libraries.
class KILN_API Error : public std::exception {
 public:
  Error(std::string kind, std::string message, std::string context = "")
      : Error(make_object<ErrorObj>(std::move(kind), std::move(message), std::move(context))) {}
  explicit Error(ObjectPtr<ErrorObj> obj) : obj_(std::move(obj)) {
    what_ = obj_->kind() + ": " + obj_->message();
    if (!obj_->context().empty()) what_ += "\n" + obj_->context();
  }

  const std::string& kind() const { return obj_->kind(); }
  const std::string& message() const { return obj_->message(); }
  /// Context lines, innermost first, separated by '\n'.
  const std::string& context() const { return obj_->context(); }
  const char* what() const noexcept override { return what_.c_str(); }

  /// A copy of this error with one more context line (the frame it is passing through).
  Error WithContext(std::string_view line) const {
    std::string context = obj_->context();
    if (!context.empty()) context += '\n';
    context += line;
    return Error(kind(), message(), std::move(context));
  }

  const ObjectPtr<ErrorObj>& object() const { return obj_; }

 private:
  ObjectPtr<ErrorObj> obj_;
  std::string what_;
};

namespace detail {

/// Takes the error raised in this thread's slot (after a C call returned -1).
inline Error TakeRaised() {
  KilnObjectHandle handle = nullptr;
  kiln_error_move_from_raised(&handle);
  auto* obj = static_cast<ErrorObj*>(ObjectUnsafe::FromHeader(handle));
  return Error(ObjectPtr<ErrorObj>::FromOwned(obj));
}

[[noreturn]] inline void ThrowRaised() { throw TakeRaised(); }

/// Turns the exception being handled into the thread's raised error. Call inside `catch (...)`.
inline void SetRaisedFromCurrentException() noexcept {
  try {
    throw;
  } catch (const Error& error) {
    kiln_error_set_raised(ObjectUnsafe::Header(error.object().get()));
  } catch (const std::bad_alloc&) {
    kiln_error_set_raised_from_cstr("MemoryError", "out of memory");
  } catch (const std::exception& error) {
    kiln_error_set_raised_from_cstr("RuntimeError", error.what());
  } catch (...) {
    kiln_error_set_raised_from_cstr("InternalError", "a non-standard C++ exception was thrown");
  }
}

/// Collects a message with operator<< and throws it when the statement ends.
class ErrorBuilder {
 public:
  ErrorBuilder(const char* kind, const char* file, int line) : kind_(kind) {
    location_ << "raised at " << file << ":" << line;
  }
  ErrorBuilder(const ErrorBuilder&) = delete;
  ErrorBuilder& operator=(const ErrorBuilder&) = delete;
  std::ostringstream& stream() { return message_; }
  // Throwing from the destructor is the point: the statement that built the message ends here.
  [[noreturn]] ~ErrorBuilder() noexcept(false) {  // NOLINT(bugprone-exception-escape)
    throw Error(kind_, message_.str(), location_.str());
  }

 private:
  const char* kind_;
  std::ostringstream message_;
  std::ostringstream location_;
};

}  // namespace detail
}  // namespace kiln

#if defined(__FILE_NAME__)
#define KILN_FILE_NAME __FILE_NAME__
#else
#define KILN_FILE_NAME __FILE__
#endif

/// Throw an error of the given kind: `KILN_THROW(ValueError) << "bad axis " << axis;`
#define KILN_THROW(ErrorKind) \
  ::kiln::detail::ErrorBuilder(#ErrorKind, KILN_FILE_NAME, __LINE__).stream()

/// Check user input: `KILN_CHECK(ndim == 4, ValueError) << "conv2d expects 4-D input";`
#define KILN_CHECK(condition, ErrorKind) \
  if (condition) {                       \
  } else                                 \
    KILN_THROW(ErrorKind)

/// Check one of Kiln's own invariants; a failure is a bug in Kiln.
#define KILN_ICHECK(condition) \
  if (condition) {             \
  } else                       \
    KILN_THROW(InternalError) << "Check failed: (" #condition ") "

namespace kiln {

/// `ref` as the reference type RefT (Var, Call, ...); an internal error when it is null or holds
/// another kind of object. For code that has already tested the kind (`expr.as<VarObj>()`).
template <typename RefT>
RefT Downcast(const ObjectRef& ref) {
  KILN_ICHECK(ref.defined() && ref->IsInstance<typename RefT::ContainerType>())
      << "Downcast to " << RefT::ContainerType::_type_key << " of a "
      << (ref.defined() ? ref->GetTypeKey() : std::string("null reference"));
  return RefT::FromUnchecked(ref.data());
}

}  // namespace kiln

#endif  // KILN_FFI_ERROR_H_
