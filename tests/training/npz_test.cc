// load_npz: archives written with libzip as np.savez (stored members) and
// np.savez_compressed (deflated) write them, and the errors of bad ones.
#include "graft/training/npz.h"

#include <gtest/gtest.h>
#include <unistd.h>
#include <zip.h>

#include <filesystem>
#include <fstream>
#include <list>

#include "graft/core/error.h"

namespace graft {
namespace {

namespace fs = std::filesystem;

/// An .npy file (version 1.0) of float32 values with the given shape text.
std::string npy_bytes(const std::vector<float>& values, const std::string& shape) {
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': " + shape + ", }";
  header.append(64 - (10 + header.size() + 1) % 64, ' ');
  header += '\n';
  std::string bytes = "\x93NUMPY\x01";
  bytes += '\0';
  bytes += static_cast<char>(header.size() & 0xff);
  bytes += static_cast<char>(header.size() >> 8);
  bytes += header;
  bytes.append(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float));
  return bytes;
}

class NpzTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("graft_npz_test_" + std::to_string(getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  /// Writes an archive of (member name, bytes), stored or deflated.
  std::string write_zip(const std::vector<std::pair<std::string, std::string>>& members, bool deflate) {
    std::string path = (dir_ / "data.npz").string();
    fs::remove(path);
    int error = 0;
    zip_t* archive = zip_open(path.c_str(), ZIP_CREATE | ZIP_TRUNCATE, &error);
    EXPECT_NE(archive, nullptr);
    for (const auto& [name, bytes] : members) {
      kept_.push_back(bytes);
      zip_source_t* source = zip_source_buffer(archive, kept_.back().data(), kept_.back().size(), 0);
      zip_int64_t index = zip_file_add(archive, name.c_str(), source, ZIP_FL_OVERWRITE);
      EXPECT_GE(index, 0);
      zip_set_file_compression(archive, static_cast<zip_uint64_t>(index), deflate ? ZIP_CM_DEFLATE : ZIP_CM_STORE, 0);
    }
    EXPECT_EQ(zip_close(archive), 0);
    kept_.clear();
    return path;
  }

  void expect_error(const std::string& path, ErrorKind kind, const std::string& text) {
    try {
      training::load_npz(path);
      ADD_FAILURE() << "no error for " << path;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), kind) << e.what();
      EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
    }
  }

  fs::path dir_;
  std::list<std::string> kept_;
};

TEST_F(NpzTest, ReadsStoredAndDeflatedMembers) {
  for (bool deflate : {false, true}) {
    std::string path = write_zip(
        {{"data.npy", npy_bytes({1, 2, 3, 4, 5, 6}, "(3, 2)")}, {"target.npy", npy_bytes({7, 8, 9}, "(3,)")}}, deflate);
    auto arrays = training::load_npz(path);
    ASSERT_EQ(arrays.size(), 2u);
    EXPECT_EQ(arrays.at("data").shape(), (Shape{3, 2}));
    EXPECT_EQ(arrays.at("data").data<float>()[5], 6.0f);
    EXPECT_EQ(arrays.at("target").shape(), (Shape{3}));
    EXPECT_EQ(arrays.at("target").data<float>()[0], 7.0f);
  }
}

TEST_F(NpzTest, BadArchivesAreErrorsNamingTheFileAndMember) {
  expect_error((dir_ / "missing.npz").string(), ErrorKind::io, "missing.npz");
  std::string not_zip = (dir_ / "not.npz").string();
  std::ofstream(not_zip) << "this is not a zip archive at all";
  expect_error(not_zip, ErrorKind::invalid_argument, "not an .npz archive");
  expect_error(write_zip({{"notes.txt", "hello"}}, false), ErrorKind::invalid_argument,
               "member 'notes.txt' is not an .npy file");
  std::string lying = npy_bytes({1, 2}, "(3,)");
  expect_error(write_zip({{"x.npy", lying}}, true), ErrorKind::invalid_argument, "x.npy");
  expect_error(write_zip({{"x.npy", "garbage"}}, false), ErrorKind::invalid_argument, "x.npy: not an .npy file");
}

}  // namespace
}  // namespace graft
