// libkiln_testing.so: functions the C++ and Python tests call by name. Never installed.
#include <kiln/ffi/map.h>
#include <kiln/ffi/registry.h>
#include <kiln/ffi/shape.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

namespace kiln {
namespace testing {
namespace {

std::atomic<int64_t> live_counted_objects{0};

/// An object that counts its live instances, so tests can detect leaks across the ABI.
class CountedObj : public Object {
 public:
  static constexpr const char* _type_key = "testing.Counted";
  KILN_DECLARE_OBJECT_INFO(CountedObj, Object);
  CountedObj() { ++live_counted_objects; }
  CountedObj(const CountedObj& other) : Object(other) { ++live_counted_objects; }
  CountedObj& operator=(const CountedObj&) = delete;
  ~CountedObj() { --live_counted_objects; }
};

// A flag one call waits for and another raises: with the waiter called from one Python thread
// and the raiser from another, the wait ends only if calls into Kiln release the GIL.
std::atomic<bool> signal_raised{false};

KILN_REGISTER_GLOBAL("testing.wait_for_signal").set_body_typed([](int64_t timeout_ms) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (!signal_raised.exchange(false)) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
});
KILN_REGISTER_GLOBAL("testing.raise_signal").set_body_typed([]() { signal_raised = true; });

KILN_REGISTER_GLOBAL("testing.nop").set_body_typed([]() {});
KILN_REGISTER_GLOBAL("testing.add").set_body_typed([](int64_t a, int64_t b) { return a + b; });
KILN_REGISTER_GLOBAL("testing.echo").set_body_typed([](Any x) { return x; });
KILN_REGISTER_GLOBAL("testing.concat").set_body_typed([](const String& a, const String& b) {
  return String(a.str() + b.str());
});
KILN_REGISTER_GLOBAL("testing.string_len").set_body_typed([](const String& s) {
  return static_cast<int64_t>(s.size());
});

KILN_REGISTER_GLOBAL("testing.raise_error")
    .set_body_typed([](const String& kind, const String& message) {
      throw Error(kind.str(), message.str());
    });

// testing.call(f, args...): calls f with the remaining arguments.
KILN_REGISTER_GLOBAL("testing.call")
    .set_body_packed([](const AnyView* args, int32_t num_args, Any* result) {
      KILN_CHECK(num_args >= 1, TypeError) << "testing.call needs a function to call";
      *result = args[0].cast<Function>().CallPacked(args + 1, num_args - 1);
    });

KILN_REGISTER_GLOBAL("testing.call_with_context").set_body_typed([](const Function& f) {
  try {
    return f();
  } catch (const Error& error) {
    throw error.WithContext("while calling the callback from C++");
  }
});

KILN_REGISTER_GLOBAL("testing.make_counted").set_body_typed([]() {
  return ObjectRef(make_object<CountedObj>());
});
KILN_REGISTER_GLOBAL("testing.counted_objects").set_body_typed([]() {
  return live_counted_objects.load();
});

KILN_REGISTER_GLOBAL("testing.array_sum").set_body_typed([](const Array<int64_t>& values) {
  int64_t sum = 0;
  for (int64_t v : values) sum += v;
  return sum;
});
KILN_REGISTER_GLOBAL("testing.map_get")
    .set_body_typed([](const Map<String, Any>& map, const String& key) { return map.at(key); });
KILN_REGISTER_GLOBAL("testing.make_array").set_body_typed([](int64_t n) {
  Array<int64_t> values;
  for (int64_t i = 0; i < n; ++i) values.push_back(i);
  return values;
});
KILN_REGISTER_GLOBAL("testing.make_map").set_body_typed([]() {
  return Map<String, Any>{{"a", 1}, {"b", String("two")}};
});
KILN_REGISTER_GLOBAL("testing.make_shape")
    .set_body_packed([](const AnyView* args, int32_t num_args, Any* result) {
      std::vector<int64_t> dims;
      for (int32_t i = 0; i < num_args; ++i) dims.push_back(args[i].cast<int64_t>());
      *result = Shape(dims);
    });

}  // namespace
}  // namespace testing
}  // namespace kiln
