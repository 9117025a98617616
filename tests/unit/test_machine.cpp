// What gpuscale says about where it starts: whether a launcher started it, why no GPU is usable, and a note that
// every rank shares said once.
#include <catch2/catch.hpp>

#include <dlfcn.h>

#include <map>

#include "app/launcher.hpp"
#include "app/rank_table.hpp"
#include "device/backend.hpp"
#include "device/cuda_status.hpp"

using namespace gpuscale;

TEST_CASE("a launcher is told by the variables it sets in every process it starts", "[launcher]") {
  const auto with = [](std::map<std::string, std::string> vars) {
    return started_by_launcher([vars](const char* name) -> const char* {
      const auto it = vars.find(name);
      return it == vars.end() ? nullptr : it->second.c_str();
    });
  };
  CHECK_FALSE(with({}));
  CHECK_FALSE(with({{"OMPI_ALLOW_RUN_AS_ROOT", "1"}, {"SLURM_JOB_ID", "7"}, {"OMPI_COMM_WORLD_SIZE", ""}}));
  CHECK(with({{"OMPI_COMM_WORLD_SIZE", "1"}}));  // mpirun -np 1: one rank, as asked
  CHECK(with({{"PMIX_RANK", "0"}}));             // srun --mpi=pmix, Open MPI 5
  CHECK(with({{"PMI_SIZE", "1"}}));              // MPICH's mpiexec
  CHECK(with({{"PMI_RANK", "0"}}));              // Intel MPI
  CHECK(with({{"SLURM_STEP_ID", "0"}}));         // srun
  CHECK(singleton_note("gpuscale run c.toml") ==
        "note: 1 rank (no mpirun or srun): serial and parallel are the same; for speedups run mpirun -np N "
        "gpuscale run c.toml");
}

TEST_CASE("without a usable GPU the probe says why in words true of this machine and build", "[backend]") {
  const CudaStatus s = probe_cuda();
  if (s.usable) {  // a GPU machine: the other branch
    CHECK(s.device_count > 0);
    CHECK(s.reason.empty());
    return;
  }
#ifndef GPUSCALE_HAVE_CUDA
  CHECK_FALSE(s.built);
  CHECK(s.reason == "this gpuscale was built without CUDA (no nvcc at configure time, or GPUSCALE_CUDA=OFF)");
#else
  CHECK(s.built);
  void* driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (!driver) {
    CHECK(s.reason == "no NVIDIA driver found (libcuda.so.1 not loadable)");
  } else {  // a driver is there (older than the runtime, or no device): the runtime's own error, never "no driver"
    dlclose(driver);
    CHECK(s.reason.find("no NVIDIA driver") == std::string::npos);
    CHECK(s.reason.find("error ") != std::string::npos);
  }
#endif
  CHECK(choose_backend("auto", s).reason == "no usable CUDA device: " + s.reason + "; running on the CPU backend");
}

TEST_CASE("a note every rank shares is said once, and notes that differ name their ranks", "[ranks]") {
  CHECK(format_rank_notes("backend", {"cpu: no driver", "cpu: no driver", "cpu: no driver"}) ==
        "  backend: cpu: no driver\n");
  CHECK(format_rank_notes("backend", {"4 GPUs", "4 GPUs", "4 GPUs", "4 GPUs", "no driver", "4 GPUs", "no driver"}) ==
        "  backend of ranks 0-3, 5: 4 GPUs\n  backend of ranks 4, 6: no driver\n");
  CHECK(format_rank_notes("backend", {"a", "b"}) == "  backend of rank 0: a\n  backend of rank 1: b\n");
}
