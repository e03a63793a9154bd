// graft onnx-test DIR...: runs ONNX backend test cases (a folder holding
// model.onnx and test_data_set_*/{input,output}_N.pb) and compares graft's
// outputs with the expected ones.
//
// Isolation: every case runs in a child process (fork). The child loads the
// model into a Session, runs each data set, compares, writes one result line
// ("STATUS<TAB>message", at most kMaxMessage bytes, so it fits the pipe buffer
// and the child never blocks) to a pipe and _exits. The parent keeps up to
// --jobs children running, reaps them with waitpid(WNOHANG), kills those that
// run past --timeout (SIGKILL) and reads the pipe of each finished child. A
// child killed by a signal is a CRASH, one killed for time a TIMEOUT, so one
// bad kernel cannot hide the results of the other cases. Results are printed
// in case order (sorted paths), whatever order the children finish in.
//
// The parent never runs a kernel or starts a thread before forking, so each
// child starts with a clean OpenMP runtime.
//
// Comparison: dtype and shape must match; floats pass when
// |got - expected| <= atol + rtol * |expected| (NaN equals NaN, infinities
// must be equal); integers and bools must be equal. As in ONNX's own runner,
// a uint16 test tensor where the model has bfloat16 holds bfloat16 bits.
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <optional>
#include <regex>
#include <thread>

#include "cli_support.h"
#include "command.h"
#include "graft/frontend/load_model.h"
#include "graft/core/error.h"
#include "graft/frontend/onnx_tensor.h"
#include "graft/runtime/session.h"

namespace graft::cli {

namespace {

namespace fs = std::filesystem;

constexpr size_t kMaxMessage = 4000;
/// Exit code when no DIR exists and --skip-missing is set (CTest's SKIP_RETURN_CODE).
constexpr int kSkipExitCode = 77;

struct OnnxTestOptions {
  std::vector<std::string> dirs;
  int64_t min_pass = -1;
  int jobs = 2;
  double timeout_seconds = 60;
  int threads = 1;
  double rtol = 1e-3;
  double atol = 1e-5;
  std::string filter;
  bool verbose = false;
  bool skip_missing = false;
};

enum class Outcome { pass, fail, unsupported, error, crash, timeout };

const char* outcome_name(Outcome o) {
  switch (o) {
    case Outcome::pass:
      return "PASS";
    case Outcome::fail:
      return "FAIL";
    case Outcome::unsupported:
      return "UNSUPPORTED";
    case Outcome::error:
      return "ERROR";
    case Outcome::crash:
      return "CRASH";
    case Outcome::timeout:
      return "TIMEOUT";
  }
  return "?";
}

struct TestCase {
  fs::path dir;
  std::string name;
  size_t group;  // index of the DIR argument it came from
};

struct CaseResult {
  Outcome outcome = Outcome::error;
  std::string message;
  double seconds = 0;
};

// ---- discovery -------------------------------------------------------------

void collect_cases(const fs::path& dir, const fs::path& root, size_t group, int depth, std::vector<TestCase>& cases) {
  std::error_code error;
  if (fs::is_regular_file(dir / "model.onnx", error)) {
    std::string name = dir == root ? dir.filename().string() : fs::relative(dir, root, error).string();
    if (name.empty()) name = dir.string();
    cases.push_back({dir, name, group});
    return;
  }
  if (depth >= 4) return;
  std::vector<fs::path> children;
  for (const auto& entry : fs::directory_iterator(dir, error))
    if (entry.is_directory(error)) children.push_back(entry.path());
  std::sort(children.begin(), children.end());
  for (const auto& child : children) collect_cases(child, root, group, depth + 1, cases);
}

/// Files "<prefix><N>.pb" in `dir`, ordered by N.
std::vector<fs::path> numbered_files(const fs::path& dir, const std::string& prefix) {
  std::vector<std::pair<long, fs::path>> found;
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(dir, error)) {
    std::string name = entry.path().filename().string();
    if (name.size() <= prefix.size() + 3 || name.compare(0, prefix.size(), prefix) != 0 || !name.ends_with(".pb"))
      continue;
    std::string digits = name.substr(prefix.size(), name.size() - prefix.size() - 3);
    if (digits.empty() || digits.size() > 6 || digits.find_first_not_of("0123456789") != std::string::npos) continue;
    found.emplace_back(std::stol(digits), entry.path());
  }
  std::sort(found.begin(), found.end());
  std::vector<fs::path> paths;
  for (auto& [index, path] : found) paths.push_back(path);
  return paths;
}

// ---- comparison ------------------------------------------------------------

std::string index_string(const Shape& shape, int64_t flat) {
  std::vector<int64_t> index(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    if (shape[d] > 0) {
      index[d] = flat % shape[d];
      flat /= shape[d];
    }
  }
  return shape_to_string(index);
}

std::string number(double v) {
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), "%.9g", v);
  return buffer;
}

