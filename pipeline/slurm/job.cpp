#include "pipeline/slurm/job.hpp"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>

#include <oneapi/tbb/task_arena.h>

#include "pipeline/measurement_lock.hpp"
#include "pipeline/slurm/job_record.hpp"

namespace aispflow::slurm {

namespace fs = std::filesystem;

namespace {

std::string this_job_id() {
  const char* array = std::getenv("SLURM_ARRAY_JOB_ID");
  const char* task = std::getenv("SLURM_ARRAY_TASK_ID");
  if (array && task) return std::string(array) + "_" + task;
  const char* id = std::getenv("SLURM_JOB_ID");
  return id ? id : "";
}

std::string host_name() {
  char buffer[256] = {};
  ::gethostname(buffer, sizeof buffer - 1);
  return buffer;
}

// Runs the node; fills `result` (status, key, reason/error).
void run_request(const RemoteRequest& request, Cache& cache, const Registry& registry, EnvironmentSource& env_source,
                 JobResult& result) {
  const NodeType* type = registry.find(request.type);
  if (!type) throw std::runtime_error("unknown node type '" + request.type + "' (is the job's aispflow the driver's?)");
  Environment& env = env_source.get();

  // The machine: requirements are checked here, where the node runs.
  NodeNeeds needs;
  needs.resources = request.resources;
  needs.exclusive = request.exclusive;
  needs.requirements = type->requirements(request.key_inputs.params);
  if (auto why = why_machine_cannot_run(needs, env)) {
    result.status = "skipped";
    result.reason = *why;
    return;
  }

  KeyInputs inputs = request.key_inputs;
  if (request.hardware_bound) {
    inputs.environment = env_source.fingerprint();
    // A node may take its ranks from the allocation (alltoall launch: srun): an allocation of several tasks or
    // nodes is part of where it measured. A one-task job keys exactly as a local run on the same machine.
    const int tasks = std::atoi(std::getenv("SLURM_NTASKS") ? std::getenv("SLURM_NTASKS") : "1");
    const int nodes = std::atoi(std::getenv("SLURM_JOB_NUM_NODES") ? std::getenv("SLURM_JOB_NUM_NODES") : "1");
    if (tasks > 1 || nodes > 1) inputs.environment["slurm_allocation"] = {{"ntasks", tasks}, {"nodes", nodes}};
  }
  const std::string key = cache_key(inputs);
  result.key = key;
  if (!request.forced) {
    if (auto hit = cache.lookup(key)) {
      result.status = "cached";
      result.reason = "cached (same inputs, found by Slurm job " + result.job_id + " on " + result.host + ")";
      return;
    }
  }

  std::vector<Artifact> upstream;
  upstream.reserve(request.inputs.size());
  NodeContext ctx;
  for (const auto& in : request.inputs) {
    auto art = cache.lookup(in.key, [](const std::string& w) { std::fprintf(stderr, "warning: %s\n", w.c_str()); });
    if (!art) throw std::runtime_error("input '" + in.node + "' (cache entry " + in.key + ") is not in the cache");
    upstream.push_back(std::move(*art));
  }
  for (std::size_t k = 0; k < request.inputs.size(); ++k)
    ctx.inputs.push_back(NodeInput{request.inputs[k].alias, request.inputs[k].node, &upstream[k]});
  const fs::path scratch = cache.make_scratch_dir();
  const fs::path out_dir = scratch / "out";
  fs::create_directories(out_dir);
  ctx.node_name = request.node;
  ctx.params = request.key_inputs.params;
  ctx.out_dir = out_dir;
  ctx.workflow_dir = request.workflow_dir;
  ctx.env = &env;
  ctx.log = [](const std::string& m) {
    std::fprintf(stderr, "%s\n", m.c_str());
    std::fflush(stderr);
  };
  std::optional<MeasurementLock> measuring;
  if (request.exclusive) {
    MeasurementLockOptions lock;
    lock.workflow = request.workflow;
    lock.node = request.node;
    lock.log = ctx.log;
    measuring.emplace(env.measured_devices(), lock);
  }
  result.started_at = std::chrono::system_clock::now();
  NodeOutput output = oneapi::tbb::this_task_arena::isolate([&] { return type->run(ctx); });
  result.finished_at = std::chrono::system_clock::now();
  measuring.reset();
  cache.store(key, inputs, output.data, output.verdict, out_dir, request.forced);
  std::error_code ec;
  fs::remove_all(scratch, ec);
  result.status = "ran";
}

}  // namespace

int run_node_job(const fs::path& request_file, const fs::path& cache_root, const Registry& registry,
                 EnvironmentSource& env) {
  RemoteRequest request;
  try {
    std::ifstream in(request_file);
    if (!in) throw std::runtime_error("cannot open it");
    request = request_from_json(json::parse(in));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "aispflow run-node: cannot read the request %s: %s\n", request_file.string().c_str(), e.what());
    return 2;
  }
  JobResult result;
  result.job_id = this_job_id();
  result.host = host_name();
  result.started_at = result.finished_at = std::chrono::system_clock::now();
  std::fprintf(stderr, "aispflow run-node: %s (%s) on %s, Slurm job %s\n", request.node.c_str(), request.type.c_str(),
               result.host.c_str(), result.job_id.c_str());
  try {
    Cache cache(cache_root);
    run_request(request, cache, registry, env, result);
  } catch (const std::exception& e) {
    result.status = "failed";
    result.error = e.what();
    result.finished_at = std::chrono::system_clock::now();
  }
  if (result.status != "ran") result.finished_at = std::chrono::system_clock::now();
  std::fprintf(stderr, "aispflow run-node: %s %s%s\n", request.node.c_str(), result.status.c_str(),
               result.error.empty() ? "" : (": " + result.error).c_str());
  atomic_write_file(request_file.parent_path() / "result.json", result.to_json().dump() + "\n");
  return result.status == "failed" ? 1 : 0;
}

}  // namespace aispflow::slurm
