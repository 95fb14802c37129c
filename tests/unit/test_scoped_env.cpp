// ScopedEnvironment (kernels/common/scoped_env.hpp): nccl_env reaches NCCL for the exchange and is gone after it.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "kernels/common/scoped_env.hpp"

namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "<unset>";
}

TEST(ScopedEnvironment, SetsForTheScopeAndRestoresOrUnsets) {
  ::setenv("AISPFLOW_TEST_ENV_KEPT", "before", 1);
  ::unsetenv("AISPFLOW_TEST_ENV_NEW");
  {
    aispflow::kernels::ScopedEnvironment scope({{"AISPFLOW_TEST_ENV_KEPT", "inside"}, {"AISPFLOW_TEST_ENV_NEW", "x"}});
    EXPECT_EQ(env("AISPFLOW_TEST_ENV_KEPT"), "inside");
    EXPECT_EQ(env("AISPFLOW_TEST_ENV_NEW"), "x");
  }
  EXPECT_EQ(env("AISPFLOW_TEST_ENV_KEPT"), "before") << "a variable that existed gets its value back";
  EXPECT_EQ(env("AISPFLOW_TEST_ENV_NEW"), "<unset>") << "a variable that did not exist is removed again";
  ::unsetenv("AISPFLOW_TEST_ENV_KEPT");
}

}  // namespace