/// Empty when `got` matches `expected`, else what differs. Sequences match
/// item by item (an empty expected sequence, whose file names no dtype,
/// matches any empty sequence).
std::string compare_tensors(const Tensor& got, const Tensor& expected, double rtol, double atol) {
  if (got.is_none() || expected.is_none())
    return got.is_none() == expected.is_none()
               ? std::string()
               : detail::concat(got.type_string(), ", expected ", expected.type_string());
  if (got.is_sequence() != expected.is_sequence())
    return detail::concat(got.type_string(), ", expected ", expected.type_string());
  if (got.is_sequence()) {
    const auto& a = got.sequence_items();
    const auto& b = expected.sequence_items();
    if (a.size() != b.size()) return detail::concat(a.size(), " items, expected ", b.size());
    for (size_t i = 0; i < a.size(); ++i) {
      std::string difference = compare_tensors(a[i], b[i], rtol, atol);
      if (!difference.empty()) return detail::concat("item ", i, ": ", difference);
    }
    return {};
  }
  if (got.dtype() != expected.dtype())
    return detail::concat("dtype ", dtype_name(got.dtype()), ", expected ", dtype_name(expected.dtype()));
  if (got.shape() != expected.shape())
    return detail::concat("shape ", shape_to_string(got.shape()), ", expected ", shape_to_string(expected.shape()));
  int64_t mismatches = 0, worst_index = -1;
  double worst_excess = 0;
  bool is_float = dtype_is_float(got.dtype());
  for (int64_t i = 0; i < got.numel(); ++i) {
    double excess = 0;
    if (is_float) {
      double a = got.value_as_double(i), b = expected.value_as_double(i);
      if (std::isnan(a) || std::isnan(b)) {
        excess = std::isnan(a) && std::isnan(b) ? 0 : INFINITY;
      } else if (std::isinf(a) || std::isinf(b)) {
        excess = a == b ? 0 : INFINITY;
      } else {
        excess = std::fabs(a - b) - (atol + rtol * std::fabs(b));
      }
    } else {
      int64_t a = got.value_as_int64(i), b = expected.value_as_int64(i);
      excess = a == b ? 0 : std::fabs(static_cast<double>(a) - static_cast<double>(b));
    }
    if (excess > 0) {
      ++mismatches;
      if (worst_index < 0 || excess > worst_excess) {
        worst_excess = excess;
        worst_index = i;
      }
    }
  }
  if (mismatches == 0) return {};
  auto value = [&](const Tensor& t) {
    return is_float ? number(t.value_as_double(worst_index)) : std::to_string(t.value_as_int64(worst_index));
  };
  return detail::concat(mismatches, " of ", got.numel(), " elements differ; worst at ",
                        index_string(got.shape(), worst_index), ": got ", value(got), ", expected ", value(expected));
}

// ---- one case, in the child ------------------------------------------------

/// Orders loaded tensors as the model's values: by name when every tensor has
/// a name matching a distinct value, else by position (ONNX test data is
/// positional: input_0 is the model's first input).
std::vector<size_t> match_positions(const std::vector<std::string>& file_names,
                                    const std::vector<runtime::ValueInfo>& values) {
  std::vector<size_t> order(file_names.size());
  std::vector<bool> taken(values.size(), false);
  bool by_name = file_names.size() == values.size();
  for (size_t i = 0; by_name && i < file_names.size(); ++i) {
    auto it = std::find_if(values.begin(), values.end(),
                           [&](const runtime::ValueInfo& v) { return v.name == file_names[i]; });
    if (file_names[i].empty() || it == values.end() || taken[it - values.begin()]) {
      by_name = false;
      break;
    }
    order[i] = static_cast<size_t>(it - values.begin());
    taken[order[i]] = true;
  }
  if (!by_name)
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  return order;
}

/// ONNX test data stores bfloat16 tensors as their uint16 bits (numpy has no
/// bfloat16); read such a tensor as bfloat16 where bfloat16 is expected.
Tensor as_bfloat16_if_expected(const Tensor& t, DType expected) {
  if (expected != DType::bfloat16 || t.dtype() != DType::uint16) return t;
  return Tensor(DType::bfloat16, t.shape(), t.storage(), t.byte_offset());
}

