// graft run MODEL: loads a model into a runtime::Session, feeds it the given
// .npy inputs or seeded random ones, runs it and prints every output (shape,
// dtype, first values, checksums), optionally the latency over repeated runs
// and the memory statistics, and writes the outputs as .npy files.
//
// --profile prints the time per node, op type and backend (averaged over the
// --repeat runs, else of the first run); --trace writes those runs as a Chrome
// trace JSON (profile_report.h).
//
// Random inputs: float types are uniform in [-1, 1), integer types uniform in
// [0, 100), bool a fair coin; drawn from std::mt19937_64 seeded with --seed
// (default 0), inputs in model order. A dimension the model leaves symbolic
// takes its --shape value, or 1.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <random>
#include <set>

#include "cli_support.h"
#include "command.h"
#include "graft/backend/device_api.h"
#include "graft/frontend/load_model.h"
#include "graft/codegen/compile_cache.h"
#include "graft/core/error.h"
#include "graft/frontend/npy.h"
#include "graft/partition/annotations.h"
#include "graft/runtime/profile_report.h"
#include "graft/runtime/session.h"

namespace graft::cli {

namespace {

/// Generated inputs larger than this are refused (a typo in --shape should not
/// exhaust the machine's memory).
constexpr size_t kMaxGeneratedInputBytes = size_t{4} << 30;

struct RunCommandOptions {
  std::string model;
  std::vector<std::string> inputs;
  std::vector<std::string> shapes;
  std::string output_dir;
  std::string threads;
  std::string timeout;
  std::string max_memory;
  std::string fusion;
  std::string repeat;
  std::string show = "8";
  uint64_t seed = 0;
  bool stats = false;
  std::string backends;
  std::string device;
  std::string annotations;
  bool report = false;
  bool profile = false;
  std::string trace;
  std::string profile_top = "25";
};

Tensor random_tensor(DType dtype, const Shape& shape, std::mt19937_64& random, const std::string& name) {
  size_t nbytes = shape_nbytes(shape, std::max<size_t>(dtype_size(dtype), 1), "input '" + name + "'");
  if (nbytes > kMaxGeneratedInputBytes)
    fail(ErrorKind::invalid_argument, "input '", name, "' of shape ", shape_to_string(shape), " would take ",
         format_bytes(nbytes), " (random inputs are limited to ", format_bytes(kMaxGeneratedInputBytes), ")");
  Tensor t(dtype, shape);
  visit_dtype(dtype, "random input '" + name + "'", [&]<typename T>() {
    T* data = t.data<T>();
    for (int64_t i = 0; i < t.numel(); ++i) {
      uint64_t bits = random();
      if constexpr (std::is_same_v<T, bool>) {
        data[i] = (bits >> 63) != 0;
      } else if constexpr (std::is_integral_v<T>) {
        data[i] = static_cast<T>(bits % 100);
      } else {
        double unit = static_cast<double>(bits >> 11) * 0x1.0p-53;
        data[i] = T(static_cast<float>(2.0 * unit - 1.0));
      }
    }
  });
  return t;
}

/// The shape of a generated input: --shape when given (checked against the
/// model's known dimensions), else the model's dimensions with 1 for the
/// symbolic ones.
Shape generated_shape(const runtime::ValueInfo& info, const std::map<std::string, Shape>& shapes) {
  auto given = shapes.find(info.name);
  if (given != shapes.end()) {
    runtime::check_shape_fits(info, given->second, "--shape");
    return given->second;
  }
  if (!info.type.has_rank)
    fail(ErrorKind::invalid_argument, "input '", info.name, "' has no known rank; give --shape ", info.name,
         "=D0,D1,...");
  Shape shape;
  for (const ir::Dim& d : info.type.dims) shape.push_back(d.is_known() ? d.value : 1);
  return shape;
}

std::string format_element(const Tensor& t, int64_t i) {
  char buffer[64];
  if (dtype_is_float(t.dtype()))
    std::snprintf(buffer, sizeof(buffer), "%.6g", t.value_as_double(i));
  else
    std::snprintf(buffer, sizeof(buffer), "%lld", static_cast<long long>(t.value_as_int64(i)));
  return buffer;
}

void print_output(const std::string& name, const Tensor& t, int64_t show) {
  if (t.is_none()) {
    std::cout << "output '" << name << "': none (an empty optional)\n";
    return;
  }
  if (t.is_sequence()) {  // each item as an output of its own
    std::cout << "output '" << name << "': " << t.type_string() << "\n";
    for (size_t k = 0; k < t.sequence_items().size(); ++k)
      print_output(name + "[" + std::to_string(k) + "]", t.sequence_items()[k], show);
    return;
  }
  std::cout << "output '" << name << "': " << t.type_string() << "\n";
  if (dtype_size(t.dtype()) == 0) return;
  std::cout << "  values:";
  int64_t shown = std::min<int64_t>(show, t.numel());
  for (int64_t i = 0; i < shown; ++i) std::cout << (i ? ", " : " ") << format_element(t, i);
  if (shown < t.numel()) std::cout << (shown ? ", ..." : " ...");
  if (t.numel() == 0) std::cout << " (empty)";
  std::cout << "\n";
  double sum = 0, sum_abs = 0;
  for (int64_t i = 0; i < t.numel(); ++i) {
    double v = t.value_as_double(i);
    sum += v;
    sum_abs += std::fabs(v);
  }
  char buffer[128];
  std::snprintf(buffer, sizeof(buffer), "  checksum: sum %.9g, sum of abs %.9g\n", sum, sum_abs);
  std::cout << buffer;
}

int run_model(const RunCommandOptions& options) {
  runtime::SessionOptions session_options;
  if (!options.threads.empty()) session_options.num_threads = parse_thread_count(options.threads, "--threads");
  session_options.fusion = parse_on_off(options.fusion, "--fusion");
  const bool profiling = options.profile || !options.trace.empty();
  session_options.profile = profiling;
  int64_t profile_top = parse_count(options.profile_top, "--profile-top", 1000000);
  int64_t repeat = options.repeat.empty() ? 0 : parse_count(options.repeat, "--repeat", 1000000);
  if (!options.repeat.empty() && repeat < 1)
    fail(ErrorKind::invalid_argument, "--repeat '", options.repeat, "' must be at least 1");
  int64_t show = parse_count(options.show, "--show", 1000000);

  std::map<std::string, Shape> shapes = parse_shape_flags(options.shapes);
  std::map<std::string, std::string> files;
  for (const std::string& text : options.inputs) {
    auto [name, path] = split_assignment(text, "--input");
    if (!files.emplace(name, path).second) fail(ErrorKind::invalid_argument, "--input given twice for '", name, "'");
  }

  if (!options.backends.empty()) session_options.backends = parse_name_list(options.backends, "--backends");
  if (!options.device.empty()) session_options.device = runtime::parse_device(options.device);
  if (!options.max_memory.empty()) session_options.max_memory = runtime::parse_byte_size(options.max_memory, "--max-memory");
  backend::RunLimits limits;
  std::chrono::duration<double> timeout{0};
  if (!options.timeout.empty()) {
    char* end = nullptr;
    double seconds = std::strtod(options.timeout.c_str(), &end);
    if (end == options.timeout.c_str() || *end != '\0' || !(seconds > 0) || seconds > 1e7)
      fail(ErrorKind::invalid_argument, "--timeout '", options.timeout, "' is not a number of seconds above 0");
    timeout = std::chrono::duration<double>(seconds);
  }
  // Each run gets the whole timeout from its own start.
  auto limits_from_now = [&] {
    if (timeout.count() > 0)
      limits.deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration_cast<std::chrono::steady_clock::duration>(timeout);
    return limits;
  };
  if (!options.annotations.empty()) session_options.annotations = partition::load_annotations(options.annotations);
  std::unique_ptr<runtime::Session> loaded = frontend::load_model(options.model, session_options);
  runtime::Session& session = *loaded;
  if (options.report) std::cout << session.partition_report().summary_line() << "\n";
  std::string input_names;
  for (const auto& info : session.inputs()) input_names += (input_names.empty() ? "'" : ", '") + info.name + "'";
  if (input_names.empty()) input_names = "none";
  auto check_names = [&](const auto& given, const char* flag) {
    for (const auto& entry : given) {
      const std::string& name = entry.first;  // (clang 14 cannot capture a structured binding)
      bool known = std::any_of(session.inputs().begin(), session.inputs().end(),
                               [&](const runtime::ValueInfo& info) { return info.name == name; });
      if (!known)
        fail(ErrorKind::invalid_argument, flag, " names '", name,
             "', which is not an input of the model (inputs: ", input_names, ")");
    }
  };
  check_names(shapes, "--shape");
  check_names(files, "--input");
  for (const auto& [name, path] : files)
    if (shapes.count(name))
      fail(ErrorKind::invalid_argument, "input '", name, "' has both --input and --shape (the file gives the shape)");

  std::mt19937_64 random(options.seed);
  std::vector<Tensor> inputs;
  for (const runtime::ValueInfo& info : session.inputs()) {
    auto file = files.find(info.name);
    if (file != files.end()) {
      inputs.push_back(frontend::load_npy(file->second));
      std::cout << "input '" << info.name << "': " << inputs.back().type_string() << " from " << file->second << "\n";
    } else {
      if (info.type.dtype == DType::undefined)
        fail(ErrorKind::invalid_argument, "input '", info.name, "' has no known dtype; give it with --input");
      if (!info.type.is_tensor())
        fail(ErrorKind::unsupported, "input '", info.name, "' is a ", info.type.to_string(),
             "; graft run makes and reads tensors only (feed sequences through the C++ API)");
      inputs.push_back(random_tensor(info.type.dtype, generated_shape(info, shapes), random, info.name));
      std::cout << "input '" << info.name << "': " << inputs.back().type_string() << " random (seed " << options.seed
                << ")\n";
    }
  }

  backend::RunStats stats;
  auto start = std::chrono::steady_clock::now();
  std::vector<Tensor> outputs = session.run(inputs, limits_from_now(), &stats);
  double first_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  // The first run plans and compiles; when there are repeats, only they are profiled.
  std::vector<runtime::ProfiledRun> profiled;
  if (profiling) profiled.push_back({start, first_ms * 1000.0, std::move(stats.timings)});

  for (size_t i = 0; i < outputs.size(); ++i) print_output(session.outputs()[i].name, outputs[i], show);

  if (repeat > 0) {
    // Fused kernels compile in the background after the first run (which
    // interprets them): the repeats measure the compiled kernels.
    codegen::CompileCache::global().wait_for_background_compiles();
    std::vector<double> times;
    if (profiling) profiled.clear();
    int64_t fewer_thread_runs = 0, fewest_threads = session.num_threads();
    for (int64_t r = 0; r < repeat; ++r) {
      backend::RunStats run_stats;
      auto begin = std::chrono::steady_clock::now();
      session.run(inputs, limits_from_now(), &run_stats);
      times.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - begin).count());
      if (run_stats.num_threads < session.num_threads()) {
        ++fewer_thread_runs;
        fewest_threads = std::min<int64_t>(fewest_threads, run_stats.num_threads);
      }
      if (profiling) profiled.push_back({begin, times.back() * 1000.0, std::move(run_stats.timings)});
    }
    std::sort(times.begin(), times.end());
    double median =
        times.size() % 2 ? times[times.size() / 2] : 0.5 * (times[times.size() / 2 - 1] + times[times.size() / 2]);
    char buffer[200];
    std::snprintf(buffer, sizeof(buffer),
                  "latency: median %.3f ms, min %.3f ms over %lld runs (first run %.3f ms; %d thread%s", median,
                  times.front(), static_cast<long long>(repeat), first_ms, session.num_threads(),
                  session.num_threads() == 1 ? "" : "s");
    std::cout << buffer;
    // SessionOptions::adapt_threads: runs while other processes kept cores busy.
    if (fewer_thread_runs > 0)
      std::cout << ", down to " << fewest_threads << " on " << fewer_thread_runs << " of " << repeat
                << " runs while other processes kept cores busy";
    std::cout << ")\n";
  }

