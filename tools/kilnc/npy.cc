#include "npy.h"

#include <kiln/runtime/memory.h>

#include <fstream>
#include <iterator>
#include <regex>
#include <sstream>
#include <utility>
#include <vector>

namespace kilnc {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicSize = 6;

/// numpy's dtype string ("<f4") for each dtype kilnc reads and writes (Kiln's bool is uint1).
const std::vector<std::pair<std::string, DLDataType>>& DTypes() {
  static const std::vector<std::pair<std::string, DLDataType>> dtypes = {
      {"<f4", {kDLFloat, 32, 1}}, {"<f8", {kDLFloat, 64, 1}}, {"<f2", {kDLFloat, 16, 1}},
      {"<i8", {kDLInt, 64, 1}},   {"<i4", {kDLInt, 32, 1}},   {"<i2", {kDLInt, 16, 1}},
      {"|i1", {kDLInt, 8, 1}},    {"|u1", {kDLUInt, 8, 1}},   {"|b1", {kDLUInt, 1, 1}}};
  return dtypes;
}

std::vector<int64_t> ParseShapeTuple(const std::string& text, const std::string& path) {
  std::vector<int64_t> shape;
  std::stringstream items(text);
  for (std::string item; std::getline(items, item, ',');) {
    if (item.find_first_not_of(' ') == std::string::npos) continue;  // "(3,)"
    try {
      shape.push_back(std::stoll(item));
    } catch (const std::exception&) {
      KILN_THROW(ValueError) << "'" << path << "': bad shape '(" << text << ")' in the header";
    }
  }
  return shape;
}

}  // namespace

kiln::Tensor ReadNpy(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  KILN_CHECK(in, ValueError) << "cannot open '" << path << "'";
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  KILN_CHECK(bytes.size() >= 10 && bytes.compare(0, kMagicSize, kMagic, kMagicSize) == 0,
             ValueError)
      << "'" << path << "' is not a .npy file";
  const int major = static_cast<unsigned char>(bytes[6]);
  const size_t size_bytes = major == 1 ? 2 : 4;
  KILN_CHECK(bytes.size() >= 8 + size_bytes, ValueError) << "'" << path << "' is truncated";
  size_t header_size = 0;
  for (size_t i = 0; i < size_bytes; ++i) {
    header_size |= static_cast<size_t>(static_cast<unsigned char>(bytes[8 + i])) << (8 * i);
  }
  const size_t data_start = 8 + size_bytes + header_size;
  KILN_CHECK(data_start <= bytes.size(), ValueError) << "'" << path << "' is truncated";
  const std::string header = bytes.substr(8 + size_bytes, header_size);

  std::smatch descr;
  std::smatch order;
  std::smatch shape;
  const bool parsed =
      std::regex_search(header, descr, std::regex("'descr':\\s*'([^']*)'")) &&
      std::regex_search(header, order, std::regex("'fortran_order':\\s*(True|False)")) &&
      std::regex_search(header, shape, std::regex("'shape':\\s*\\(([^)]*)\\)"));
  KILN_CHECK(parsed, ValueError) << "'" << path << "' has a header kilnc cannot read: " << header;
  KILN_CHECK(order[1] == "False", ValueError)
      << "'" << path << "' is in Fortran order; save it with np.ascontiguousarray";
  const DLDataType* dtype = nullptr;
  std::string known;
  for (const auto& [name, type] : DTypes()) {
    if (descr[1] == name) dtype = &type;
    known += (known.empty() ? "" : ", ") + name;
  }
  KILN_CHECK(dtype != nullptr, ValueError)
      << "'" << path << "' holds dtype '" << descr[1] << "', which kilnc does not read (it reads "
      << known << ")";
  kiln::Tensor tensor =
      kiln::runtime::Empty(ParseShapeTuple(shape[1], path), *dtype, DLDevice{kDLCPU, 0});
  const auto data_bytes = static_cast<size_t>(kiln::CompactBytes(tensor.dl_tensor()));
  KILN_CHECK(bytes.size() - data_start == data_bytes, ValueError)
      << "'" << path << "' should hold " << data_bytes << " bytes of data, it holds "
      << bytes.size() - data_start;
  std::copy(bytes.begin() + static_cast<std::ptrdiff_t>(data_start), bytes.end(),
            static_cast<char*>(tensor.data()));
  return tensor;
}

void WriteNpy(const std::string& path, const kiln::Tensor& tensor) {
  std::string descr;
  for (const auto& [name, type] : DTypes()) {
    if (kiln::DataTypeEqual(type, tensor.dtype())) descr = name;
  }
  KILN_CHECK(!descr.empty(), ValueError)
      << "cannot write dtype " << kiln::DataTypeToString(tensor.dtype()) << " as .npy";
  std::string shape;
  for (int64_t extent : tensor.shape()) shape += std::to_string(extent) + ", ";
  if (tensor.shape().size() > 1) shape.resize(shape.size() - 1);  // "(3,)" keeps its comma
  std::string header =
      "{'descr': '" + descr + "', 'fortran_order': False, 'shape': (" + shape + "), }";
  // Data starts at a multiple of 64 bytes; the header ends with '\n'.
  const size_t total = kMagicSize + 4 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::ofstream out(path, std::ios::binary);
  KILN_CHECK(out, ValueError) << "cannot write '" << path << "'";
  out.write(kMagic, kMagicSize);
  out.put('\x01');
  out.put('\x00');
  out.put(static_cast<char>(header.size() & 0xFF));
  out.put(static_cast<char>((header.size() >> 8) & 0xFF));
  out << header;
  out.write(static_cast<const char*>(tensor.data()),
            static_cast<std::streamsize>(kiln::CompactBytes(tensor.dl_tensor())));
  KILN_CHECK(out.good(), ValueError) << "writing '" << path << "' failed";
}

}  // namespace kilnc
