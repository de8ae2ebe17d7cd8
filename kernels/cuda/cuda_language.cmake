# The CUDA language for stratasim (issue 4): included from the root CMakeLists.txt because
# CMake wants enable_language() in the highest directory common to every target that compiles
# or links CUDA code (the test binary and the `stratasim` command link kernels/cuda).
#   STRATASIM_WITH_CUDA: ON by default when check_language() finds nvcc. OFF (or no nvcc) builds
#   kernels/cuda/cuda_unavailable.cpp instead, whose open_device() says so at run time.
include(CheckLanguage)
if(NOT DEFINED CMAKE_CUDA_HOST_COMPILER AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  # nvcc must use the same g++ as the C++ code (one standard library ABI).
  set(CMAKE_CUDA_HOST_COMPILER "${CMAKE_CXX_COMPILER}" CACHE FILEPATH "host compiler of nvcc")
endif()
check_language(CUDA)
if(CMAKE_CUDA_COMPILER)
  set(_stratasim_cuda_default ON)
else()
  set(_stratasim_cuda_default OFF)
endif()
option(STRATASIM_WITH_CUDA "Build the CUDA kernels (kernels/cuda) with nvcc" ${_stratasim_cuda_default})

if(STRATASIM_WITH_CUDA)
  if(NOT CMAKE_CUDA_COMPILER)
    message(FATAL_ERROR "STRATASIM_WITH_CUDA=ON but no CUDA compiler was found: put nvcc in PATH, "
                        "set CMAKE_CUDA_COMPILER, or configure with -DSTRATASIM_WITH_CUDA=OFF")
  endif()
  # No GPU at configure time, so no "native": Ampere (A100) and Hopper (H100/H200) SASS; newer
  # GPUs JIT-compile the sm_90 PTX that CMake embeds for the last listed architecture.
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
    set(CMAKE_CUDA_ARCHITECTURES 80 90 CACHE STRING "CUDA architectures of kernels/cuda")
  endif()
  enable_language(CUDA)
  # CMake 3.25 knows nvcc's flags up to C++17 only; nvcc >= 12 accepts -std=c++20. Without this,
  # CUDA sources inherit CMAKE_CXX_STANDARD 20 and CMake stops at "requires the language
  # dialect CUDA20".
  if(NOT DEFINED CMAKE_CUDA20_STANDARD_COMPILE_OPTION
     AND CMAKE_CUDA_COMPILER_VERSION VERSION_GREATER_EQUAL 12.0)
    set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
    set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
  endif()
  find_package(CUDAToolkit REQUIRED)
  if(NOT TARGET CUDA::cublas)
    message(FATAL_ERROR "the CUDA toolkit at ${CUDAToolkit_LIBRARY_DIR} has no cuBLAS (the GEMM "
                        "peak microbenchmark needs its headers; the library is dlopen()ed at run time): install it or use -DSTRATASIM_WITH_CUDA=OFF")
  endif()
  message(STATUS "stratasim: CUDA kernels ON (nvcc ${CMAKE_CUDA_COMPILER_VERSION}, "
                 "architectures ${CMAKE_CUDA_ARCHITECTURES})")
else()
  message(STATUS "stratasim: CUDA kernels OFF (STRATASIM_WITH_CUDA=OFF or no nvcc found)")
endif()