  if (options.report && session.num_generic_runs() > 0) {
    // GRAFT_MAX_PLANS=0: the runs used the graph as partitioned at load.
    std::cout << "plan: shape-generic (GRAFT_MAX_PLANS=0): the partition above, made with the model's symbolic "
                 "dimensions (docs/dynamic-shapes.md)\n";
  } else if (options.report && session.partitions_per_plan()) {
    // Symbolic input dimensions: the run's plan partitioned again with these shapes.
    std::vector<ir::ValueType> types;
    std::string shown;
    for (const Tensor& t : inputs) {
      types.push_back(ir::ValueType::of(t.dtype(), t.shape()));
      shown += (shown.empty() ? "" : ", ") + types.back().to_string();
    }
    std::string line = session.partition_report_for(types).summary_line();
    std::cout << "partition at inputs " << shown << ":" << line.substr(line.find(':') + 1) << "\n";
  }
  if (options.report)
    for (const compiler::CompileFallback& f : session.compile_fallbacks()) {
      if (f.compiled_when_run)
        std::cout << "compiled when run: " << f.backend << " compiles " << f.node << " for each shape it runs at"
                  << " (plan for inputs " << f.inputs << ": " << f.reason << ")\n";
      else
        std::cout << "fallback: " << f.backend << " declined to compile " << f.node << " for inputs " << f.inputs
                  << "; it ran on ref: " << f.reason << "\n";
    }

