# softwareVersion: the project version plus the git commit it was built from.
set(GPUSCALE_VERSION_STRING "${PROJECT_VERSION}")
find_package(Git QUIET)
if(GIT_FOUND)
  execute_process(COMMAND ${GIT_EXECUTABLE} describe --always --dirty --abbrev=12
                  WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}
                  OUTPUT_VARIABLE _gpuscale_git OUTPUT_STRIP_TRAILING_WHITESPACE
                  ERROR_QUIET RESULT_VARIABLE _gpuscale_git_rc)
  if(_gpuscale_git_rc EQUAL 0 AND _gpuscale_git)
    set(GPUSCALE_VERSION_STRING "${PROJECT_VERSION}+g${_gpuscale_git}")
  endif()
endif()
