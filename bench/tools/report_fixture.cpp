// Writes the HTML report benchmark's synthetic run (tests/support/report_fixture.hpp, the integration test's own):
//   report_fixture RUN_DIR COUNT
#include <cstdio>
#include <cstring>
#include <exception>
#include <stdexcept>
#include <string>

#include "tests/support/report_fixture.hpp"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s RUN_DIR COUNT\n", argv[0]);
    return 2;
  }
  int count = -1;
  std::size_t used = 0;
  try {
    count = std::stoi(argv[2], &used);
  } catch (const std::logic_error&) {   // not a number, or out of range
  }
  if (count < 0 || used != std::strlen(argv[2])) {
    std::fprintf(stderr, "report_fixture: COUNT must be a whole number of records, got '%s'\n", argv[2]);
    return 2;
  }
  try {
    aispflow::test::write_report_fixture(argv[1], count);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "report_fixture: %s\n", e.what());
    return 1;
  }
  return 0;
}
