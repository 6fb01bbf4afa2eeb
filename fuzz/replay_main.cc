// A main() for the fuzz targets built with the normal compiler: runs LLVMFuzzerTestOneInput once
// over every file given, or found (recursively) under a directory given, in sorted order. This is
// how ctest replays fuzz/corpus/<target>/ as a regression test and how a reproducer is re-run
// without libFuzzer: `build/fuzz/quantity_fuzz crash-1234`. A crash aborts with the input's name
// printed first; a missing path or an empty directory is an error (a corpus that silently went
// missing must not pass). Exit code 0 when every input ran.
//
// As libFuzzer would, it bounds each input: more than kInputSeconds is reported as a hang (abort),
// and, unless built with a sanitizer (which reserves terabytes of address space), the address
// space is capped at kMemoryLimitBytes so a memory blowup fails fast with std::bad_alloc instead of
// taking the machine's memory with it.
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <system_error>
#include <vector>

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define TIDEPOOL_FUZZ_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || \
    __has_feature(memory_sanitizer)
#define TIDEPOOL_FUZZ_SANITIZED 1
#endif
#endif

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

namespace fs = std::filesystem;

constexpr unsigned kInputSeconds = 60;
constexpr rlim_t kMemoryLimitBytes = rlim_t{2} << 30;

char current_input[4096];

void OnAlarm(int) {
  const char prefix[] = "fuzz replay: hang: more than 60 s on ";
  (void)!write(STDERR_FILENO, prefix, sizeof prefix - 1);
  (void)!write(STDERR_FILENO, current_input, strlen(current_input));
  (void)!write(STDERR_FILENO, "\n", 1);
  abort();
}

bool Collect(const fs::path& path, std::vector<fs::path>& out) {
  std::error_code ec;
  if (fs::is_regular_file(path, ec)) {
    out.push_back(path);
    return true;
  }
  if (!fs::is_directory(path, ec)) {
    std::fprintf(stderr, "fuzz replay: %s: no such file or directory\n", path.c_str());
    return false;
  }
  size_t before = out.size();
  for (fs::recursive_directory_iterator it(path, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->is_regular_file(ec)) out.push_back(it->path());
  }
  if (ec) {
    std::fprintf(stderr, "fuzz replay: %s: %s\n", path.c_str(), ec.message().c_str());
    return false;
  }
  if (out.size() == before) {
    std::fprintf(stderr, "fuzz replay: %s: no inputs in the directory\n", path.c_str());
    return false;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s FILE_OR_DIR...\n  runs the fuzz target once on each input\n",
                 argv[0]);
    return 2;
  }
  std::vector<fs::path> inputs;
  bool ok = true;
  for (int i = 1; i < argc; ++i) ok = Collect(argv[i], inputs) && ok;
  if (!ok) return 1;
  std::sort(inputs.begin(), inputs.end());

#ifndef TIDEPOOL_FUZZ_SANITIZED
  rlimit limit{kMemoryLimitBytes, kMemoryLimitBytes};
  rlimit old{};
  if (getrlimit(RLIMIT_AS, &old) == 0 &&
      (old.rlim_max == RLIM_INFINITY || old.rlim_max > limit.rlim_max)) {
    setrlimit(RLIMIT_AS, &limit);
  }
#endif
  signal(SIGALRM, OnAlarm);

  double slowest_ms = 0;
  std::string slowest;
  for (const auto& path : inputs) {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
      std::fprintf(stderr, "fuzz replay: %s: cannot read\n", path.c_str());
      return 1;
    }
    std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                               std::istreambuf_iterator<char>());
    // Named before running, so a crash's report follows the name of the input that caused it.
    std::fprintf(stderr, "fuzz replay: %s\n", path.c_str());
    std::snprintf(current_input, sizeof current_input, "%s", path.c_str());
    alarm(kInputSeconds);
    auto start = std::chrono::steady_clock::now();
    LLVMFuzzerTestOneInput(bytes.data(), bytes.size());
    alarm(0);
    double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    if (ms > slowest_ms) {
      slowest_ms = ms;
      slowest = path.string();
    }
  }
  std::printf("fuzz replay: %zu inputs ran; slowest %.1f ms (%s)\n", inputs.size(), slowest_ms,
              slowest.c_str());
  return 0;
}
