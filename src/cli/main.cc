// tidepool command-line entry point: run | plan | explain | simulate | version.
#include <cstdio>

int main() { std::puts("tidepool " TIDEPOOL_VERSION); return 0; }
