// coral-run -n N [--no-prefix] [--timeout S] [--] prog args...
#include <CLI/CLI.hpp>
#include <cstdio>

#include "tools/coral-run/launcher.h"

int main(int argc, char** argv) {
  CLI::App app{"coral-run: start N local ranks of a Coral program"};
  coral::run::Options opt;
  bool no_prefix = false;
  app.add_option("-n,--np", opt.nranks, "number of ranks")->required()->check(CLI::Range(1, 4096));
  app.add_flag("--no-prefix", no_prefix, "do not prefix output lines with [rank]");
  app.add_option("--timeout", opt.timeout_s, "stop all ranks after this many seconds (exit 124)")
      ->check(CLI::NonNegativeNumber);
  app.prefix_command();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  opt.command = app.remaining();
  if (!opt.command.empty() && opt.command.front() == "--") opt.command.erase(opt.command.begin());
  if (opt.command.empty()) {
    std::fprintf(stderr, "coral-run: no program given\n%s", app.help().c_str());
    return 2;
  }
  opt.prefix = !no_prefix;
  return coral::run::launch(opt);
}
