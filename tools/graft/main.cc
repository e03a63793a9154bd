// graft: the command-line tool. Each command is in its own file and registers
// itself (command.h). graft::Error becomes one line on stderr and exit code 2.
#include <iostream>

#include "cli_support.h"
#include "command.h"
#include "graft/core/error.h"
#include "graft/runtime/artifact.h"

namespace graft::cli {

namespace {
std::vector<CommandSetup>& registry() {
  static std::vector<CommandSetup> list;
  return list;
}
}  // namespace

bool register_command(CommandSetup setup) {
  registry().push_back(std::move(setup));
  return true;
}

const std::vector<CommandSetup>& commands() { return registry(); }

}  // namespace graft::cli

int main(int argc, char** argv) {
  CLI::App app{"graft: partition, fuse, compile and run neural networks (ONNX)"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("graft ") + GRAFT_VERSION + " (artifact format " +
                                        std::to_string(graft::runtime::kArtifactFormatVersion) + ")");
  // Usage errors read like every other error: one line, exit code 2. Set
  // before the commands register so that their subcommands inherit it.
  app.failure_message(
      [](const CLI::App*, const CLI::Error& e) { return "graft: error: " + graft::cli::one_line(e.what()) + "\n"; });
  std::vector<std::pair<CLI::App*, std::function<int()>>> handlers;
  for (const auto& setup : graft::cli::commands()) {
    size_t before = app.get_subcommands({}).size();
    auto run = setup(app);
    auto subs = app.get_subcommands({});
    if (subs.size() > before) handlers.emplace_back(subs.back(), std::move(run));
  }
  // CLI11 reports an unknown command as "A subcommand is required"; name it.
  if (argc > 1 && argv[1][0] != '-') {
    std::string known;
    bool found = false;
    for (const auto& [sub, run] : handlers) {
      known += (known.empty() ? "" : ", ") + sub->get_name();
      found = found || sub->get_name() == argv[1];
    }
    if (!found) {
      std::cerr << "graft: error: unknown command '" << graft::cli::one_line(argv[1]) << "' (commands: " << known
                << ")\n";
      return 2;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }
  try {
    for (auto& [sub, run] : handlers)
      if (sub->parsed()) return run();
  } catch (const std::exception& e) {  // graft::Error and anything else
    std::cerr << "graft: error: " << graft::cli::one_line(e.what()) << "\n";
    return 2;
  }
  return 2;
}
