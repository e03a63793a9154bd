/// \file
/// The CLI's command registry: each `graft <command>` lives in its own file
/// and registers itself with GRAFT_CLI_COMMAND.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <vector>

namespace graft::cli {

/// Adds a subcommand (with its options) to `app` and returns the function to
/// run when it is chosen; that function returns the process exit code.
using CommandSetup = std::function<std::function<int()>(CLI::App& app)>;

/// Registers a command at static-initialization time; returns true.
bool register_command(CommandSetup setup);
/// Every registered command.
const std::vector<CommandSetup>& commands();

}  // namespace graft::cli

#define GRAFT_CLI_CONCAT_INNER(a, b) a##b
#define GRAFT_CLI_CONCAT(a, b) GRAFT_CLI_CONCAT_INNER(a, b)
/// GRAFT_CLI_COMMAND(setup_function): registers a `graft <command>`.
#define GRAFT_CLI_COMMAND(setup) \
  [[maybe_unused]] static const bool GRAFT_CLI_CONCAT(graft_cli_registered_, __COUNTER__) = ::graft::cli::register_command(setup)
