// coral-run -n N [--no-prefix] [--timeout S] [--bind-to auto|core|none] [--] prog args...
#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "base/socket.h"
#include "tools/coral-run/launcher.h"

int main(int argc, char** argv) {
  CLI::App app{"coral-run: start N local ranks of a Coral program"};
  coral::run::Options opt;
  bool no_prefix = false;
  app.add_option("-n,--np", opt.nranks, "number of ranks")->required()->check(CLI::Range(1, 4096));
  app.add_flag("--no-prefix", no_prefix, "do not prefix output lines with [rank]");
  app.add_option("--nnodes", opt.nnodes, "nodes in the job; each runs coral-run with the same -n")
      ->check(CLI::Range(1, 65536));
  app.add_option("--node-rank", opt.node_rank, "this node's index (0 serves the rendezvous store)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--root", opt.root, "host:port of node 0's store (default: MASTER_ADDR:MASTER_PORT or CORAL_ROOT)");
  app.add_option("--timeout", opt.timeout_s, "stop all ranks after this many seconds (exit 124)")
      ->check(CLI::NonNegativeNumber);
  app.add_flag("--keep-going", opt.keep_going,
               "a rank that dies does not stop the others (for elastic programs): its death is reported, and "
               "the exit status is 0 when every rank that was not killed by a signal exited 0");
  std::string bind = "auto";
  app.add_option("--bind-to", bind,
                 "core: pin local rank i to one CPU, a core each before hyperthread siblings, round-robin "
                 "(as mpirun --bind-to core); none: leave placement to the kernel; auto: core when the "
                 "ranks fit the CPUs coral-run may use and --nnodes is 1, else none")
      ->default_str("auto");
  app.prefix_command();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  opt.command = app.remaining();
  // The program starts at the first word coral-run does not know: one that looks like an option
  // is a misspelt one of coral-run's (after --, anything goes).
  if (!opt.command.empty() && opt.command.front().size() > 1 && opt.command.front()[0] == '-' &&
      opt.command.front() != "--") {
    std::fprintf(stderr, "coral-run: unknown option '%s' (put -- before a program whose name starts with -)\n",
                 opt.command.front().c_str());
    return 2;
  }
  if (!opt.command.empty() && opt.command.front() == "--") opt.command.erase(opt.command.begin());
  if (opt.command.empty()) {
    std::fprintf(stderr, "coral-run: no program given\n%s", app.help().c_str());
    return 2;
  }
  opt.prefix = !no_prefix;
  try {
    opt.bind = coral::run::parse_bind(bind);
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "coral-run: %s\n", e.what());
    return 2;
  }
  if (opt.node_rank >= opt.nnodes) {
    std::fprintf(stderr, "coral-run: --node-rank %d must be below --nnodes %d\n", opt.node_rank, opt.nnodes);
    return 2;
  }
  if (opt.nnodes > 1) {
    const char* addr = std::getenv("MASTER_ADDR");
    const char* port = std::getenv("MASTER_PORT");
    const char* root = std::getenv("CORAL_ROOT");
    if (opt.root.empty() && addr && port)
      opt.root = (std::string(addr).find(':') != std::string::npos ? "[" + std::string(addr) + "]" : addr) +
                 std::string(":") + port;
    if (opt.root.empty() && root) opt.root = root;
    if (opt.root.empty()) {
      std::fprintf(stderr, "coral-run: --nnodes > 1 needs --root host:port (or MASTER_ADDR and MASTER_PORT)\n");
      return 2;
    }
    const char* secret = std::getenv("CORAL_SECRET");
    if (!secret || std::strlen(secret) != 64 || std::strspn(secret, "0123456789abcdefABCDEF") != 64) {
      std::fprintf(stderr,
                   "coral-run: --nnodes > 1 needs CORAL_SECRET, the same 64 hex digits on every node "
                   "(e.g. export CORAL_SECRET=$(python3 -c 'import secrets; print(secrets.token_hex(32))'))\n");
      return 2;
    }
    opt.secret = secret;
    try {
      coral::net::resolve(opt.root);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "coral-run: --root '%s': %s\n", opt.root.c_str(), e.what());
      return 2;
    }
  }
  try {
    return coral::run::launch(opt);
  } catch (const std::exception& e) {  // setting up the job failed (its store, its sockets)
    std::fprintf(stderr, "coral-run: %s\n", e.what());
    return 1;
  }
}