CaseResult run_case(const fs::path& dir, const OnnxTestOptions& options) {
  runtime::SessionOptions session_options;
  session_options.num_threads = options.threads;
  std::unique_ptr<runtime::Session> loaded = frontend::load_model((dir / "model.onnx").string(), session_options);
  runtime::Session& session = *loaded;

  std::vector<fs::path> data_sets;
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(dir, error))
    if (entry.is_directory(error) && entry.path().filename().string().starts_with("test_data_set_"))
      data_sets.push_back(entry.path());
  std::sort(data_sets.begin(), data_sets.end());
  if (data_sets.empty()) return {Outcome::error, "no test_data_set_* folder"};

  for (const fs::path& data_set : data_sets) {
    std::string set_name = data_set.filename().string();
    std::vector<Tensor> loaded;
    std::vector<std::string> names;
    // A file holds a TensorProto or, for a sequence value, a SequenceProto: the
    // model's value at the file's position says which.
    auto load = [](const fs::path& file, const std::vector<runtime::ValueInfo>& values, size_t position,
                   std::string* name) {
      if (position < values.size() && values[position].type.optional)
        return frontend::load_optional_pb(file.string(), values[position].type.dtype, name);
      if (position < values.size() && values[position].type.sequence)
        return frontend::load_sequence_pb(file.string(), values[position].type.dtype, name);
      return frontend::load_tensor_pb(file.string(), name);
    };
    for (const fs::path& file : numbered_files(data_set, "input_")) {
      names.emplace_back();
      loaded.push_back(load(file, session.inputs(), loaded.size(), &names.back()));
    }
    if (loaded.size() != session.inputs().size())
      return {Outcome::error,
              detail::concat(set_name, " has ", loaded.size(), " inputs, the model takes ", session.inputs().size())};
    std::vector<size_t> order = match_positions(names, session.inputs());
    std::vector<Tensor> inputs(loaded.size());
    for (size_t i = 0; i < loaded.size(); ++i)
      inputs[order[i]] = as_bfloat16_if_expected(loaded[i], session.inputs()[order[i]].type.dtype);

    std::vector<Tensor> outputs = session.run(inputs);

    std::vector<Tensor> expected;
    names.clear();
    for (const fs::path& file : numbered_files(data_set, "output_")) {
      names.emplace_back();
      expected.push_back(load(file, session.outputs(), expected.size(), &names.back()));
    }
    if (expected.size() != outputs.size())
      return {Outcome::error,
              detail::concat(set_name, " has ", expected.size(), " expected outputs, the model has ", outputs.size())};
    order = match_positions(names, session.outputs());
    for (size_t i = 0; i < expected.size(); ++i) {
      Tensor wanted = as_bfloat16_if_expected(expected[i], outputs[order[i]].dtype());
      std::string difference = compare_tensors(outputs[order[i]], wanted, options.rtol, options.atol);
      if (!difference.empty())
        return {Outcome::fail,
                detail::concat(set_name, ", output '", session.outputs()[order[i]].name, "': ", difference)};
    }
  }
  return {Outcome::pass, ""};
}

[[noreturn]] void child_main(const fs::path& dir, const OnnxTestOptions& options, int write_fd) {
  struct rlimit no_core {};
  setrlimit(RLIMIT_CORE, &no_core);
  CaseResult result;
  try {
    result = run_case(dir, options);
  } catch (const Error& e) {
    result = {e.kind() == ErrorKind::unsupported ? Outcome::unsupported : Outcome::error,
              e.kind() == ErrorKind::unsupported ? e.what() : detail::concat(to_string(e.kind()), ": ", e.what())};
  } catch (const std::bad_alloc&) {
    result = {Outcome::error, "out of memory"};
  } catch (const std::exception& e) {
    result = {Outcome::error, e.what()};
  }
  std::string line = std::string(outcome_name(result.outcome)) + "\t" + result.message;
  if (line.size() > kMaxMessage) line.resize(kMaxMessage);
  const char* data = line.data();
  size_t left = line.size();
  while (left > 0) {
    ssize_t n = write(write_fd, data, left);
    if (n <= 0) break;
    data += n;
    left -= static_cast<size_t>(n);
  }
  _exit(0);
}

// ---- the parent ------------------------------------------------------------

struct Running {
  pid_t pid;
  int read_fd;
  size_t case_index;
  std::chrono::steady_clock::time_point start;
};

