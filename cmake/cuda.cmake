# CUDA toolkit and NCCL, each AUTO/ON/OFF. enable_language() must run from the
# top-level directory scope, which is why this file is include()d there.
set(GPUSCALE_HAVE_CUDA OFF)
set(GPUSCALE_HAVE_NCCL OFF)

if(NOT GPUSCALE_CUDA STREQUAL "OFF")
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      set(CMAKE_CUDA_ARCHITECTURES 80 90)   # "native" fails at generate time without a GPU
    endif()
    set(CMAKE_CUDA_RUNTIME_LIBRARY Shared)  # otherwise cudart_static is linked beside CUDA::cudart
    enable_language(CUDA)
    set(CMAKE_CUDA_STANDARD 17)
    set(CMAKE_CUDA_STANDARD_REQUIRED ON)
    find_package(CUDAToolkit REQUIRED)      # CUDA::cudart, CUDA::cublas; never link CUDA::cuda_driver
    set(GPUSCALE_HAVE_CUDA ON)
  elseif(GPUSCALE_CUDA STREQUAL "ON")
    message(FATAL_ERROR "GPUSCALE_CUDA=ON but no CUDA compiler was found (is nvcc on PATH?)")
  endif()
endif()

if(GPUSCALE_HAVE_CUDA AND NOT GPUSCALE_NCCL STREQUAL "OFF")
  find_path(NCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS} ENV NCCL_HOME PATH_SUFFIXES include)
  find_library(NCCL_LIBRARY nccl HINTS ${CUDAToolkit_LIBRARY_DIR} ENV NCCL_HOME PATH_SUFFIXES lib lib64)
  if(NCCL_INCLUDE_DIR AND NCCL_LIBRARY)
    add_library(NCCL::NCCL UNKNOWN IMPORTED)  # NCCL ships no CMake config or .pc file
    set_target_properties(NCCL::NCCL PROPERTIES IMPORTED_LOCATION "${NCCL_LIBRARY}"
                          INTERFACE_INCLUDE_DIRECTORIES "${NCCL_INCLUDE_DIR}")
    set(GPUSCALE_HAVE_NCCL ON)
  endif()
endif()
if(GPUSCALE_NCCL STREQUAL "ON" AND NOT GPUSCALE_HAVE_NCCL)
  message(FATAL_ERROR "GPUSCALE_NCCL=ON but NCCL (and CUDA) were not found; set NCCL_HOME")
endif()
