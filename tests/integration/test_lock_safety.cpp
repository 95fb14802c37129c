// The measurement lock directory cannot be turned against its users (pipeline/measurement_lock.hpp): a symbolic
// link, a hard link or a FIFO planted under a lock file's name is refused, and the file it points at keeps its
// content and mode, also through a real `aispflow run`; a directory owned by another user, and one that others
// can write to without the sticky bit, are refused with a clear error; in a shared sticky directory a lock file
// made by someone else keeps its mode, and one this process makes is usable by every user.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>

#include "pipeline/measurement_lock.hpp"
#include "support/text_files.hpp"

namespace {

namespace fs = std::filesystem;
using aispflow::MeasurementLock;
using aispflow::MeasurementLockOptions;
using aispflow::test::quote;
using aispflow::test::read_file;

constexpr uid_t kNobody = 65534;

std::string this_host_cpu() {
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) != 0 || !*host) return "cpu-localhost";
  return std::string("cpu-") + host;
}

mode_t mode_of(const fs::path& p) {
  struct stat st{};
  return ::lstat(p.c_str(), &st) == 0 ? st.st_mode & 07777 : 0;
}

class LockSafetyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::random_device rd;
    dir_ = fs::temp_directory_path() / ("aispflow-test-lock-safety-" + std::to_string(rd()));
    fs::create_directories(dir_);
    locks_ = dir_ / "locks";
    ASSERT_EQ(::mkdir(locks_.c_str(), 0700), 0);
    victim_ = dir_ / "victim";
    std::ofstream(victim_) << "precious\n";
    ::chmod(victim_.c_str(), 0600);
    std::ofstream(dir_ / "wf.yaml") << "name: measured\nnodes:\n  measure:\n    type: command\n    exclusive: true\n"
                                       "    params: {run: \"true\"}\n";
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  // The error MeasurementLock throws for the CPU device, or "" when it locks.
  std::string lock_error(const std::string& device) const {
    MeasurementLockOptions options;
    options.dir = locks_;
    options.timeout_s = 0.2;
    try {
      MeasurementLock lock({device}, options);
      return "";
    } catch (const std::exception& e) {
      return e.what();
    }
  }
  aispflow::test::CommandResult run() const {
    return aispflow::test::run_in(dir_, "AISPFLOW_LOCK_DIR=" + quote(locks_.string()) + " " +
                                            quote(aispflow::test::aispflow_binary(AISPFLOW_BIN)) +
                                            " run wf.yaml --backend cpu --progress lines --cache cache --out out");
  }
  void expect_victim_untouched() const {
    EXPECT_EQ(read_file(victim_), "precious\n");
    EXPECT_EQ(mode_of(victim_), 0600u);
  }
  fs::path dir_, locks_, victim_;
};

TEST_F(LockSafetyTest, APlantedSymlinkIsRefusedAndItsTargetUntouched) {
  const fs::path planted = locks_ / aispflow::measurement_lock_file_name(this_host_cpu());
  fs::create_symlink(victim_, planted);
  EXPECT_NE(lock_error(this_host_cpu()).find("is a symbolic link"), std::string::npos) << lock_error(this_host_cpu());
  expect_victim_untouched();
  const auto r = run();
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_NE(r.err.find("is a symbolic link: refusing to follow it"), std::string::npos) << r.err;
  expect_victim_untouched();
  // A dangling link: nothing is created where it points.
  fs::create_symlink(dir_ / "created-through-link", locks_ / "gpu-dangling.lock");
  EXPECT_NE(lock_error("gpu-dangling").find("symbolic link"), std::string::npos);
  EXPECT_FALSE(fs::exists(dir_ / "created-through-link"));
}

TEST_F(LockSafetyTest, AHardLinkOrAFifoIsRefused) {
  fs::create_hard_link(victim_, locks_ / "gpu-linked.lock");
  EXPECT_NE(lock_error("gpu-linked").find("hard links"), std::string::npos) << lock_error("gpu-linked");
  expect_victim_untouched();
  ASSERT_EQ(::mkfifo((locks_ / "gpu-fifo.lock").c_str(), 0600), 0);
  EXPECT_NE(lock_error("gpu-fifo").find("not a regular file"), std::string::npos) << lock_error("gpu-fifo");
}

TEST_F(LockSafetyTest, ADirectoryOwnedByAnotherUserIsRefused) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to give a directory to another user";
  ASSERT_EQ(::chown(locks_.c_str(), kNobody, kNobody), 0);
  EXPECT_NE(lock_error(this_host_cpu()).find("belongs to uid 65534, neither you"), std::string::npos)
      << lock_error(this_host_cpu());
  const auto r = run();
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("belongs to uid 65534"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("AISPFLOW_LOCK_DIR"), std::string::npos) << "the error says what to do: " << r.err;
}

TEST_F(LockSafetyTest, AWorldWritableDirectoryNeedsTheStickyBit) {
  ASSERT_EQ(::chmod(locks_.c_str(), 0777), 0);
  EXPECT_NE(lock_error(this_host_cpu()).find("has no sticky bit"), std::string::npos) << lock_error(this_host_cpu());
  EXPECT_NE(run().err.find("has no sticky bit"), std::string::npos);
  // Sticky (as an administrator makes a shared one): usable, and a lock file made here is for every user.
  ASSERT_EQ(::chmod(locks_.c_str(), 01777), 0);
  EXPECT_EQ(lock_error("gpu-new"), "");
  EXPECT_EQ(mode_of(locks_ / "gpu-new.lock"), 0666u);
  // Someone else's lock file keeps its owner and mode: only files this process created get a mode set.
  const fs::path theirs = locks_ / "gpu-theirs.lock";
  std::ofstream(theirs) << "";
  ASSERT_EQ(::chmod(theirs.c_str(), 0640), 0);
  if (::geteuid() == 0) ASSERT_EQ(::chown(theirs.c_str(), kNobody, kNobody), 0);
  EXPECT_EQ(lock_error("gpu-theirs"), "");
  EXPECT_EQ(mode_of(theirs), 0640u);
  const auto r = run();
  EXPECT_EQ(r.code, 0) << r.err;
}

TEST(LockDirectory, DefaultsToAPlaceOfThisUsersOwn) {
  const char* saved = std::getenv("AISPFLOW_LOCK_DIR");
  const std::string keep = saved ? saved : "";
  ::unsetenv("AISPFLOW_LOCK_DIR");
  const std::string dir = aispflow::default_measurement_lock_dir().string();
  if (::geteuid() == 0) EXPECT_EQ(dir, "/run/aispflow-locks");
  else EXPECT_EQ(dir, "/tmp/aispflow-locks-" + std::to_string(::geteuid()));
  ::setenv("AISPFLOW_LOCK_DIR", "/srv/shared-locks", 1);
  EXPECT_EQ(aispflow::default_measurement_lock_dir(), "/srv/shared-locks");
  if (saved) ::setenv("AISPFLOW_LOCK_DIR", keep.c_str(), 1);
  else ::unsetenv("AISPFLOW_LOCK_DIR");
}

}  // namespace
