# Fuzzing: libFuzzer harnesses of the code that reads input (tests/fuzz/README.md).
#
#   ws_add_fuzzer(NAME SOURCES src... [LIBS lib...] [CORPUS dir] [MAX_LEN bytes])
#
# One line per harness.  A harness defines LLVMFuzzerTestOneInput(); its seed corpus is the folder
# CORPUS (default: corpus/NAME beside the CMakeLists.txt that calls this), committed with it.
#  - In the normal and ASan+UBSan builds the harness is linked with replay.c, a main that runs
#    every file of the corpus once, and registered with ctest as NAME_replay: the corpus is a
#    regression test.  (Not in the TSan build: the harnesses are single-threaded.)
#  - In the fuzzing build (-DWSTRACE_SANITIZE=fuzzer, clang; scripts/fuzz.sh makes it) the harness
#    is built with -fsanitize=fuzzer as fuzz/NAME, listed in fuzz/fuzzers.txt (name, corpus,
#    largest input) for scripts/fuzz.sh, and part of the target fuzzers.
set(WS_FUZZ_DIR ${CMAKE_CURRENT_LIST_DIR})
set(WS_FUZZ_MANIFEST ${CMAKE_BINARY_DIR}/fuzz/fuzzers.txt)
file(WRITE ${WS_FUZZ_MANIFEST} "")
if(WSTRACE_SANITIZE STREQUAL "fuzzer" AND NOT TARGET fuzzers)
  add_custom_target(fuzzers)
endif()

function(ws_add_fuzzer name)
  cmake_parse_arguments(F "" "CORPUS;MAX_LEN" "SOURCES;LIBS" ${ARGN})
  if(NOT F_CORPUS)
    set(F_CORPUS ${CMAKE_CURRENT_SOURCE_DIR}/corpus/${name})
  endif()
  if(NOT F_MAX_LEN)
    set(F_MAX_LEN 4096)
  endif()
  if(WSTRACE_SANITIZE STREQUAL "fuzzer")
    add_executable(${name} ${F_SOURCES})
    target_link_libraries(${name} PRIVATE ${F_LIBS})
    target_link_options(${name} PRIVATE -fsanitize=fuzzer)
    target_include_directories(${name} PRIVATE ${WS_FUZZ_DIR})
    set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/fuzz)
    add_dependencies(fuzzers ${name})
    file(APPEND ${WS_FUZZ_MANIFEST} "${name} ${F_CORPUS} ${F_MAX_LEN}\n")
  elseif(NOT WSTRACE_SANITIZE STREQUAL "thread")
    add_executable(${name}_replay ${F_SOURCES} ${WS_FUZZ_DIR}/replay.c)
    target_link_libraries(${name}_replay PRIVATE ${F_LIBS})
    target_include_directories(${name}_replay PRIVATE ${WS_FUZZ_DIR})
    set_target_properties(${name}_replay PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
    add_test(NAME ${name}_replay COMMAND ${name}_replay ${F_CORPUS})
  endif()
endfunction()

# The form the importers' harnesses are declared in (tests/fuzz/pickle, tests/fuzz/nsys):
# ws_add_fuzz_harness(NAME SOURCE CORPUS) is ws_add_fuzzer(fuzz_NAME ...) linked with the analyzer,
# with room for inputs as large as whole database files.
function(ws_add_fuzz_harness name source corpus)
  ws_add_fuzzer(fuzz_${name} SOURCES ${source} LIBS wsanalyzer CORPUS ${corpus} MAX_LEN 262144)
endfunction()
