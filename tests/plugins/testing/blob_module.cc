// A serializable module kind for the artifact tests ("testing_blob"): it holds one string and
// has one function, get(), returning it. Its loader lives in this plugin, so an artifact that
// contains it cannot be loaded where libkiln_testing.so is missing.
#include <kiln/ffi/registry.h>
#include <kiln/runtime/module.h>

namespace kiln {
namespace testing {
namespace {

class BlobModuleObj : public runtime::ModuleObj {
 public:
  explicit BlobModuleObj(std::string text) : text_(std::move(text)) {}
  std::string kind() const override { return "testing_blob"; }
  std::optional<Function> GetFunction(const std::string& name) override {
    if (name != "get") return std::nullopt;
    return Function::FromTyped([text = text_]() { return String(text); }, "testing_blob.get");
  }
  std::vector<std::string> ListFunctions() const override { return {"get"}; }
  std::optional<Bytes> SaveToBytes() const override { return Bytes(text_); }
  std::string runtime_library() const override { return "libkiln_testing.so"; }

 private:
  std::string text_;
};

runtime::Module MakeBlobModule(const std::string& text) {
  return runtime::Module(make_object<BlobModuleObj>(text));
}

KILN_REGISTER_GLOBAL("testing.BlobModuleCreate").set_body_typed([](const String& text) {
  return MakeBlobModule(text.str());
});
KILN_REGISTER_GLOBAL("runtime.module.load_bytes.testing_blob").set_body_typed([](const Bytes& b) {
  return MakeBlobModule(std::string(b.view()));
});

}  // namespace
}  // namespace testing
}  // namespace kiln
