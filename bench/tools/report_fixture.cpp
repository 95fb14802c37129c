// Writes the HTML report benchmark's synthetic run (tests/support/report_fixture.hpp, the integration test's own):
//   report_fixture RUN_DIR COUNT
#include <cstdio>
#include <cstdlib>
#include <exception>

#include "tests/support/report_fixture.hpp"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s RUN_DIR COUNT\n", argv[0]);
    return 2;
  }
  try {
    aispflow::test::write_report_fixture(argv[1], std::atoi(argv[2]));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "report_fixture: %s\n", e.what());
    return 1;
  }
  return 0;
}