CaseResult parse_child_result(const std::string& text, int status) {
  if (WIFSIGNALED(status)) {
    int signal = WTERMSIG(status);
    return {Outcome::crash, detail::concat("signal ", signal, " (", strsignal(signal), ")")};
  }
  size_t tab = text.find('\t');
  if (tab != std::string::npos) {
    std::string status_word = text.substr(0, tab);
    for (Outcome o : {Outcome::pass, Outcome::fail, Outcome::unsupported, Outcome::error})
      if (status_word == outcome_name(o)) return {o, text.substr(tab + 1)};
  }
  return {Outcome::crash, detail::concat("the case's process exited with status ",
                                         WIFEXITED(status) ? WEXITSTATUS(status) : -1, " without a result")};
}

std::string read_all(int fd) {
  std::string text;
  char buffer[4096];
  for (;;) {
    ssize_t n = read(fd, buffer, sizeof(buffer));
    if (n > 0) {
      text.append(buffer, static_cast<size_t>(n));
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      break;
    }
  }
  return text;
}

struct Tally {
  int64_t passed = 0, failed = 0, unsupported = 0, crashed = 0, timed_out = 0;
  void add(Outcome o) {
    switch (o) {
      case Outcome::pass:
        ++passed;
        break;
      case Outcome::fail:
      case Outcome::error:
        ++failed;
        break;
      case Outcome::unsupported:
        ++unsupported;
        break;
      case Outcome::crash:
        ++crashed;
        break;
      case Outcome::timeout:
        ++timed_out;
        break;
    }
  }
  int64_t total() const { return passed + failed + unsupported + crashed + timed_out; }
  std::string to_string() const {
    return detail::concat(passed, " passed, ", failed, " failed, ", unsupported, " unsupported, ", crashed,
                          " crashed, ", timed_out, " timed out of ", total());
  }
};

std::string shortened(const std::string& message, bool verbose) {
  std::string text = one_line(message);
  if (!verbose && text.size() > 300) text = text.substr(0, 297) + "...";
  return text;
}

