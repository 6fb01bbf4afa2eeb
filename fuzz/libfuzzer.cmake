# Initial cache for the coverage-guided build (`cmake -C fuzz/libfuzzer.cmake`; fuzz/run.sh does
# this for `make fuzz`). clang 16 from Debian 12 with libFuzzer, AddressSanitizer and
# UndefinedBehaviorSanitizer over the whole project (only the fuzz targets and the libraries they
# use are built). See fuzz/README.md for why clang 16 and why the __cpp_concepts define.
set(CMAKE_CXX_COMPILER clang++-16 CACHE STRING "")
set(CMAKE_BUILD_TYPE RelWithDebInfo CACHE STRING "")
set(TIDEPOOL_LIBFUZZER ON CACHE BOOL "")
# libstdc++ 12 declares std::expected only when __cpp_concepts >= 202002L; clang 16 implements
# what <expected> needs (P0848, conditionally trivial special members) but still reports 201907L.
set(CMAKE_CXX_FLAGS
    "-D__cpp_concepts=202002L -Wno-macro-redefined -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer -D_GLIBCXX_ASSERTIONS"
    CACHE STRING "")
