#include <kiln/ffi/any.h>
#include <gtest/gtest.h>

namespace kiln {
namespace {

int live_nodes = 0;

class NodeObj : public Object {
 public:
  static constexpr const char* _type_key = "test.Node";
  KILN_DECLARE_OBJECT_INFO(NodeObj, Object);
  NodeObj() { ++live_nodes; }
  ~NodeObj() { --live_nodes; }
  int value = 0;
};

class LeafObj : public NodeObj {
 public:
  static constexpr const char* _type_key = "test.Leaf";
  static constexpr bool _type_final = true;
  KILN_DECLARE_OBJECT_INFO(LeafObj, NodeObj);
};

class OtherObj : public Object {
 public:
  static constexpr const char* _type_key = "test.Other";
  KILN_DECLARE_OBJECT_INFO(OtherObj, Object);
};

class Node : public ObjectRef {
 public:
  KILN_DEFINE_OBJECT_REF_METHODS(Node, ObjectRef, NodeObj);
};

TEST(ObjectTest, ReferenceCountFreesAtZero) {
  {
    ObjectPtr<NodeObj> a = make_object<NodeObj>();
    EXPECT_EQ(live_nodes, 1);
    EXPECT_EQ(a->use_count(), 1u);
    {
      ObjectPtr<NodeObj> b = a;
      EXPECT_EQ(a->use_count(), 2u);
      ObjectPtr<NodeObj> c = std::move(b);
      EXPECT_EQ(a->use_count(), 2u);
      EXPECT_EQ(b, nullptr);
    }
    EXPECT_EQ(a->use_count(), 1u);
  }
  EXPECT_EQ(live_nodes, 0);
}

TEST(ObjectTest, CAbiReferenceCountingMatchesInline) {
  ObjectPtr<NodeObj> node = make_object<NodeObj>();
  KilnObject* header = detail::ObjectUnsafe::Header(node.get());
  kiln_object_inc_ref(header);
  EXPECT_EQ(node->use_count(), 2u);
  kiln_object_dec_ref(header);
  EXPECT_EQ(node->use_count(), 1u);
}

TEST(ObjectTest, RuntimeTypesFormAHierarchy) {
  ObjectPtr<Object> leaf = make_object<LeafObj>();
  ObjectPtr<Object> node = make_object<NodeObj>();
  EXPECT_GE(LeafObj::RuntimeTypeIndex(), kKilnTypeDynObjectBegin);
  EXPECT_NE(LeafObj::RuntimeTypeIndex(), NodeObj::RuntimeTypeIndex());
  EXPECT_TRUE(leaf->IsInstance<NodeObj>());
  EXPECT_TRUE(leaf->IsInstance<LeafObj>());
  EXPECT_TRUE(leaf->IsInstance<Object>());
  EXPECT_FALSE(node->IsInstance<LeafObj>());
  EXPECT_FALSE(leaf->IsInstance<OtherObj>());
  EXPECT_EQ(leaf->GetTypeKey(), "test.Leaf");
  EXPECT_EQ(LeafObj::TypeDepth(), 2);
}

TEST(ObjectTest, TypeRegistrationIsIdempotentAndRejectsAnotherParent) {
  int32_t index = -1;
  ASSERT_EQ(kiln_type_register("test.Node", kKilnTypeObject, &index), 0);
  EXPECT_EQ(index, NodeObj::RuntimeTypeIndex());
  EXPECT_EQ(kiln_type_register("test.Node", kKilnTypeString, &index), -1);
  Error error = detail::TakeRaised();
  EXPECT_EQ(error.kind(), "TypeError");
  EXPECT_NE(error.message().find("test.Node"), std::string::npos);
}

TEST(ObjectTest, UnknownTypeKeyAndIndexAreErrors) {
  int32_t index = -1;
  EXPECT_EQ(kiln_type_key_to_index("test.NoSuchType", &index), -1);
  EXPECT_EQ(detail::TakeRaised().kind(), "KeyError");
  const KilnTypeInfo* info = nullptr;
  EXPECT_EQ(kiln_type_get_info(60000, &info), -1);
  EXPECT_EQ(detail::TakeRaised().kind(), "KeyError");
}

TEST(ObjectTest, RefDowncastChecksType) {
  Any any(Node(make_object<LeafObj>()));
  EXPECT_TRUE(any.as<Node>().has_value());
  Any other(ObjectRef(make_object<OtherObj>()));
  EXPECT_FALSE(other.as<Node>().has_value());
  EXPECT_THROW(other.cast<Node>(), Error);
}

}  // namespace
}  // namespace kiln
