#include <kiln/transform/pass_context.h>
#include <gtest/gtest.h>

namespace kiln {
namespace transform {
namespace {

KILN_REGISTER_PASS_CONFIG("test.transform.max_size", int64_t, 1 << 20);
KILN_REGISTER_PASS_CONFIG("test.transform.mode", String, "fast");

TEST(PassConfigTest, UnsetKeyReadsItsRegisteredDefault) {
  const PassContext ctx = PassContext::Create();
  EXPECT_EQ(ctx.GetConfig<int64_t>("test.transform.max_size"), 1 << 20);
  EXPECT_EQ(ctx.GetConfig<String>("test.transform.mode"), "fast");
}

TEST(PassConfigTest, SetValueIsReadBackAndTheCopyIsUnchanged) {
  const PassContext original = PassContext::Create();
  PassContext ctx = original;
  ctx.SetConfig("test.transform.max_size", int64_t{4096});
  EXPECT_EQ(ctx.GetConfig<int64_t>("test.transform.max_size"), 4096);
  EXPECT_EQ(original.GetConfig<int64_t>("test.transform.max_size"), 1 << 20);
}

TEST(PassConfigTest, WrongTypeIsATypeErrorNamingTheExpectedType) {
  PassContext ctx = PassContext::Create();
  try {
    ctx.SetConfig("test.transform.max_size", String("big"));
    FAIL() << "expected a TypeError";
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), "TypeError");
    EXPECT_NE(error.message().find("test.transform.max_size"), std::string::npos);
    EXPECT_NE(error.message().find("int"), std::string::npos) << error.message();
  }
}

TEST(PassConfigTest, UnknownKeyIsAKeyErrorSuggestingCloseKeys) {
  PassContext ctx = PassContext::Create();
  try {
    ctx.SetConfig("test.transform.max_sise", int64_t{1});
    FAIL() << "expected a KeyError";
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), "KeyError");
    EXPECT_NE(error.message().find("did you mean 'test.transform.max_size'"), std::string::npos)
        << error.message();
  }
  EXPECT_THROW(ctx.GetConfig<int64_t>("test.transform.nope"), Error);
}

TEST(PassConfigTest, DuplicateRegistrationIsAKeyError) {
  EXPECT_THROW(detail::RegisterPassConfig("test.transform.mode", "str", Any(String("x")),
                                          [](const Any& /*value*/) { return true; }),
               Error);
}

TEST(PassContextTest, FromMapSetsReservedFieldsAndValidatesConfig) {
  Map<String, Any> settings;
  settings.Set("opt_level", int64_t{3});
  settings.Set("disabled_passes", Array<String>{"transform.A"});
  settings.Set("required_passes", Array<String>{"B"});
  settings.Set("dump_on_error_dir", String("/tmp/x"));
  settings.Set("test.transform.mode", String("slow"));
  const PassContext ctx = PassContext::FromMap(settings);
  EXPECT_EQ(ctx->opt_level, 3);
  EXPECT_EQ(ctx->dump_on_error_dir, "/tmp/x");
  EXPECT_EQ(ctx.GetConfig<String>("test.transform.mode"), "slow");
  EXPECT_FALSE(ctx.PassEnabled(PassInfo{"transform.A", 0, false}));
  EXPECT_TRUE(ctx.PassEnabled(PassInfo{"transform.B", 9, false}));
  EXPECT_TRUE(ctx.PassEnabled(PassInfo{"transform.C", 3, false}));
  EXPECT_FALSE(ctx.PassEnabled(PassInfo{"transform.D", 4, false}));

  Map<String, Any> bad;
  bad.Set("test.transform.max_size", String("big"));
  EXPECT_THROW(PassContext::FromMap(bad), Error);
}

TEST(PassContextTest, ANameWithoutArgumentsDisablesThePassWithAny) {
  Map<String, Any> settings;
  settings.Set("disabled_passes", Array<String>{"AnnotateTarget", "transform.X(a)"});
  const PassContext ctx = PassContext::FromMap(settings);
  EXPECT_FALSE(ctx.PassEnabled(PassInfo{"transform.AnnotateTarget(dnnl, blas)", 0, false}));
  EXPECT_FALSE(ctx.PassEnabled(PassInfo{"transform.X(a)", 0, false}));
  EXPECT_TRUE(ctx.PassEnabled(PassInfo{"transform.X(b)", 0, false}));
  EXPECT_TRUE(ctx.PassEnabled(PassInfo{"transform.AnnotateTargetX", 0, false}));
}

}  // namespace
}  // namespace transform
}  // namespace kiln
