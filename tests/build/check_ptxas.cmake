# Our Hopper GEMM instances as ptxas sees them: no register spills and no "wgmma.mma_async instructions are
# serialized" advisory (C75xx). ptxas serializes every wgmma of a kernel when it cannot prove the accumulator
# registers safe (a wait chosen by a branch, a read of an in-flight accumulator): the kernel still verifies and
# runs 10-25 % slower, which is how three fp8 experiments were lost (bench/results/h100/ours_probe/NOTES.md
# steps 13-17). This keeps such a kernel from being built unnoticed.
#   cmake -DNVCC=... -DFLAGS="a;b" -DSOURCES="x.cu;y.cu" -P check_ptxas.cmake   compile each, check the report
#   cmake -DLOG=file -P check_ptxas.cmake                                       check a saved report (tests)
function(check_report text what)
  string(REGEX MATCHALL "[^\n]*C75[0-9][0-9][^\n]*" advisories "${text}")
  string(REGEX MATCHALL "[1-9][0-9]* bytes spill (stores|loads)" spills "${text}")
  string(REGEX MATCHALL "[1-9][0-9]* bytes stack frame" stacks "${text}")
  if(advisories OR spills OR stacks)
    list(JOIN advisories "\n" a)
    # NOTICE prints as is; FATAL_ERROR re-wraps its text to the width of the path, so the tests match this line.
    message(NOTICE "ptxas reports a serialized wgmma or a stack/spill in ${what}:\n${a}\n${spills} ${stacks}")
    message(FATAL_ERROR "${what}: see above")
  endif()
  string(REGEX MATCHALL "Compiling entry function" entries "${text}")
  list(LENGTH entries n)
  if(n EQUAL 0)
    message(FATAL_ERROR "${what}: no ptxas report (was -Xptxas -v passed?)")
  endif()
  message(STATUS "${what}: ${n} kernels, no serialized wgmma, no stack")
endfunction()

if(DEFINED LOG)
  file(READ "${LOG}" text)
  check_report("${text}" "${LOG}")
  return()
endif()
foreach(src IN LISTS SOURCES)
  execute_process(COMMAND ${NVCC} ${FLAGS} -Xptxas -v -x cu -c "${src}" -o /dev/null
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${src}: nvcc failed (${rc}):\n${err}")
  endif()
  get_filename_component(name "${src}" NAME)
  check_report("${out}${err}" "${name}")
endforeach()
