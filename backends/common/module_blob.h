/// The byte layout that device modules (OpenCL source, CUDA images) are saved in, shared by the
/// backends: a little-endian stream of u32 and length-prefixed strings. Each module writes its
/// format version first, so a loader can refuse a newer format by name before it reads anything
/// else. Reading checks every length against what is left, so a truncated or corrupt blob is an
/// error naming the field, never an out-of-bounds read.
#ifndef KILN_BACKENDS_COMMON_MODULE_BLOB_H_
#define KILN_BACKENDS_COMMON_MODULE_BLOB_H_

#include <kiln/ffi/error.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace kiln {
namespace backend {

/// Appends fields to a byte string.
class BlobWriter {
 public:
  void U32(uint32_t value) { AppendLittleEndian(value, 4); }
  void Str(std::string_view text) {
    AppendLittleEndian(text.size(), 8);
    out_.append(text.data(), text.size());
  }
  const std::string& bytes() const { return out_; }

 private:
  void AppendLittleEndian(uint64_t value, int num_bytes) {
    for (int i = 0; i < num_bytes; ++i)
      out_.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
  }
  std::string out_;
};

/// Reads fields back; `what` ("OpenCL module") starts every error message.
class BlobReader {
 public:
  BlobReader(std::string_view data, std::string what) : data_(data), what_(std::move(what)) {}

  uint32_t U32(const char* field) { return static_cast<uint32_t>(ReadLittleEndian(4, field)); }
  std::string Str(const char* field) {
    const uint64_t size = ReadLittleEndian(8, field);
    KILN_CHECK(size <= data_.size() - pos_, ValueError)
        << what_ << " is truncated or corrupt: " << field << " claims " << size
        << " bytes at offset " << pos_ << ", but only " << data_.size() - pos_ << " remain";
    std::string result(data_.substr(pos_, size));
    pos_ += size;
    return result;
  }
  /// Fails when bytes are left over: they mean the blob is not what its version says.
  void ExpectEnd() const {
    KILN_CHECK(pos_ == data_.size(), ValueError) << what_ << " is corrupt: " << data_.size() - pos_
                                                 << " unexpected bytes after offset " << pos_;
  }

 private:
  uint64_t ReadLittleEndian(int num_bytes, const char* field) {
    KILN_CHECK(data_.size() - pos_ >= static_cast<size_t>(num_bytes), ValueError)
        << what_ << " is truncated: " << field << " needs " << num_bytes << " bytes at offset "
        << pos_ << ", but only " << data_.size() - pos_ << " remain";
    uint64_t value = 0;
    for (int i = 0; i < num_bytes; ++i) {
      value |= static_cast<uint64_t>(static_cast<unsigned char>(data_[pos_ + i])) << (8 * i);
    }
    pos_ += num_bytes;
    return value;
  }
  std::string_view data_;
  std::string what_;
  size_t pos_ = 0;
};

}  // namespace backend
}  // namespace kiln

#endif  // KILN_BACKENDS_COMMON_MODULE_BLOB_H_
