# SPDX-License-Identifier: MIT
# fuzz.cmake - fuzz targets: corpus-replay tests, or libFuzzer builds (EZFS_FUZZ).
#
# Default build: each target is linked with tests/fuzz/replay.c and
# ezfs_static, and ctest "fuzz_<t>" replays tests/fuzz/corpus/<t>/.
# -DEZFS_FUZZ=ON with clang: the library is built once more with coverage
# instrumentation and ASan/UBSan (ezfs_fuzzlib) and each target is a
# libFuzzer binary; the ctest then runs the corpus once (-runs=0).
# tests/fuzz/run.sh drives the fuzzers for a set time.
set(EZFS_FUZZ_TARGETS super dir xattr zmap image codec tar encode android verity
  cindex)
set(_fz ${CMAKE_SOURCE_DIR}/tests/fuzz)
# the chunk index parser is libezfs-remote's: its file alone (libc only)
set(_fz_extra_cindex ${CMAKE_SOURCE_DIR}/lib/remote/cindex.c)

if(EZFS_FUZZ AND NOT CMAKE_C_COMPILER_ID MATCHES "Clang")
  message(WARNING "EZFS_FUZZ needs clang (-DCMAKE_C_COMPILER=clang); building replay drivers")
endif()

if(EZFS_FUZZ AND CMAKE_C_COMPILER_ID MATCHES "Clang")
  set(_fz_san -fsanitize=address,undefined -fno-sanitize-recover=undefined
              -fno-omit-frame-pointer)
  # The library sources again, instrumented, with the same includes,
  # definitions and dependencies as ezfs_obj.
  add_library(ezfs_fuzzlib STATIC ${EZFS_LIB_SRC})
  add_dependencies(ezfs_fuzzlib ezfs_gen)
  target_include_directories(ezfs_fuzzlib PUBLIC
    $<TARGET_PROPERTY:ezfs_obj,INCLUDE_DIRECTORIES>)
  target_compile_definitions(ezfs_fuzzlib PUBLIC
    $<TARGET_PROPERTY:ezfs_obj,COMPILE_DEFINITIONS>)
  target_link_libraries(ezfs_fuzzlib PUBLIC
    $<TARGET_PROPERTY:ezfs_obj,INTERFACE_LINK_LIBRARIES>)
  target_compile_options(ezfs_fuzzlib PRIVATE -fsanitize=fuzzer-no-link ${_fz_san})
  foreach(t ${EZFS_FUZZ_TARGETS})
    add_executable(fuzz_${t} ${_fz}/fuzz_${t}.c ${_fz_extra_${t}})
    target_compile_options(fuzz_${t} PRIVATE -fsanitize=fuzzer ${_fz_san})
    target_link_options(fuzz_${t} PRIVATE -fsanitize=fuzzer ${_fz_san})
    target_link_libraries(fuzz_${t} PRIVATE ezfs_fuzzlib)
    set(_fz_args -runs=0 -timeout=30 -artifact_prefix=${CMAKE_BINARY_DIR}/tests/fuzz/)
    set_target_properties(fuzz_${t} PROPERTIES
      RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests/fuzz)
  endforeach()
else()
  foreach(t ${EZFS_FUZZ_TARGETS})
    add_executable(fuzz_${t} ${_fz}/fuzz_${t}.c ${_fz}/replay.c
                   ${_fz_extra_${t}})
    target_link_libraries(fuzz_${t} PRIVATE ezfs_static)
    set(_fz_args)
    set_target_properties(fuzz_${t} PROPERTIES
      RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests/fuzz)
  endforeach()
endif()

foreach(t ${EZFS_FUZZ_TARGETS})
  target_include_directories(fuzz_${t} PRIVATE ${CMAKE_SOURCE_DIR}/lib
                             ${CMAKE_SOURCE_DIR}/include)
  add_test(NAME fuzz.${t} COMMAND fuzz_${t} ${_fz_args} ${_fz}/corpus/${t})
  set_tests_properties(fuzz.${t} PROPERTIES LABELS "fuzz" TIMEOUT 600
                       ENVIRONMENT "${EZFS_TEST_ENV}")
endforeach()

# ninja fuzz-run: run every libFuzzer target for FUZZ_SECONDS (default 60).
add_custom_target(fuzz-run
  COMMAND ${CMAKE_COMMAND} -E env FUZZ_BUILD=${CMAKE_BINARY_DIR}
          sh ${_fz}/run.sh
  USES_TERMINAL)
foreach(t ${EZFS_FUZZ_TARGETS})
  add_dependencies(fuzz-run fuzz_${t})
endforeach()

# The corrupt-image test lives in tests/corrupt/ (include-guarded).
include(${CMAKE_SOURCE_DIR}/tests/corrupt/corrupt.cmake)
