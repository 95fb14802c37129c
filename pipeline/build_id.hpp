#pragma once
// Which source this binary was built from: the git commit, with "-dirty.<digest>" when the checkout had
// uncommitted changes ("unknown" outside git). Regenerated at every build (cmake/build_id.cmake), so it
// cannot go stale the way a configure-time value does. It names the build in run.json and --version, and
// is part of the environment fingerprint: measurements from another build re-run.
namespace aispflow {
const char* build_id();
}