  if (options.stats) {
    const backend::MemoryStats& m = stats.memory;
    double percent = m.total_allocated_bytes
                         ? 100.0 * static_cast<double>(m.peak_bytes) / static_cast<double>(m.total_allocated_bytes)
                         : 0.0;
    char buffer[64];
    std::snprintf(buffer, sizeof(buffer), "%.1f%%", percent);
    std::cout << "memory: peak " << format_bytes(m.peak_bytes) << " of intermediates held at once, "
              << format_bytes(m.total_allocated_bytes) << " allocated in total (" << buffer << "); " << m.allocations
              << " allocations, " << m.reused << " reused a freed buffer\n";
    if (stats.bytes_to_device || stats.bytes_to_host)
      std::cout << "device copies: " << format_bytes(stats.bytes_to_device) << " (" << stats.bytes_to_device
                << " bytes) to the device, " << format_bytes(stats.bytes_to_host) << " (" << stats.bytes_to_host
                << " bytes) to the host in the first run\n";
    if (!options.device.empty()) {
      // The device's caching pool (DeviceAPI): its peak over every run.
      Device device = runtime::parse_device(options.device);
      if (device.type != DeviceType::cpu) {
        backend::DevicePoolStats p = backend::device_api(device.type).pool_stats(device.id);
        std::cout << "device memory (" << to_string(device) << "): peak " << format_bytes(p.peak_bytes_in_use)
                  << " in use, " << format_bytes(p.bytes_cached) << " cached now; " << p.device_allocations
                  << " device allocations, " << p.reuses << " reused a cached block\n";
      }
    }
  }

