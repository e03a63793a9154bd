// .npz archives through libzip (stored and deflated members alike); each
// member is parsed by the frontend's .npy reader.
#include "graft/training/npz.h"

#include <zip.h>

#include <memory>

#include "graft/core/error.h"
#include "graft/frontend/npy.h"

namespace graft::training {

namespace {

constexpr zip_uint64_t kMaxMemberBytes = zip_uint64_t{1} << 34;

struct ArchiveCloser {
  void operator()(zip_t* archive) const { zip_discard(archive); }
};
struct MemberCloser {
  void operator()(zip_file_t* file) const { zip_fclose(file); }
};

}  // namespace

std::map<std::string, Tensor> load_npz(const std::string& path) {
  int error_code = 0;
  std::unique_ptr<zip_t, ArchiveCloser> archive(zip_open(path.c_str(), ZIP_RDONLY, &error_code));
  if (!archive) {
    zip_error_t error;
    zip_error_init_with_code(&error, error_code);
    std::string message = zip_error_strerror(&error);
    zip_error_fini(&error);
    if (error_code == ZIP_ER_NOENT || error_code == ZIP_ER_OPEN || error_code == ZIP_ER_READ)
      fail(ErrorKind::io, path, ": cannot read the file (", message, ")");
    fail(ErrorKind::invalid_argument, path, ": not an .npz archive (", message, ")");
  }
  std::map<std::string, Tensor> arrays;
  zip_int64_t count = zip_get_num_entries(archive.get(), 0);
  for (zip_int64_t i = 0; i < count; ++i) {
    zip_stat_t stat;
    zip_stat_init(&stat);
    if (zip_stat_index(archive.get(), static_cast<zip_uint64_t>(i), 0, &stat) != 0 || !(stat.valid & ZIP_STAT_NAME) ||
        !(stat.valid & ZIP_STAT_SIZE))
      fail(ErrorKind::invalid_argument, path, ": member ", i, " of the archive cannot be read (",
           zip_strerror(archive.get()), ")");
    std::string member = stat.name;
    if (member.size() < 5 || member.compare(member.size() - 4, 4, ".npy") != 0)
      fail(ErrorKind::invalid_argument, path, ": member '", member, "' is not an .npy file");
    if (stat.size > kMaxMemberBytes)
      fail(ErrorKind::invalid_argument, path, ": member '", member, "' holds ", stat.size, " bytes (at most ",
           kMaxMemberBytes, ")");
    std::string name = member.substr(0, member.size() - 4);
    if (arrays.count(name)) fail(ErrorKind::invalid_argument, path, ": array '", name, "' appears twice");
    std::unique_ptr<zip_file_t, MemberCloser> file(zip_fopen_index(archive.get(), static_cast<zip_uint64_t>(i), 0));
    if (!file)
      fail(ErrorKind::invalid_argument, path, ": member '", member, "' cannot be opened (", zip_strerror(archive.get()),
           ")");
    std::string bytes(static_cast<size_t>(stat.size), '\0');
    zip_int64_t read = bytes.empty() ? 0 : zip_fread(file.get(), bytes.data(), stat.size);
    if (read < 0 || static_cast<zip_uint64_t>(read) != stat.size)
      fail(ErrorKind::invalid_argument, path, ": member '", member, "' is truncated or corrupt (",
           zip_file_strerror(file.get()), ")");
    arrays.emplace(name, frontend::parse_npy(bytes, path + ": " + member));
  }
  return arrays;
}

}  // namespace graft::training
