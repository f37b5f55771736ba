/// Little-endian byte streams for saved modules and artifacts: u32/u64 fields and
/// length-prefixed strings. Reading checks every length against what is left, so a truncated or
/// corrupt input is an error naming the field, never an out-of-bounds read or a huge allocation.
#ifndef KILN_RUNTIME_BYTE_STREAM_H_
#define KILN_RUNTIME_BYTE_STREAM_H_

#include <kiln/ffi/error.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

namespace kiln {
namespace runtime {

/// Appends fields to a byte string.
class ByteWriter {
 public:
  void U32(uint32_t value) { AppendLittleEndian(value, 4); }
  void U64(uint64_t value) { AppendLittleEndian(value, 8); }
  /// A u64 length, then the bytes.
  void Str(std::string_view text) {
    U64(text.size());
    out_.append(text.data(), text.size());
  }
  void Raw(std::string_view bytes) { out_.append(bytes.data(), bytes.size()); }
  void Zeros(size_t count) { out_.append(count, '\0'); }
  size_t size() const { return out_.size(); }
  const std::string& bytes() const { return out_; }
  std::string Take() && { return std::move(out_); }

 private:
  void AppendLittleEndian(uint64_t value, int num_bytes) {
    for (int i = 0; i < num_bytes; ++i)
      out_.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
  }
  std::string out_;
};

/// Reads fields back. `what` ("the saved OpenCL module") starts every error message.
class ByteReader {
 public:
  ByteReader(std::string_view data, std::string what) : data_(data), what_(std::move(what)) {}

  uint32_t U32(const char* field) { return static_cast<uint32_t>(ReadLittleEndian(4, field)); }
  uint64_t U64(const char* field) { return ReadLittleEndian(8, field); }
  std::string Str(const char* field) { return std::string(View(U64(field), field)); }
  /// The next `size` bytes, in place.
  std::string_view View(uint64_t size, const char* field) {
    KILN_CHECK(size <= remaining(), ValueError)
        << what_ << " is truncated or corrupt: " << field << " claims " << size
        << " bytes at offset " << pos_ << ", but only " << remaining() << " remain";
    std::string_view result = data_.substr(pos_, size);
    pos_ += size;
    return result;
  }
  /// Skips `count` bytes that must be zero (padding a writer put there for alignment).
  void Zeros(size_t count, const char* field) {
    for (char byte : View(count, field)) {
      KILN_CHECK(byte == '\0', ValueError) << what_ << " is corrupt: " << field << " is not zero";
    }
  }
  /// A u32 count of items that each take at least `min_item_size` bytes: bounded by what is
  /// left, so a corrupt count cannot make the caller reserve gigabytes.
  uint32_t Count(size_t min_item_size, const char* field) {
    const uint32_t count = U32(field);
    KILN_CHECK(count <= remaining() / min_item_size, ValueError)
        << what_ << " is corrupt: " << field << " is " << count << " but only " << remaining()
        << " bytes remain";
    return count;
  }
  /// Fails when bytes are left over: they mean the input is not what its version says.
  void ExpectEnd() const {
    KILN_CHECK(pos_ == data_.size(), ValueError)
        << what_ << " is corrupt: " << remaining() << " unexpected bytes after offset " << pos_;
  }
  size_t remaining() const { return data_.size() - pos_; }
  size_t position() const { return pos_; }

 private:
  uint64_t ReadLittleEndian(int num_bytes, const char* field) {
    KILN_CHECK(remaining() >= static_cast<size_t>(num_bytes), ValueError)
        << what_ << " is truncated: " << field << " needs " << num_bytes << " bytes at offset "
        << pos_ << ", but only " << remaining() << " remain";
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

}  // namespace runtime
}  // namespace kiln

#endif  // KILN_RUNTIME_BYTE_STREAM_H_
