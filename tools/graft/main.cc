// graft: the command-line tool. Each command is in its own file and registers
// itself (command.h). graft::Error becomes one line on stderr and exit code 2.
#include <iostream>

#include "command.h"
#include "graft/core/error.h"

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
  // Usage errors read like every other error: one line, exit code 2. Set
  // before the commands register so that their subcommands inherit it.
  app.failure_message(
      [](const CLI::App*, const CLI::Error& e) { return std::string("graft: error: ") + e.what() + "\n"; });
  std::vector<std::pair<CLI::App*, std::function<int()>>> handlers;
  for (const auto& setup : graft::cli::commands()) {
    size_t before = app.get_subcommands({}).size();
    auto run = setup(app);
    auto subs = app.get_subcommands({});
    if (subs.size() > before) handlers.emplace_back(subs.back(), std::move(run));
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
  } catch (const graft::Error& e) {
    std::cerr << "graft: error: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "graft: error: " << e.what() << "\n";
    return 2;
  }
  return 2;
}