  if (options.profile)
    std::cout << runtime::format_profile(runtime::summarize_profile(profiled), static_cast<size_t>(profile_top));
  if (!options.trace.empty()) {
    runtime::write_chrome_trace(profiled, options.trace);
    std::cout << "wrote trace " << options.trace << " (" << profiled.size() << " run"
              << (profiled.size() == 1 ? "" : "s") << ")\n";
  }

  if (!options.output_dir.empty()) {
    std::error_code error;
    std::filesystem::create_directories(options.output_dir, error);
    if (error) fail(ErrorKind::io, "cannot create --output-dir '", options.output_dir, "': ", error.message());
    std::set<std::string> written;
    for (size_t i = 0; i < outputs.size(); ++i) {
      std::string file = file_name_for(session.outputs()[i].name);
      while (!written.insert(file).second) file += "_";
      // A sequence is written item by item: FILE_0.npy, FILE_1.npy, ...
      std::vector<std::pair<std::string, Tensor>> parts;
      if (outputs[i].is_none()) continue;  // an empty optional: nothing to write
      if (!outputs[i].is_sequence())
        parts.emplace_back(file, outputs[i]);
      else
        for (size_t k = 0; k < outputs[i].sequence_items().size(); ++k)
          parts.emplace_back(file + "_" + std::to_string(k), outputs[i].sequence_items()[k]);
      for (const auto& [part, tensor] : parts) {
        std::string path = (std::filesystem::path(options.output_dir) / (part + ".npy")).string();
        frontend::save_npy(tensor, path);
        std::cout << "wrote " << path << "\n";
      }
    }
  }
  // With a disk cache, a one-shot run leaves its fused kernels compiled there
  // (they compile in the background after the first run, which a process
  // that exits at once would abandon), so that the next process finds them.
  if (codegen::cache_directory_from_environment()) codegen::CompileCache::global().wait_for_background_compiles();
  if (options.stats) {
    // Where this process's fused CPU kernels came from, and whether it needed LLVM for them.
    const codegen::CompileCounters& c = codegen::CompileCache::global().counters();
    std::cout << "jit: " << c.compiles << " kernels compiled, " << c.disk_hits << " from GRAFT_CACHE_DIR ("
              << c.disk_rejects << " damaged entries rejected and compiled again), " << c.native_links
              << " linked by graft, " << c.interpreted << " interpreted; LLVM plugin "
              << (codegen::cpu_jit_loaded() ? "loaded" : "not loaded") << "\n";
  }
  return 0;
}

