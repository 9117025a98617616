# `cmake --install build --prefix P`: gpuscale in P/bin; the configs, job scripts, Python tools and docs in
# P/share/gpuscale (jobs/, tools/ keep their checkout layout, so a script finds jobs/lib.sh as it does in a
# checkout); P/bin/gpuscale-plot, a relative link to P/share/gpuscale/tools/gpuscale-plot, which imports
# gpuscale_data.py from beside its real path. Tests and benchmarks are not installed.
include(GNUInstallDirs)
set(GPUSCALE_INSTALL_DATADIR ${CMAKE_INSTALL_DATADIR}/gpuscale)

# Libraries found outside the system's folders (e.g. a CUDA toolkit in /opt) stay found from the prefix.
set_target_properties(gpuscale PROPERTIES INSTALL_RPATH_USE_LINK_PATH TRUE)
install(TARGETS gpuscale RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

install(DIRECTORY configs docs DESTINATION ${GPUSCALE_INSTALL_DATADIR})
install(FILES jobs/README.md jobs/lib.sh DESTINATION ${GPUSCALE_INSTALL_DATADIR}/jobs)
install(PROGRAMS jobs/local/mpirun.sh DESTINATION ${GPUSCALE_INSTALL_DATADIR}/jobs/local)
install(PROGRAMS jobs/slurm/single-node.sbatch jobs/slurm/multi-node.sbatch jobs/slurm/study.sh jobs/slurm/accept.sh
        DESTINATION ${GPUSCALE_INSTALL_DATADIR}/jobs/slurm)
install(FILES jobs/slurm/site.sh.example DESTINATION ${GPUSCALE_INSTALL_DATADIR}/jobs/slurm)
install(FILES tools/README.md tools/gpuscale_data.py DESTINATION ${GPUSCALE_INSTALL_DATADIR}/tools)
install(PROGRAMS tools/gpuscale-plot DESTINATION ${GPUSCALE_INSTALL_DATADIR}/tools)

# The link in bin/ and jobs/installed.sh (where the installed binary lies, for jobs/lib.sh), both relative, made
# at install time: `--prefix` may differ from the configured prefix.
configure_file(cmake/install_links.cmake.in ${PROJECT_BINARY_DIR}/install_links.cmake @ONLY)
install(SCRIPT ${PROJECT_BINARY_DIR}/install_links.cmake)
