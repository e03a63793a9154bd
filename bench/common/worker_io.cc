#include "worker_io.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <vector>

#include "graft/core/error.h"

namespace graft::bench {

using nlohmann::json;

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

long peak_rss_kb() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("VmHWM:", 0) == 0) return std::stol(line.substr(6));
  return -1;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(ErrorKind::io, "cannot read '", path, "'");
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

WorkerPaths parse_worker_arguments(int argc, char** argv, const std::string& usage, const FlagHandlers& flags) {
  if (argc < 4) fail(ErrorKind::invalid_argument, usage);
  for (int i = 4; i < argc; i += 2) {
    const std::string flag = argv[i];
    auto handler = flags.find(flag);
    if (handler == flags.end()) fail(ErrorKind::invalid_argument, "unknown flag '", flag, "'");
    if (i + 1 >= argc) fail(ErrorKind::invalid_argument, "flag '", flag, "' needs a value");
    handler->second(argv[i + 1]);
  }
  return {argv[1], argv[2], argv[3]};
}

namespace {

// A manifest's file entry: a relative one names a file beside the manifest.
std::string resolve(const std::string& manifest_path, const std::string& file) {
  std::filesystem::path path(file);
  if (path.is_absolute()) return file;
  return (std::filesystem::path(manifest_path).parent_path() / path.filename()).string();
}

Tensor read_input(const json& entry, const std::string& manifest_path) {
  Tensor t(dtype_from_name(entry.at("dtype").get<std::string>()), entry.at("shape").get<std::vector<int64_t>>());
  std::string bytes = read_file(resolve(manifest_path, entry.at("file").get<std::string>()));
  if (bytes.size() != t.nbytes())
    fail(ErrorKind::invalid_argument, "input '", entry.at("name").get<std::string>(), "': file has ", bytes.size(),
         " bytes, expected ", t.nbytes());
  std::copy(bytes.begin(), bytes.end(), static_cast<char*>(t.raw_data()));
  return t;
}

}  // namespace

std::map<std::string, Tensor> read_manifest_inputs(const std::string& manifest_path) {
  std::map<std::string, Tensor> inputs;
  for (const json& entry : json::parse(read_file(manifest_path)))
    inputs[entry.at("name").get<std::string>()] = read_input(entry, manifest_path);
  return inputs;
}

json write_output(const std::string& output_dir, size_t index, const std::string& name, const Tensor& value) {
  const std::string file = output_dir + "/" + std::to_string(index) + ".bin";
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  out.write(static_cast<const char*>(value.raw_data()), static_cast<std::streamsize>(value.nbytes()));
  if (!out) fail(ErrorKind::io, "cannot write '", file, "'");
  return {{"name", name}, {"dtype", std::string(dtype_name(value.dtype()))}, {"shape", value.shape()}, {"file", file}};
}

void send(const json& line) { std::cout << line.dump() << std::endl; }

void serve_timed_runs(const std::function<void()>& run_once) {
  for (std::string line; std::getline(std::cin, line);) {
    if (line == "quit") break;
    if (line.rfind("run ", 0) != 0) fail(ErrorKind::invalid_argument, "unknown request '", line, "'");
    const int count = std::stoi(line.substr(4));
    std::vector<double> times;
    for (int r = 0; r < count; ++r) {
      const auto begin = Clock::now();
      run_once();
      times.push_back(ms_since(begin));
    }
    send({{"times_ms", times}});
  }
}

int run_worker(const std::function<int()>& serve) {
  try {
    return serve();
  } catch (const std::exception& e) {
    send({{"error", e.what()}});
    return 1;
  }
}

}  // namespace graft::bench
