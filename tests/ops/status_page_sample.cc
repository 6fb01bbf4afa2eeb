// Writes the sample status page (tests/ops/sample_status.h) to a file, for the headless Chromium
// check (status_page_chromium_test.sh) and for looking at the page while changing it.
#include <cstdio>
#include <fstream>

#include "ops/status_page.h"
#include "tests/ops/sample_status.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUT.html\n", argv[0]);
    return 2;
  }
  auto config = tidepool::ops::testing::SampleConfig();
  std::string html = tidepool::ops::RenderStatusPage(tidepool::ops::testing::SampleStatus(),
                                                     tidepool::ops::testing::SampleExtras(&config));
  std::ofstream out(argv[1], std::ios::binary);
  out << html;
  out.close();
  if (!out) {
    std::fprintf(stderr, "cannot write %s\n", argv[1]);
    return 1;
  }
  return 0;
}
