#include <kiln/ffi/tensor.h>
#include <gtest/gtest.h>

#include <vector>

namespace kiln {
namespace {

/// A DLPack producer standing in for numpy: owns a buffer and counts deleter calls.
struct Producer {
  std::vector<float> buffer = std::vector<float>(6, 1.0f);
  std::vector<int64_t> shape = {2, 3};
  int deleted = 0;
  DLManagedTensor managed{};

  DLManagedTensor* Export() {
    managed.dl_tensor.data = buffer.data();
    managed.dl_tensor.device = {kDLCPU, 0};
    managed.dl_tensor.ndim = 2;
    managed.dl_tensor.dtype = {kDLFloat, 32, 1};
    managed.dl_tensor.shape = shape.data();
    managed.manager_ctx = this;
    managed.deleter = [](DLManagedTensor* self) {
      ++static_cast<Producer*>(self->manager_ctx)->deleted;
    };
    return &managed;
  }
};

TEST(TensorTest, ImportSharesMemoryAndCallsTheProducersDeleterOnce) {
  Producer producer;
  {
    Tensor tensor = Tensor::FromDLPack(producer.Export());
    EXPECT_EQ(tensor.data(), producer.buffer.data());
    EXPECT_EQ(tensor.shape(), Shape({2, 3}));
    EXPECT_EQ(DataTypeToString(tensor.dtype()), "float32");
    EXPECT_EQ(tensor.NumBytes(), 24);
    static_cast<float*>(tensor.data())[4] = 7.0f;  // written through Kiln...
    EXPECT_EQ(producer.buffer[4], 7.0f);           // ...seen by the producer
    EXPECT_EQ(producer.deleted, 0);
  }
  EXPECT_EQ(producer.deleted, 1);
}

TEST(TensorTest, ExportKeepsTheTensorAliveUntilTheConsumerDeletes) {
  Producer producer;
  DLManagedTensor* exported = nullptr;
  {
    Tensor tensor = Tensor::FromDLPack(producer.Export());
    exported = tensor.ToDLPack();
    EXPECT_EQ(tensor.use_count(), 2u);
  }
  EXPECT_EQ(producer.deleted, 0);  // the consumer still holds it
  EXPECT_EQ(exported->dl_tensor.data, producer.buffer.data());
  EXPECT_EQ(exported->dl_tensor.shape[1], 3);
  exported->deleter(exported);
  EXPECT_EQ(producer.deleted, 1);
}

TEST(TensorTest, MalformedDescriptorIsRejectedAndOwnershipStaysWithTheCaller) {
  Producer producer;
  DLManagedTensor* managed = producer.Export();
  managed->dl_tensor.shape = nullptr;
  try {
    Tensor::FromDLPack(managed);
    FAIL() << "expected a ValueError";
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), "ValueError");
    EXPECT_NE(error.message().find("has no shape"), std::string::npos) << error.message();
  }
  EXPECT_EQ(producer.deleted, 0);
}

TEST(TensorTest, StridesDecideContiguity) {
  std::vector<float> data(6);
  Tensor compact = Tensor::FromMemory(data.data(), {2, 3}, {kDLFloat, 32, 1}, {kDLCPU, 0}, {});
  EXPECT_TRUE(compact.IsContiguous());
  Tensor transposed = Tensor::FromMemory(data.data(), {3, 2}, {kDLFloat, 32, 1}, {kDLCPU, 0}, {},
                                         /*strides=*/{1, 3});
  EXPECT_FALSE(transposed.IsContiguous());
  EXPECT_THROW(Tensor::FromMemory(data.data(), {2, 3}, {kDLFloat, 32, 1}, {kDLCPU, 0}, {}, {1}),
               Error);
}

TEST(TensorTest, PassesAsDLTensorPointerToKernels) {
  std::vector<float> data(4, 2.0f);
  Tensor tensor = Tensor::FromMemory(data.data(), {4}, {kDLFloat, 32, 1}, {kDLCPU, 0}, {});
  Any any(tensor);
  DLTensor* view = any.cast<DLTensor*>();
  EXPECT_EQ(view->data, data.data());
  EXPECT_EQ(view->shape[0], 4);
}

}  // namespace
}  // namespace kiln