int run_onnx_tests(const OnnxTestOptions& options) {
  if (options.jobs < 1 || options.jobs > 256)
    fail(ErrorKind::invalid_argument, "--jobs ", options.jobs, " is out of range (expected 1..256)");
  if (options.threads < 1 || options.threads > 1024)
    fail(ErrorKind::invalid_argument, "--threads ", options.threads, " is out of range (expected 1..1024)");
  if (!(options.timeout_seconds > 0) || options.timeout_seconds > 86400)
    fail(ErrorKind::invalid_argument, "--timeout ", options.timeout_seconds, " is out of range (expected 0..86400 s)");
  if (!(options.rtol >= 0) || !(options.atol >= 0))
    fail(ErrorKind::invalid_argument, "--rtol and --atol must be non-negative");
  std::optional<std::regex> filter;
  if (!options.filter.empty()) {
    try {
      filter.emplace(options.filter);
    } catch (const std::regex_error& e) {
      fail(ErrorKind::invalid_argument, "--filter '", options.filter, "' is not a regular expression: ", e.what());
    }
  }

  std::vector<TestCase> cases;
  std::vector<bool> group_present(options.dirs.size(), true);
  for (size_t group = 0; group < options.dirs.size(); ++group) {
    fs::path dir = options.dirs[group];
    std::error_code error;
    if (!fs::is_directory(dir, error)) {
      if (!options.skip_missing) fail(ErrorKind::io, "'", dir.string(), "' is not a directory");
      group_present[group] = false;
      std::cout << "skipped " << dir.string() << ": not a directory\n";
      continue;
    }
    std::vector<TestCase> found;
    collect_cases(dir, dir, group, 0, found);
    if (filter) std::erase_if(found, [&](const TestCase& c) { return !std::regex_search(c.name, *filter); });
    cases.insert(cases.end(), found.begin(), found.end());
  }
  if (std::none_of(group_present.begin(), group_present.end(), [](bool b) { return b; })) return kSkipExitCode;

  std::vector<std::optional<CaseResult>> results(cases.size());
  std::vector<Tally> tallies(options.dirs.size());
  std::vector<size_t> remaining_in_group(options.dirs.size(), 0);
  for (const TestCase& c : cases) ++remaining_in_group[c.group];
  size_t printed = 0;

  auto print_group_summary = [&](size_t group) {
    std::cout << "summary: " << tallies[group].to_string() << " (" << options.dirs[group] << ")\n";
  };
  auto print_ready = [&] {
    while (printed < cases.size() && results[printed]) {
      const TestCase& c = cases[printed];
      const CaseResult& r = *results[printed];
      std::cout << outcome_name(r.outcome) << " " << c.name;
      if (!r.message.empty()) std::cout << ": " << shortened(r.message, options.verbose);
      if (options.verbose) std::cout << " (" << number(std::round(r.seconds * 1000) / 1000) << " s)";
      std::cout << "\n";
      tallies[c.group].add(r.outcome);
      if (--remaining_in_group[c.group] == 0) print_group_summary(c.group);
      ++printed;
    }
    std::cout.flush();
  };
  // A folder without cases still gets its summary line.
  for (size_t group = 0; group < options.dirs.size(); ++group)
    if (group_present[group] && remaining_in_group[group] == 0) print_group_summary(group);

  std::vector<Running> running;
  size_t next = 0;
  auto timeout = std::chrono::duration<double>(options.timeout_seconds);
  while (next < cases.size() || !running.empty()) {
    while (running.size() < static_cast<size_t>(options.jobs) && next < cases.size()) {
      int fds[2];
      if (pipe2(fds, O_CLOEXEC) != 0) fail(ErrorKind::io, "onnx-test: pipe failed: ", std::strerror(errno));
      std::cout.flush();
      std::cerr.flush();
      pid_t pid = fork();
      if (pid < 0) fail(ErrorKind::io, "onnx-test: fork failed: ", std::strerror(errno));
      if (pid == 0) {
        close(fds[0]);
        child_main(cases[next].dir, options, fds[1]);
      }
      close(fds[1]);
      running.push_back({pid, fds[0], next, std::chrono::steady_clock::now()});
      ++next;
    }
    bool progressed = false;
    for (size_t i = 0; i < running.size();) {
      Running& r = running[i];
      int status = 0;
      pid_t done = waitpid(r.pid, &status, WNOHANG);
      auto elapsed = std::chrono::steady_clock::now() - r.start;
      std::optional<CaseResult> result;
      if (done == r.pid) {
        result = parse_child_result(read_all(r.read_fd), status);
      } else if (elapsed > timeout) {
        kill(r.pid, SIGKILL);
        waitpid(r.pid, &status, 0);
        result = CaseResult{Outcome::timeout, detail::concat("killed after ", options.timeout_seconds, " s")};
      }
      if (!result) {
        ++i;
        continue;
      }
      close(r.read_fd);
      result->seconds = std::chrono::duration<double>(elapsed).count();
      results[r.case_index] = std::move(*result);
      running.erase(running.begin() + static_cast<std::ptrdiff_t>(i));
      progressed = true;
    }
    if (progressed)
      print_ready();
    else
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  print_ready();

  Tally total;
  for (const Tally& t : tallies) {
    total.passed += t.passed;
    total.failed += t.failed;
    total.unsupported += t.unsupported;
    total.crashed += t.crashed;
    total.timed_out += t.timed_out;
  }
  if (options.dirs.size() > 1) std::cout << "total: " << total.to_string() << "\n";
  if (options.min_pass >= 0 && total.passed < options.min_pass) {
    std::cerr << "graft: onnx-test: " << total.passed << " passed, fewer than --min-pass " << options.min_pass << "\n";
    return 1;
  }
  return 0;
}

std::function<int()> setup_onnx_test(CLI::App& app) {
  auto options = std::make_shared<OnnxTestOptions>();
  CLI::App* sub = app.add_subcommand("onnx-test", "run ONNX backend test cases, each in its own process");
  sub->add_option("dirs", options->dirs, "a test case folder (model.onnx, test_data_set_*) or a folder of them")
      ->required();
  sub->add_option("--min-pass", options->min_pass, "exit 1 when fewer cases pass");
  sub->add_option("--jobs,-j", options->jobs, "cases run at once (default 2)");
  sub->add_option("--timeout", options->timeout_seconds, "seconds before a case is killed (default 60)");
  sub->add_option("--threads", options->threads, "intra-op threads per case (default 1)");
  sub->add_option("--rtol", options->rtol, "relative tolerance (default 1e-3)");
  sub->add_option("--atol", options->atol, "absolute tolerance (default 1e-5)");
  sub->add_option("--filter", options->filter, "run only cases whose name matches this regular expression");
  sub->add_flag("--verbose,-v", options->verbose, "full messages and each case's time");
  sub->add_flag("--skip-missing", options->skip_missing,
                "skip folders that do not exist; exit 77 when none exists (for CTest)");
  return [options] { return run_onnx_tests(*options); };
}

}  // namespace

GRAFT_CLI_COMMAND(setup_onnx_test);

}  // namespace graft::cli
