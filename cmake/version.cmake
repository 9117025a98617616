# softwareVersion: the project version plus the git commit it was built from ("0.1.0+g<commit>[-dirty]"), written
# into the generated gpuscale_version.hpp. Run at configure time (included) and again at every build (cmake -P, the
# gpuscale_version target): a build after a pull or an edit without configuring again would otherwise stamp the
# commit of the last configure into every result file. The header is rewritten only when its text changes, so an
# unchanged version recompiles nothing.
#
# Included: uses PROJECT_VERSION and PROJECT_SOURCE_DIR, sets GPUSCALE_VERSION_STRING.
# As a script: -DGPUSCALE_PROJECT_VERSION= -DGPUSCALE_SOURCE_DIR= -DGPUSCALE_VERSION_IN= -DGPUSCALE_VERSION_OUT=
# -DGPUSCALE_MPIEXEC= write the header.
if(NOT DEFINED GPUSCALE_PROJECT_VERSION)
  set(GPUSCALE_PROJECT_VERSION "${PROJECT_VERSION}")
  set(GPUSCALE_SOURCE_DIR "${PROJECT_SOURCE_DIR}")
endif()
set(GPUSCALE_VERSION_STRING "${GPUSCALE_PROJECT_VERSION}")
find_package(Git QUIET)
if(GIT_FOUND)
  execute_process(COMMAND ${GIT_EXECUTABLE} describe --always --dirty --abbrev=12
                  WORKING_DIRECTORY ${GPUSCALE_SOURCE_DIR}
                  OUTPUT_VARIABLE _gpuscale_git OUTPUT_STRIP_TRAILING_WHITESPACE
                  ERROR_QUIET RESULT_VARIABLE _gpuscale_git_rc)
  if(_gpuscale_git_rc EQUAL 0 AND _gpuscale_git)
    set(GPUSCALE_VERSION_STRING "${GPUSCALE_PROJECT_VERSION}+g${_gpuscale_git}")
  endif()
endif()
if(DEFINED GPUSCALE_VERSION_OUT)
  configure_file("${GPUSCALE_VERSION_IN}" "${GPUSCALE_VERSION_OUT}" @ONLY)
endif()
