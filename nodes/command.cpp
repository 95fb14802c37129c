// The `command` node type: runs a shell command in a fresh output directory.
//
// The command runs as `/bin/sh -c RUN` with its output directory as the working directory, under the child-process
// facility (pipeline/child_process.hpp): a timeout, Ctrl-C, or the death of aispflow stops everything it started,
// and whatever it leaves running in the background when the shell exits is ended then. It sees
//   AISPFLOW_OUT             its output directory; files written there join the artifact
//   AISPFLOW_IN_<NAME>       each input's artifact directory (NAME from the input's alias)
//   AISPFLOW_IN_DIR          a directory with one symlink per input, named like the variables
//   AISPFLOW_NODE            the node's (instance) name
//   AISPFLOW_WORKFLOW_DIR    the directory of the workflow file
//   AISPFLOW_REF_<NODE>_<FIELD>  the value of each ${node.field} the params mention (ref_env_var())
// stdout and stderr are saved as stdout.txt / stderr.txt in the artifact, their tails in its data.
#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <thread>

#include "nodes/node_factories.hpp"
#include "pipeline/child_process.hpp"
#include "pipeline/shell_quote.hpp"
#include "pipeline/workflow.hpp"

extern char** environ;

namespace aispflow {

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

constexpr const char* kStdoutFile = "stdout.txt";
constexpr const char* kStderrFile = "stderr.txt";
constexpr std::size_t kMaxArgBytes = 100000;  // under Linux's 128 KiB limit on one argument or variable
constexpr std::size_t kTailBytes = 4096;   // how much of stdout/stderr goes into the artifact's data
constexpr auto kTermGrace = std::chrono::seconds(2);   // SIGTERM first, SIGKILL if still alive after this

// The last non-blank line, shortened: it goes into the node's error message.
std::string last_line(const std::string& text) {
  const std::size_t end = text.find_last_not_of(" \t\r\n");
  if (end == std::string::npos) return {};
  const std::size_t newline = text.rfind('\n', end);
  const std::size_t begin = newline == std::string::npos ? 0 : newline + 1;
  std::string line = text.substr(begin, end + 1 - begin);
  if (line.size() > 300) line = line.substr(0, 297) + "...";
  return line;
}

// Command output may be any bytes; JSON strings must be UTF-8. Invalid sequences become U+FFFD.
std::string valid_utf8(const std::string& text) {
  return json::parse(json(text).dump(-1, ' ', false, json::error_handler_t::replace)).get<std::string>();
}

std::string scalar_text(const json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

// Every reference's value as $AISPFLOW_REF_<NODE>_<FIELD>: text as is, anything else as JSON. The
// environment is never parsed by a shell, so this is the one form that needs no quoting at all.
// A value too long for one variable (Linux: 128 KiB) is left out, an error only where `run` names it.
void add_reference_vars(const json& refs, const std::string& run, std::map<std::string, std::string>& vars) {
  std::map<std::string, std::string> from;  // variable -> the reference that set it
  for (const auto& [ref, value] : refs.items()) {
    const auto dot = ref.find('.');
    const std::string name = ref_env_var(ref.substr(0, dot), ref.substr(dot + 1));
    const std::string text = scalar_text(value);
    if (text.size() + name.size() + 1 > kMaxArgBytes) {
      if (run.find(name) == std::string::npos) continue;
      throw NodeError("$" + name + " would hold " + std::to_string(text.size()) +
                      " bytes, more than one environment variable can (128 KiB); use ${" + ref + "} in `run` instead");
    }
    if (text.find('\0') != std::string::npos)
      throw NodeError("${" + ref + "} holds a NUL byte, which an environment variable cannot carry");
    auto [it, fresh] = from.emplace(name, ref);
    if (!fresh && vars[name] != text)
      throw NodeError("${" + it->second + "} and ${" + ref + "} both become $" + name +
                      " with different values; rename a node or field so that they differ");
    vars[name] = text;
  }
}

// A temporary directory removed when the object goes away.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "aispflow-in-XXXXXX").string();
    if (!::mkdtemp(pattern.data())) throw NodeError(std::string("cannot create a temporary directory: ") + std::strerror(errno));
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

// An empty directory for AISPFLOW_IN_DIR of nodes without inputs; removed when the process exits.
const TempDir& shared_empty_dir() {
  static const TempDir dir;
  return dir;
}

// How each input is named in the environment: its alias, unless several inputs share the alias (an
// input naming a matrix-expanded node), then the upstream instance's name.
std::vector<std::pair<std::string, const NodeInput*>> input_names(const NodeContext& ctx) {
  std::map<std::string, int> alias_count;
  for (const auto& in : ctx.inputs) ++alias_count[in.alias];
  std::vector<std::pair<std::string, const NodeInput*>> out;
  for (const auto& in : ctx.inputs) out.emplace_back(alias_count[in.alias] > 1 ? in.node : in.alias, &in);
  return out;
}

// One output stream of the command (stdout or stderr), read through a pipe. The file is created only
// when the command writes something: most commands print little, and every file created costs an inode
// in the cache. The tail stays in memory for the artifact's data.
class OutputSink {
 public:
  explicit OutputSink(fs::path file) : file_(std::move(file)) {}
  ~OutputSink() {
    if (fd_ >= 0) ::close(fd_);
  }
  OutputSink(const OutputSink&) = delete;
  OutputSink& operator=(const OutputSink&) = delete;

  void append(const char* data, std::size_t n) {
    if (fd_ < 0) {
      fd_ = ::open(file_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
      if (fd_ < 0) throw NodeError("cannot write " + file_.string() + ": " + std::strerror(errno));
    }
    for (std::size_t done = 0; done < n;) {
      ssize_t w = ::write(fd_, data + done, n - done);
      if (w < 0 && errno == EINTR) continue;
      if (w < 0) throw NodeError("cannot write " + file_.string() + ": " + std::strerror(errno));
      done += static_cast<std::size_t>(w);
    }
    tail_.append(data, n);
    if (tail_.size() > 2 * kTailBytes) tail_.erase(0, tail_.size() - kTailBytes);
  }

  // The last kTailBytes, starting at a line boundary when there is one.
  std::string tail() const {
    if (tail_.size() <= kTailBytes) return tail_;
    std::string text = tail_.substr(tail_.size() - kTailBytes);
    auto newline = text.find('\n');
    if (newline != std::string::npos && newline + 1 < text.size()) text.erase(0, newline + 1);
    return text;
  }

 private:
  fs::path file_;
  int fd_ = -1;
  std::string tail_;
};

// The shell, started through the one child-process facility (pipeline/child_process.hpp: it ends with the
// run, and so does everything it starts), with stdout and stderr read through pipes.
class CommandProcess {
 public:
  // Starts /bin/sh -c `command` in `cwd` with `env`, stdout/stderr into pipes.
  CommandProcess(const std::string& command, const fs::path& cwd, const std::vector<std::string>& env) {
    int out_pipe[2], err_pipe[2];
    if (::pipe2(out_pipe, O_CLOEXEC) != 0) throw NodeError(std::string("cannot create a pipe: ") + std::strerror(errno));
    if (::pipe2(err_pipe, O_CLOEXEC) != 0) {
      ::close(out_pipe[0]);
      ::close(out_pipe[1]);
      throw NodeError(std::string("cannot create a pipe: ") + std::strerror(errno));
    }
    out_fd_ = out_pipe[0];
    err_fd_ = err_pipe[0];
    ::fcntl(out_fd_, F_SETFL, O_NONBLOCK);
    ::fcntl(err_fd_, F_SETFL, O_NONBLOCK);
    ChildSpec spec;
    spec.argv = {"/bin/sh", "-c", command};
    spec.env = env;
    spec.cwd = cwd;
    spec.stdout_fd = out_pipe[1];
    spec.stderr_fd = err_pipe[1];
    spec.stop_grace = kTermGrace;
    try {
      child_.emplace(spec);
    } catch (const std::exception& e) {
      ::close(out_pipe[1]);
      ::close(err_pipe[1]);
      throw NodeError(e.what());
    }
    ::close(out_pipe[1]);
    ::close(err_pipe[1]);
  }
  ~CommandProcess() {
    child_.reset();   // an exception on the way: stop it, and everything it started, before closing the pipes
    for (int fd : {out_fd_, err_fd_})
      if (fd >= 0) ::close(fd);
  }
  CommandProcess(const CommandProcess&) = delete;
  CommandProcess& operator=(const CommandProcess&) = delete;

  // Copies output into the sinks and waits up to `timeout` for the command to end; true once it has
  // (status() is then valid, and everything it wrote has been read).
  bool wait_for(std::chrono::milliseconds timeout, OutputSink& out, OutputSink& err) {
    const auto deadline = Clock::now() + timeout;
    while (true) {
      const int exit_fd = child_->exit_fd();
      pollfd fds[3] = {{out_fd_, POLLIN, 0}, {err_fd_, POLLIN, 0}, {exit_fd, POLLIN, 0}};
      const nfds_t count = exit_fd >= 0 ? 3 : 2;
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
      // Without a pidfd, wake up now and then to ask.
      int wait_ms = static_cast<int>(std::max<long long>(0, left.count()));
      if (exit_fd < 0) wait_ms = std::min(wait_ms, 2);
      int rc = ::poll(fds, count, wait_ms);
      if (rc < 0 && errno != EINTR) throw NodeError(std::string("poll failed: ") + std::strerror(errno));
      drain(out_fd_, out);
      drain(err_fd_, err);
      if (child_->exited()) {
        drain(out_fd_, out);  // what it wrote just before exiting
        drain(err_fd_, err);
        return true;
      }
      if (Clock::now() >= deadline) return false;
    }
  }

  // SIGTERM to the command and everything it started, SIGKILL after kTermGrace; returns once all are gone.
  void terminate_group(OutputSink& out, OutputSink& err) {
    child_->stop();
    while (!wait_for(std::chrono::milliseconds(100), out, err)) {
    }
  }

  int status() const { return child_->status(); }

 private:
  // Reads what is available now (the pipes are non-blocking).
  static void drain(int fd, OutputSink& sink) {
    char buffer[65536];
    while (true) {
      ssize_t n = ::read(fd, buffer, sizeof buffer);
      if (n > 0) {
        sink.append(buffer, static_cast<std::size_t>(n));
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      return;  // 0 = end of file, or EAGAIN = nothing more for now
    }
  }

  std::optional<ChildProcess> child_;
  int out_fd_ = -1, err_fd_ = -1;
};

class CommandNode : public NodeType {
 public:
  std::string name() const override { return "command"; }
  std::string doc() const override {
    return "Runs `run` with /bin/sh -c in a fresh output directory ($AISPFLOW_OUT, also the working directory; "
           "files written there join the artifact). Each input's artifact directory is $AISPFLOW_IN_<NAME> "
           "(NAME: the input's alias, upper-cased, non-alphanumerics as _), and $AISPFLOW_IN_DIR holds one "
           "symlink per input. `files` are content-hashed into the cache key. stdout and stderr are kept as "
           "stdout.txt and stderr.txt; a non-zero exit status fails the node; `timeout_s` kills it.";
  }
  std::vector<ParamSpec> params() const override {
    return {
        {"run", ParamKind::string, nullptr, true,
         "shell command, run with /bin/sh -c; a ${node.field} in it is quoted for where it stands (unquoted, '...', "
         "\"...\", here-document; ${raw:node.field}: as is), and also set as $AISPFLOW_REF_<NODE>_<FIELD>",
         /*shell=*/true},
        // No default: a filled-in default would change every existing command node's cache key.
        {"refs", ParamKind::list, nullptr, false,
         "references to read only from the environment, e.g. [\"${up.stdout_tail}\"] -> $AISPFLOW_REF_UP_STDOUT_TAIL",
         /*shell=*/false, /*references=*/true},
        {"files", ParamKind::path_list, json::array(), false,
         "files the command reads (relative to the workflow file); their content is part of the cache key"},
        {"timeout_s", ParamKind::number, nullptr, false, "kill the command (and its children) after this many seconds"},
        {"env", ParamKind::map, json::object(), false, "extra environment variables {NAME: value}"},
    };
  }
  std::string check_params(const json& params) const override {
    if (params.contains("timeout_s") && params["timeout_s"].is_number() && params["timeout_s"].get<double>() <= 0)
      return "field 'timeout_s': expected a positive number of seconds";
    if (params.contains("env") && params["env"].is_object())
      for (const auto& [k, v] : params["env"].items()) {
        if (v.is_object() || v.is_array() || v.is_null())
          return "field 'env': value of '" + k + "' must be a string, number or bool";
        if (k.empty() || k.find('=') != std::string::npos)
          return "field 'env': '" + k + "' is not a valid variable name";
      }
    return {};
  }

  NodeOutput run(NodeContext& ctx) const override {
    if (ctx.out_dir.empty()) throw NodeError("the command node needs an output directory (not an in-memory run)");
    const fs::path out_dir = fs::absolute(ctx.out_dir);
    std::string command = ctx.params.at("run").get<std::string>();
    std::optional<TempDir> script_dir;
    if (command.size() > kMaxArgBytes) {
      // Linux refuses one argument over 128 KiB (MAX_ARG_STRLEN). A longer command (a large value spliced in)
      // is read from a file instead: `. FILE` parses it exactly as -c would.
      script_dir.emplace();
      const fs::path file = script_dir->path() / "command.sh";
      std::ofstream(file, std::ios::binary) << command;
      if (!std::ifstream(file)) throw NodeError("cannot write " + file.string());
      command = ". " + shell::escape(file.string(), shell::Context::word);
    }

    // Inputs: one variable and one symlink per input.
    // With no inputs, every node shares one empty directory: creating and deleting a directory per node
    // is measurable on a 1,000-node workflow.
    std::optional<TempDir> in_dir;
    if (!ctx.inputs.empty()) in_dir.emplace();
    const fs::path in_path = in_dir ? in_dir->path() : shared_empty_dir().path();
    std::map<std::string, std::string> vars;
    for (const auto& [name, input] : input_names(ctx)) {
      if (!input->artifact) continue;
      fs::path dir = fs::absolute(input->artifact->dir);
      vars["AISPFLOW_IN_" + env_var_suffix(name)] = dir.string();
      std::error_code ec;
      fs::create_directory_symlink(dir, in_path / filesystem_name(name), ec);
    }
    if (ctx.params.contains("env") && ctx.params["env"].is_object())
      for (const auto& [k, v] : ctx.params["env"].items()) vars.emplace(k, scalar_text(v));
    vars["AISPFLOW_OUT"] = out_dir.string();
    vars["AISPFLOW_IN_DIR"] = in_path.string();
    vars["AISPFLOW_NODE"] = ctx.node_name;
    vars["AISPFLOW_WORKFLOW_DIR"] = fs::absolute(ctx.workflow_dir).string();
    add_reference_vars(ctx.refs, ctx.params.at("run").get_ref<const std::string&>(), vars);

    // The inherited environment, minus variables this node sets (and stale AISPFLOW_IN_* from a parent run).
    std::vector<std::string> env;
    for (char** e = environ; e && *e; ++e) {
      std::string entry(*e);
      std::string key = entry.substr(0, entry.find('='));
      if (vars.count(key) || key.rfind("AISPFLOW_IN_", 0) == 0 || key.rfind("AISPFLOW_REF_", 0) == 0) continue;
      env.push_back(std::move(entry));
    }
    for (const auto& [k, v] : vars) env.push_back(k + "=" + v);

    std::optional<double> timeout_s;
    if (ctx.params.contains("timeout_s") && ctx.params["timeout_s"].is_number())
      timeout_s = ctx.params["timeout_s"].get<double>();

    OutputSink out_sink(out_dir / kStdoutFile), err_sink(out_dir / kStderrFile);
    CommandProcess child(command, out_dir, env);
    const auto start = Clock::now();
    enum class Stop { exited, timed_out, cancelled } stop = Stop::exited;
    while (!child.wait_for(std::chrono::milliseconds(50), out_sink, err_sink)) {
      if (ctx.cancelled()) {
        stop = Stop::cancelled;
        break;
      }
      if (timeout_s && std::chrono::duration<double>(Clock::now() - start).count() >= *timeout_s) {
        stop = Stop::timed_out;
        break;
      }
    }
    if (stop != Stop::exited) child.terminate_group(out_sink, err_sink);
    if (stop == Stop::cancelled) throw NodeError("interrupted");
    if (stop == Stop::timed_out) {
      char text[64];
      std::snprintf(text, sizeof text, "timed out after %g s", *timeout_s);
      throw NodeError(text);
    }

    const std::string stderr_tail = valid_utf8(err_sink.tail());
    const int status = child.status();
    if (WIFSIGNALED(status)) {
      std::string msg = "command killed by signal " + std::to_string(WTERMSIG(status));
      std::string line = last_line(stderr_tail);
      throw NodeError(line.empty() ? msg : msg + ": " + line);
    }
    const int exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    if (exit_code != 0) {
      std::string msg = "command exited with status " + std::to_string(exit_code);
      std::string line = last_line(stderr_tail);
      throw NodeError(line.empty() ? msg : msg + ": " + line);
    }

    // What the command produced. No timing here: the data must be identical for identical output, so
    // that an unchanged result keeps downstream nodes cached (run.json has the seconds).
    json files = json::array();
    std::vector<std::string> names;
    std::error_code ec;
    for (fs::recursive_directory_iterator it(out_dir, ec), end; !ec && it != end; it.increment(ec)) {
      if (!it->is_regular_file()) continue;
      std::string rel = it->path().lexically_relative(out_dir).generic_string();
      if (rel != kStdoutFile && rel != kStderrFile) names.push_back(rel);
    }
    std::sort(names.begin(), names.end());
    for (auto& n : names) files.push_back(n);

    NodeOutput out;
    out.data = {{"exit_code", exit_code},
                {"stdout_tail", valid_utf8(out_sink.tail())},
                {"stderr_tail", stderr_tail},
                {"files", files}};
    return out;
  }
};

}  // namespace

std::unique_ptr<NodeType> make_command_node() { return std::make_unique<CommandNode>(); }

}  // namespace aispflow
