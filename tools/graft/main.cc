// graft command-line tool (being built out; see docs/cli.md).
#include <iostream>

#include "graft/core/error.h"

int main(int argc, char** argv) {
  std::cerr << "graft: no command given\n";
  return 2;
}