std::function<int()> setup_run(CLI::App& app) {
  auto options = std::make_shared<RunCommandOptions>();
  CLI::App* sub = app.add_subcommand("run", "run a model on given or random inputs and print its outputs");
  sub->add_option("model", options->model, "the .onnx model")->required();
  sub->add_option("--input", options->inputs, "NAME=FILE.npy: the value of input NAME (repeatable)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  sub->add_option("--shape", options->shapes, "NAME=D0,D1,...: the shape of random input NAME (repeatable)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  sub->add_option("--output-dir", options->output_dir, "write each output to DIR/OUTPUTNAME.npy");
  sub->add_option("--threads", options->threads, "intra-op threads, 1..1024 (default: GRAFT_NUM_THREADS or cores)");
  sub->add_option("--timeout", options->timeout,
                  "seconds a run may take; past them it stops with an error (each run of --repeat gets them)");
  sub->add_option("--max-memory", options->max_memory,
                  "bytes the intermediate values of a run may hold at once: 512M, 2G (default: GRAFT_MAX_MEMORY, "
                  "else the machine's memory)");
  sub->add_option("--fusion", options->fusion, "on|off: pointwise fusion (default: GRAFT_FUSION, else on)");
  sub->add_option("--repeat", options->repeat, "run N more times and print the median and min latency");
  sub->add_flag("--stats", options->stats,
                "print peak and total intermediate memory and buffer reuse, and where fused kernels came from "
                "(compiled, GRAFT_CACHE_DIR; whether LLVM was loaded)");
  sub->add_flag("--profile", options->profile,
                "print time per node, op type and backend (mean over the --repeat runs, else the first run)");
  sub->add_option("--trace", options->trace,
                  "write the profiled runs as a Chrome trace JSON (chrome://tracing, Perfetto)");
  sub->add_option("--profile-top", options->profile_top,
                  "how many of the slowest nodes --profile lists (default 25, 0 = all)");
  sub->add_option("--seed", options->seed, "seed of the random inputs (default 0)");
  sub->add_option("--show", options->show, "how many leading values of each output to print (default 8)");
  sub->add_option("--backends", options->backends,
                  "backends in priority order, comma-separated (default: GRAFT_BACKENDS, else all available)");
  sub->add_option("--device", options->device,
                  "run on this device: opencl[:N] or cuda[:N] puts that device's backend first, the CPU backends run "
                  "the rest "
                  "(default: cpu; see graft devices)");
  sub->add_option("--annotations", options->annotations, "JSON file pinning nodes, forbidding backends, declaring regions");
  sub->add_flag("--report", options->report,
                "print how many nodes each backend runs (see graft partition), the subgraphs a backend "
                "declined to compile, which ran on ref, and those it compiles when they run, per shape");
  return [options] { return run_model(*options); };
}

}  // namespace

GRAFT_CLI_COMMAND(setup_run);

}  // namespace graft::cli
